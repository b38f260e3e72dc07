"""Every version a bundle pins can be installed on the node's declared Python, and the pins agree with each other.

The node's Python is plan.json ``environment.python`` ("3.12"). For each ``name==version`` a bundle installs
(requirements*.txt, and ``pip install`` lines in the Dockerfile and shell scripts) the check reads that release's
packaging metadata from data/pin_metadata.json (Requires-Python and Requires-Dist, read from PyPI by
scripts/gen_pin_metadata.py; no network here) and finds:

- a release whose Requires-Python excludes the node's Python ("No matching distribution" at install time);
- a pin that another pinned package's Requires-Dist excludes (ms-swift 4.5.2[megatron] needs mcore-bridge>=1.6.2);
- a pin gpuplan ships no metadata for (the check cannot prove it: regenerate the metadata).
"""

from __future__ import annotations

import functools
import json
import re
from importlib.resources import files as _pkg_files

from gpuplan.check.bundle import Bundle, Finding
from gpuplan.i18n import _

PIN = re.compile(r"^(?P<name>[A-Za-z0-9][A-Za-z0-9._-]*)(?:\[(?P<extras>[^\]]+)\])?==(?P<version>[A-Za-z0-9.+!_-]+)$")
PIP_LINE = re.compile(r"\bpip3?\s+install\b|-m\s+pip\s+install\b|\bpip_install\b")
# The node: Linux x86_64 CPython (PEP 508 marker environment; python_version from environment.python).
MARKER_ENV = {"sys_platform": "linux", "platform_system": "Linux", "platform_machine": "x86_64", "os_name": "posix",
              "implementation_name": "cpython", "platform_python_implementation": "CPython"}


@functools.cache
def metadata() -> dict:
    return json.loads((_pkg_files("gpuplan") / "data" / "pin_metadata.json").read_text(encoding="utf-8"))


def canonical(name: str) -> str:
    return re.sub(r"[-_.]+", "-", name).lower()


def bundle_pins(b: Bundle) -> dict[str, list[tuple[int, str, frozenset[str], str]]]:
    """{file: [(line, canonical name, extras, version)]} of every exact pin the bundle installs."""
    out: dict[str, list[tuple[int, str, frozenset[str], str]]] = {}
    files = b.glob("requirements*.txt") + b.glob("**/requirements*.txt")
    for rel in sorted(set(files)):
        for i, raw in enumerate(b.lines(rel), 1):
            token = raw.split("#", 1)[0].split(";", 1)[0].strip()
            m = PIN.match(token)
            if m:
                out.setdefault(rel, []).append(_pin(i, m))
    for rel in sorted(set(b.glob("**/Dockerfile") + b.glob("Dockerfile") + b.glob("**/*.sh"))):
        for i, raw in enumerate(b.lines(rel), 1):
            if raw.lstrip().startswith("#") or not PIP_LINE.search(raw):
                continue
            for tok in re.split(r"\s+", raw):
                m = PIN.match(tok.strip("'\";&|()"))
                if m:
                    out.setdefault(rel, []).append(_pin(i, m))
    return out


def _pin(line: int, m: re.Match) -> tuple[int, str, frozenset[str], str]:
    extras = frozenset(canonical(e) for e in (m.group("extras") or "").split(",") if e.strip())
    return line, canonical(m.group("name")), extras, m.group("version")


def _python_ok(spec: str | None, python: str) -> bool:
    from packaging.specifiers import InvalidSpecifier, SpecifierSet

    if not spec:
        return True
    try:
        return SpecifierSet(spec).contains(python, prereleases=True)
    except InvalidSpecifier:
        return True


def check(b: Bundle) -> list[Finding]:
    pins = bundle_pins(b)
    if not pins:
        return []
    python = str(b.field("environment.python"))
    if not re.fullmatch(r"3\.\d+(\.\d+)?", python):
        return [Finding("plan.json", None, "pins", _("environment.python is {value}; the check needs a version such "
                                                    "as 3.12.").format(value=python))]
    try:
        from packaging.markers import Marker  # noqa: F401
        from packaging.requirements import InvalidRequirement, Requirement
    except ImportError:
        b.notes.append(_("packaging is not installed: requirement pins were not checked (pip install packaging)."))
        return []
    env = {**MARKER_ENV, "python_version": ".".join(python.split(".")[:2]), "python_full_version":
           python if python.count(".") == 2 else python + ".0"}
    known = metadata()["packages"]
    out: list[Finding] = []
    for rel, entries in pins.items():
        pinned = {name: version for _line, name, _extras, version in entries}
        for line, name, extras, version in entries:
            meta = (known.get(name) or {}).get(version)
            if meta is None:
                out.append(Finding(rel, line, "pin-unknown", _(
                    "{name}=={version}: gpuplan ships no packaging metadata for this release, so it cannot prove it "
                    "installs on Python {python} (scripts/gen_pin_metadata.py).").format(
                        name=name, version=version, python=python)))
                continue
            if not _python_ok(meta.get("requires_python"), env["python_full_version"]):
                out.append(Finding(rel, line, "pin-python", _(
                    "{name}=={version} requires Python {spec}; the node runs Python {python}: pip finds no matching "
                    "distribution.").format(name=name, version=version, spec=meta.get("requires_python"),
                                            python=python)))
            for dep in meta.get("requires_dist") or ():
                try:
                    req = Requirement(dep)
                except InvalidRequirement:
                    continue
                target = canonical(req.name)
                if target not in pinned:
                    continue
                if req.marker is not None and not any(req.marker.evaluate({**env, "extra": e})
                                                      for e in (extras or {""})):
                    continue
                if not req.specifier.contains(pinned[target], prereleases=True):
                    out.append(Finding(rel, line, "pin-conflict", _(
                        "{name}=={version} requires {dep}, but {target}=={pinned} is pinned: pip cannot resolve "
                        "these pins.").format(name=name, version=version, dep=str(req).split(";")[0].strip(),
                                              target=target, pinned=pinned[target])))
    return out
