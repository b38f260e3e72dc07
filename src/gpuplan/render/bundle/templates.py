"""The Jinja2 environment of the bundle: strict undefined, the escaping filters and the guard."""

from __future__ import annotations

import functools
from typing import Any

import jinja2

from gpuplan import i18n
from gpuplan.render.bundle.safe import Safe, guard, hcl, inert, md, sh


class Text(Safe):
    """A message of the catalog, translated: trusted text whose ``format`` (with inert values) stays trusted.
    Chinese messages in shell scripts keep the English one's ``$VARIABLES`` and add no quote, backtick or
    backslash (tests/i18n/test_bundle_zh.py checks it)."""

    def format(self, *args: Any, **kwargs: Any) -> Text:
        return Text(str.format(self, *args, **kwargs))


@functools.cache
def environment() -> jinja2.Environment:
    """Templates under ``gpuplan/render/templates/bundle`` (loaded lazily, once)."""
    env = jinja2.Environment(
        loader=jinja2.PackageLoader("gpuplan.render", "templates/bundle"),
        undefined=jinja2.StrictUndefined,
        finalize=guard,
        autoescape=False,
        keep_trailing_newline=True,
        trim_blocks=True,
        lstrip_blocks=True,
    )
    env.filters.update(sh=sh, hcl=hcl, md=md, inert=inert)
    return env


def render(name: str, **values: Any) -> str:
    """Render one template; every printed value passes :func:`guard`. ``_('message')`` in a template is
    the message in the bundle's language (``c.lang``)."""
    lang = getattr(values.get("c"), "lang", "en")
    values.setdefault("_", lambda text: Text(i18n.tr(text, lang)))
    return environment().get_template(name).render(**values)
