"""PLAN.md's words: the bundle's own fixed sentences, the plan's sentences shown in the bundle's language, money,
GiB, billing and memory-component names.

PLAN.md prints plan and estimate values through :func:`~gpuplan.render.bundle.safe.md`; only the
bundle's own fixed sentences are written as they are. Those sentences are msgids of the gettext
catalog (``locale/zh_CN/LC_MESSAGES/gpuplan.po``): templates with named placeholders, translated
with :func:`tr` and then formatted with escaped values.
"""

from __future__ import annotations

import math
from typing import Any

from gpuplan import i18n
from gpuplan.i18n import N_
from gpuplan.plan.money.cost_breakdown import BILLING_NAMES as BILLING
from gpuplan.render.bundle.safe import Safe, md
from gpuplan.units import GIB

# Memory components (estimate keys) as PLAN.md and memory.svg name them.
COMPONENTS = {"weights": N_("weights"), "gradients": N_("gradients"), "optimizer": N_("optimizer"),
              "activations": N_("activations"), "kv_cache": N_("kv_cache"), "adapters": N_("adapters"),
              "logits": N_("logits"), "overhead": N_("overhead")}


def tr(text: str, lang: str) -> Safe:
    """The bundle's own fixed text (trusted, not escaped), translated."""
    return Safe(i18n.tr(text, lang))


def say(text: Any, lang: str) -> Safe:
    """A sentence the plan or estimate wrote (in English: plan.json keeps it so), shown in ``lang`` and escaped."""
    return md(i18n.localize(str(text), lang))


def money_text(value: Any, currency: str) -> str | None:
    if value is None or not isinstance(value, (int, float)) or not math.isfinite(value):
        return None
    return f"{value:,.2f} {currency}"


def gib_text(value: Any) -> str:
    return f"{float(value) / GIB:.2f}" if isinstance(value, (int, float)) else "-"


def billing_label(code: str, lang: str) -> str:
    """The billing code in English (payg, spot, subscription); its name in Chinese."""
    return f"{tr(BILLING[code], lang)}" if lang != "en" and code in BILLING else code


def component_name(key: str, lang: str) -> Safe:
    return tr(COMPONENTS[key], lang) if key in COMPONENTS else Safe(md(key))
