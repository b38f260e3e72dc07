"""Exit 0 when everything scripts/test.sh would install is already installed, 1 otherwise (and say what is missing).

    python scripts/deps_ok.py EXTRA [EXTRA...] [--req "name>=1"]...
    python scripts/deps_ok.py --only --req "name>=1" [--req ...]

Checks, without the network: gpuplan installed in editable mode from this checkout, and every requirement of
the project and of the named extras of pyproject.toml (plus any --req) satisfied by an installed distribution
(name, version specifier and environment marker, as pip reads them). ``--only`` checks the --req ones alone. scripts/test.sh runs pip only when this
fails, so a second run starts testing at once instead of asking the package index about ~60 packages.
"""

from __future__ import annotations

import json
import sys
from importlib import metadata
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]

try:  # the same parsers pip uses; pip is in every venv scripts/test.sh makes
    from packaging.requirements import Requirement
    from packaging.utils import canonicalize_name
except ImportError:  # pragma: no cover - fall back to pip's vendored copy
    from pip._vendor.packaging.requirements import Requirement  # type: ignore[no-redef]
    from pip._vendor.packaging.utils import canonicalize_name  # type: ignore[no-redef]
try:
    import tomllib
except ImportError:  # pragma: no cover - Python 3.10
    from pip._vendor import tomli as tomllib  # type: ignore[no-redef]


def _editable_here() -> str | None:
    """None when gpuplan is installed in editable mode from this checkout, else what is wrong."""
    try:
        dist = metadata.distribution("gpuplan")
    except metadata.PackageNotFoundError:
        return "gpuplan is not installed"
    text = dist.read_text("direct_url.json")
    if not text:
        return "gpuplan is installed, but not in editable mode from this checkout"
    info = json.loads(text)
    url = str(info.get("url", ""))
    if not info.get("dir_info", {}).get("editable") or Path(url.removeprefix("file://")).resolve() != ROOT:
        return f"gpuplan is installed from {url or 'elsewhere'}, not in editable mode from {ROOT}"
    return None


def missing(extras: list[str], extra_reqs: list[str], only: bool = False) -> list[str]:
    out: list[str] = []
    wanted: list[str] = []
    if not only:
        project = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["project"]
        wanted += project.get("dependencies", [])
        for extra in extras:
            wanted += project.get("optional-dependencies", {}).get(extra, [])
        problem = _editable_here()
        if problem:
            out.append(problem)
    wanted += extra_reqs
    for text in wanted:
        req = Requirement(text)
        if req.marker is not None and not req.marker.evaluate():
            continue
        try:
            version = metadata.version(canonicalize_name(req.name))
        except metadata.PackageNotFoundError:
            try:
                version = metadata.version(req.name)
            except metadata.PackageNotFoundError:
                out.append(f"{text}: not installed")
                continue
        if req.specifier and not req.specifier.contains(version, prereleases=True):
            out.append(f"{text}: {version} installed")
    return out


def main(argv: list[str]) -> int:
    extras, reqs, i = [], [], 0
    only = "--only" in argv
    argv = [a for a in argv if a != "--only"]
    while i < len(argv):
        if argv[i].startswith("--req="):
            reqs.append(argv[i].split("=", 1)[1])
            i += 1
        elif argv[i] == "--req" and i + 1 < len(argv):
            reqs.append(argv[i + 1])
            i += 2
        else:
            extras.append(argv[i])
            i += 1
    gaps = missing(extras, reqs, only)
    for gap in gaps:
        print(f"deps_ok: {gap}", file=sys.stderr)
    return 1 if gaps else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
