"""The one user-facing error type.

Every problem a user can fix (an unknown name, a malformed file, an out-of-range value) is raised
as :class:`GpuplanError` with a message and a hint. The CLI prints it as one line plus the hint
and exits with code 2; ``--json`` prints ``{"error": ..., "hint": ...}``. ``assert`` is only for
internal invariants.

Messages and hints are made with ``_()`` (gettext, see :mod:`gpuplan.i18n`) from templates with named
placeholders, so they come out in the language of the command (``--lang``) or request (``?lang=``).
Hints may name CLI commands (``gpuplan models``); the web page cannot run those, so an error can carry
a second hint for the page (``web_hint``). Without one, :meth:`GpuplanError.hint_for` ``("web")`` drops
the sentences of the hint that point at a command line.
"""

from __future__ import annotations

import difflib
import re
from collections.abc import Iterable

from gpuplan.i18n import N_, _

SURFACES = ("cli", "web", "python")


class GpuplanError(Exception):
    """A problem in the user's input or environment, with a hint on how to fix it."""

    def __init__(self, message: str, hint: str = "", *, field: str | None = None, web_hint: str | None = None,
                 kind: str | None = None):
        super().__init__(message)
        self.message = message
        self.hint = hint
        self.field = field
        self.web_hint = web_hint
        self.kind = kind   # what an 'Unknown X' error is about ("model", "GPU"...), for the API's field mapping

    def with_field(self, field: str | None) -> "GpuplanError":
        """The same error about another workload field (hints kept)."""
        return GpuplanError(self.message, self.hint, field=field, web_hint=self.web_hint, kind=self.kind)

    def hint_for(self, surface: str = "cli") -> str:
        """The hint for the CLI / Python API, or for the web page (which suggests actions on the page)."""
        if surface != "web":
            return self.hint
        if self.web_hint is not None:
            return self.web_hint
        return _strip_cli(self.hint)

    def to_dict(self, surface: str = "cli") -> dict[str, str]:
        out = {"error": self.message, "hint": self.hint_for(surface)}
        if self.field:
            out["field"] = self.field
        return out

    def __str__(self) -> str:  # pragma: no cover - trivial
        return self.message


# A sentence ends at . ! ? followed by white space and then not a lower-case letter (or at the end), or at
# a Chinese 。！？; a full stop inside a word or number (Qwen2.5, constraints.clouds, 0.5) or after an
# abbreviation (e.g., i.e.) ends nothing.
_END = re.compile(r"[.!?](?=\s+(?![a-z])|\s*$)|[。！？]")
_ABBREVIATIONS = ("e.g.", "i.e.", "etc.", "vs.", "cf.", "approx.", "incl.", "no.")
_CLI_WORDS = re.compile(r"`gpuplan[ `]|(?<![\w-])--[a-z]|GPUPLAN_[A-Z_]+=|\bpip install\b")


def split_sentences(text: str) -> list[str]:
    """``text`` cut into whole sentences, each with its end mark and the white space after it; joined
    again they give ``text`` back."""
    parts: list[str] = []
    start = 0
    for m in _END.finditer(text or ""):
        words = text[start:m.end()].split()
        if words and words[-1].lower().lstrip("(\"'`").endswith(_ABBREVIATIONS) and m.end() < len(text.rstrip()):
            continue
        end = m.end()
        while end < len(text) and text[end].isspace():
            end += 1
        parts.append(text[start:end])
        start = end
    if start < len(text or ""):
        parts.append(text[start:])
    return parts


def _strip_cli(hint: str) -> str:
    """Drop the sentences of a hint that tell the user to run a command line (the page cannot)."""
    kept = [s for s in split_sentences(hint or "") if s.strip() and not _CLI_WORDS.search(s)]
    return "".join(kept).strip()


def did_you_mean(name: str, choices: Iterable[str], n: int = 3, cutoff: float = 0.5) -> list[str]:
    """Close matches for an unknown name, compared case-insensitively."""
    choices = list(choices)
    lowered = {c.lower(): c for c in choices}
    hits = difflib.get_close_matches(name.lower(), list(lowered), n=n, cutoff=cutoff)
    return [lowered[h] for h in hits]


# One whole sentence per kind of name (a translated sentence, not an English noun slotted into one).
_UNKNOWN = {
    "model": N_("Unknown model {name!r}."),
    "GPU": N_("Unknown GPU {name!r}."),
    "instance type": N_("Unknown instance type {name!r}."),
    "instance family": N_("Unknown instance family {name!r}."),
    "cloud": N_("Unknown cloud {name!r}."),
    "region": N_("Unknown region {name!r}."),
}


def unknown_name_error(kind: str, name: str, choices: Iterable[str], list_command: str) -> GpuplanError:
    """A uniform 'Unknown X' error with a did-you-mean hint (and one for the web page)."""
    close = did_you_mean(str(name), choices)
    names = ", ".join(repr(c) for c in close)
    if close:
        hint = _("Did you mean {names}? See `{command}`.").format(names=names, command=list_command)
        web_hint = _("Did you mean {names}? Pick one from the list on the page.").format(names=names)
    else:
        hint = _("See `{command}` for the known names.").format(command=list_command)
        web_hint = _("Pick a known name from the list on the page.")
    template = _UNKNOWN.get(kind)
    message = (_(template).format(name=name) if template
               else _("Unknown {kind} {name!r}.").format(kind=_(kind), name=name))
    return GpuplanError(message, hint=hint, web_hint=web_hint, kind=kind)
