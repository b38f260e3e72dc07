"""Escaping for every format the bundle writes, and the guard that makes forgetting it an error.

Every user-derived string (job name, model id, region, paths, tags) reaches a generated file only
through one of these filters: :func:`sh` (``shlex.quote``) for shell, :func:`hcl` (a JSON string
literal with Terraform's ``${``/``%{`` template sequences doubled) for HCL, :func:`md` for Markdown;
YAML and JSON files are built as Python data and dumped with ``yaml.safe_dump``/``json.dumps``.

The Jinja2 environment's ``finalize`` hook (:func:`guard`) lets through numbers, :class:`Safe`
strings (output of a filter) and strings made only of ``[A-Za-z0-9._:/@+=,-]`` (characters that
are inert in shell words, HCL strings, YAML scalars and Markdown); anything else raises, so a
template that interpolates a raw string with a quote, ``$``, backtick, space or newline fails the
build instead of producing an injectable file.

Sources: Terraform string templates (``${`` / ``%{`` and their ``$${`` / ``%%{`` escapes),
https://developer.hashicorp.com/terraform/language/expressions/strings ; POSIX shell quoting via
Python's ``shlex.quote``; DNS-1123 labels, https://kubernetes.io/docs/concepts/overview/working-with-objects/names/ .
"""

from __future__ import annotations

import hashlib
import html
import json
import re
import shlex
import unicodedata
from typing import Any

from gpuplan.errors import GpuplanError
from gpuplan.i18n import N_, _

INERT_RE = re.compile(r"^[A-Za-z0-9._:/@+=,-]*$")
ID_RE = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]{0,127}$")
SLUG_MAX = 40  # leaves room for suffixes such as "-erdma-15" within the 63-character DNS label limit


class Safe(str):
    """Text already escaped for the format it is written into."""


def _has_control(text: str) -> str | None:
    for ch in text:
        if unicodedata.category(ch).startswith("C"):
            return ch
    return None


# the values checked here, as messages name them (msgids; GpuplanError.field keeps the English)
FIELD_NAMES = (N_("instance type"), N_("region"), N_("model"), N_("job name"), N_("currency"), N_("GPU id"),
               N_("RDMA kind"), N_("LoRA targets"), N_("quantized checkpoint"))


def check_text(value: Any, field: str, *, max_len: int = 500) -> str:
    """A one-line user string, or GpuplanError: control characters (newline, NUL, tab, bidi
    overrides...) are refused because no quoting makes them safe in every format we write."""
    text = "" if value is None else str(value)
    bad = _has_control(text)
    if bad is not None:
        raise GpuplanError(_("The {field} contains a control character ({char}): it cannot go into launch scripts "
                             "and Terraform files.").format(field=_(field), char=ascii(bad)),
                           hint=_("Use a single-line {field} without tabs or newlines.").format(field=_(field)),
                           field=field)
    if len(text) > max_len:
        raise GpuplanError(_("The {field} is longer than {max_len} characters.").format(field=_(field), max_len=max_len),
                           hint=_("Shorten the {field}.").format(field=_(field)), field=field)
    return text


def check_id(value: Any, field: str) -> str:
    """A catalog identifier (instance type, region, GPU id): letters, digits, '.', '_', '-' only."""
    text = check_text(value, field, max_len=128)
    if not ID_RE.match(text):
        raise GpuplanError(_("The {field} {text!r} is not a valid identifier.").format(field=_(field), text=text),
                           hint=_("Identifiers use letters, digits, '.', '_' and '-' (e.g. ecs.gn7i-c8g1.2xlarge, "
                                  "cn-shanghai)."), field=field)
    return text


def check_argument(value: Any, field: str) -> str:
    """A string passed as a command-line argument: no control characters and no leading '-'
    (which a program would read as an option even when quoted)."""
    text = check_text(value, field)
    if not text or text.startswith("-"):
        raise GpuplanError(_("The {field} {text!r} cannot start with '-' or be empty.").format(field=_(field), text=text),
                           hint=_("Give the {field} as a name or an absolute path.").format(field=_(field)), field=field)
    return text


def sh(value: Any) -> Safe:
    """One shell word: ``shlex.quote`` (single quotes; nothing inside is expanded)."""
    return Safe(shlex.quote(str(value)))


def hcl(value: Any) -> Safe:
    """An HCL quoted string literal whose content is inert: JSON escaping plus ``$${`` / ``%%{``."""
    text = json.dumps(str(value), ensure_ascii=False)
    return Safe(text.replace("${", "$${").replace("%{", "%%{"))


_MD_SPECIAL = re.compile(r"([\\`*_\[\]{}|])")


def md(value: Any) -> Safe:
    """Markdown text: ``&``, ``<`` and ``>`` HTML-escaped (no tag can open), Markdown punctuation backslash-escaped
    (one line). Quotes stay as typed: outside an HTML attribute they mean nothing, and ``&#x27;`` reads badly in a
    terminal."""
    return Safe(_MD_SPECIAL.sub(r"\\\1", html.escape(str(value), quote=False)))


def inert(value: Any) -> Safe:
    """A value that must already be inert (catalog ids, slugs, numbers); raises otherwise."""
    text = str(value)
    if not INERT_RE.match(text):
        raise GpuplanError(_("Internal: {text!r} is not inert text.").format(text=text), hint=_("Please report this bug."))
    return Safe(text)


def guard(value: Any) -> Any:
    """Jinja2 ``finalize``: refuse to write a raw string that could change a file's meaning."""
    if isinstance(value, Safe):
        return value
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, (int, float)):
        return value
    if value is None:
        raise GpuplanError(_("Internal: a bundle template printed an undefined value."), hint=_("Please report this bug."))
    text = str(value)
    if INERT_RE.match(text):
        return text
    raise GpuplanError(_("Internal: a bundle template printed unescaped text {text!r}.").format(text=text[:40]),
                       hint=_("Please report this bug: every user string must pass through sh, hcl or md."))


def slugify(name: str | None, fallback: str = "gpuplan-job") -> str:
    """A DNS-1123 label (lowercase letters, digits, '-'; starts and ends alphanumeric) for file,
    Terraform and Kubernetes resource names. Names with no ASCII letters or digits (a Chinese job
    name) become ``job-<8 hex digits of its SHA-256>`` so two such jobs do not collide."""
    text = unicodedata.normalize("NFKD", name or "").encode("ascii", "ignore").decode("ascii").lower()
    text = re.sub(r"[^a-z0-9]+", "-", text).strip("-")
    if not text:
        if not name:
            return fallback
        return "job-" + hashlib.sha256(name.encode("utf-8")).hexdigest()[:8]
    text = text[:SLUG_MAX].rstrip("-")
    if not text[0].isalpha():
        text = ("job-" + text)[:SLUG_MAX].rstrip("-")
    return text
