"""The one user-facing error type.

Every problem a user can fix (an unknown name, a malformed file, an out-of-range value) is raised
as :class:`GpuplanError` with a message and a hint. The CLI prints it as one line plus the hint
and exits with code 2; ``--json`` prints ``{"error": ..., "hint": ...}``. ``assert`` is only for
internal invariants.
"""

from __future__ import annotations

import difflib
from collections.abc import Iterable


class GpuplanError(Exception):
    """A problem in the user's input or environment, with a hint on how to fix it."""

    def __init__(self, message: str, hint: str = "", *, field: str | None = None):
        super().__init__(message)
        self.message = message
        self.hint = hint
        self.field = field

    def to_dict(self) -> dict[str, str]:
        out = {"error": self.message, "hint": self.hint}
        if self.field:
            out["field"] = self.field
        return out

    def __str__(self) -> str:  # pragma: no cover - trivial
        return self.message


def did_you_mean(name: str, choices: Iterable[str], n: int = 3, cutoff: float = 0.5) -> list[str]:
    """Close matches for an unknown name, compared case-insensitively."""
    choices = list(choices)
    lowered = {c.lower(): c for c in choices}
    hits = difflib.get_close_matches(name.lower(), list(lowered), n=n, cutoff=cutoff)
    return [lowered[h] for h in hits]


def unknown_name_error(kind: str, name: str, choices: Iterable[str], list_command: str) -> GpuplanError:
    """A uniform 'Unknown X' error with a did-you-mean hint."""
    close = did_you_mean(str(name), choices)
    if close:
        hint = f"Did you mean {', '.join(repr(c) for c in close)}? See `{list_command}`."
    else:
        hint = f"See `{list_command}` for the known names."
    return GpuplanError(f"Unknown {kind} {name!r}.", hint=hint)
