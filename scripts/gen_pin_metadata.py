"""Ship the packaging metadata `gpuplan check` proves bundle pins with (src/gpuplan/data/pin_metadata.json).

For every `name==version` the bundle renderer can write (the pins in src/gpuplan/render: PINS tables, requirement
templates, `pip install 'x==y'` lines) and every pin in the bundle folders given as arguments, ask pip for that
release's metadata (`pip install --dry-run --no-deps --report`, which reads PyPI's PEP 658 metadata files, so no
wheel is downloaded) and keep Requires-Python and Requires-Dist. Existing entries are kept; pass --refresh to read
them again.

    python scripts/gen_pin_metadata.py [--refresh] [BUNDLE_DIR ...]

Needs network access to the package index (PyPI); the check itself never uses the network.
"""

from __future__ import annotations

import datetime as dt
import json
import re
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
OUT = ROOT / "src" / "gpuplan" / "data" / "pin_metadata.json"
PIN = re.compile(r"""["'\s\[(]?([A-Za-z][A-Za-z0-9._-]*)(?:\[[^\]]+\])?==([0-9][A-Za-z0-9.+!_-]*)""")
DICT_PIN = re.compile(r'"([A-Za-z][A-Za-z0-9._-]*)":\s*"([0-9][A-Za-z0-9.+!_-]*)"')


def canonical(name: str) -> str:
    return re.sub(r"[-_.]+", "-", name).lower()


def source_pins() -> set[tuple[str, str]]:
    """Pins written in the renderer: `name==version` anywhere, and `"name": "version"` in PINS-like tables."""
    out = set()
    for path in (ROOT / "src" / "gpuplan" / "render").rglob("*"):
        if not path.is_file() or path.suffix not in (".py", ".j2"):
            continue
        text = path.read_text(encoding="utf-8")
        out.update((canonical(n), v) for n, v in PIN.findall(text))
        for table in re.findall(r"^\w*PINS\w*\s*=\s*\{[^}]*\}", text, re.M):
            out.update((canonical(n), v) for n, v in DICT_PIN.findall(table))
    return out


def bundle_pins(folder: Path) -> set[tuple[str, str]]:
    sys.path.insert(0, str(ROOT / "src"))
    from gpuplan.check.bundle import Bundle
    from gpuplan.check.pins import bundle_pins as pins

    return {(name, version) for entries in pins(Bundle(folder)).values() for _l, name, _e, version in entries}


def read(name: str, version: str) -> dict | None:
    with tempfile.TemporaryDirectory() as tmp:
        report = Path(tmp) / "report.json"
        res = subprocess.run([sys.executable, "-m", "pip", "install", "--dry-run", "--no-deps", "--ignore-installed",
                              "--ignore-requires-python", "--quiet", "--report", str(report), "--target", tmp,
                              f"{name}=={version}"], capture_output=True, text=True)
        if res.returncode != 0 or not report.exists():
            print(f"  {name}=={version}: {res.stderr.strip().splitlines()[-1] if res.stderr.strip() else 'failed'}")
            return None
        meta = json.loads(report.read_text())["install"][0]["metadata"]
        return {"requires_python": meta.get("requires_python"), "requires_dist": meta.get("requires_dist") or []}


def main(argv: list[str]) -> int:
    refresh = "--refresh" in argv
    folders = [Path(a) for a in argv[1:] if a != "--refresh"]
    doc = json.loads(OUT.read_text()) if OUT.exists() else {}
    packages = doc.get("packages", {})
    wanted = source_pins()
    for folder in folders:
        wanted |= bundle_pins(folder)
    for name, version in sorted(wanted):
        if not refresh and version in packages.get(name, {}):
            continue
        meta = read(name, version)
        if meta is not None:
            packages.setdefault(name, {})[version] = meta
            print(f"  {name}=={version}: Requires-Python {meta['requires_python']}")
    doc = {"source": "PyPI release metadata (Requires-Python, Requires-Dist) read by pip install --dry-run --report",
           "generated_by": "scripts/gen_pin_metadata.py", "as_of": dt.date.today().isoformat(),
           "packages": {n: dict(sorted(v.items())) for n, v in sorted(packages.items())}}
    OUT.write_text(json.dumps(doc, indent=1, sort_keys=False) + "\n", encoding="utf-8")
    print(f"wrote {OUT}: {sum(len(v) for v in packages.values())} releases")
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv))
