"""Record pip's resolution of every requirements set a bundle can write, and ship the metadata `gpuplan check` proves
pins with.

One source of pins: data/environments.yaml (``gpuplan.plan.advice.node_env.pin_sets()``: each stack with its optional
parts, for the Python of its image). For each set this script runs pip's resolver for that Python on Linux x86_64
against PyPI (scripts/pip_resolve.py) and writes

- ``tests/bundle/resolved/<key>.json``: the resolution (every distribution pip picked, its wheel file,
  Requires-Python, Requires-Dist and requested extras), which tests/bundle/test_requirements_resolve.py checks offline;
- ``src/gpuplan/data/pin_metadata.json``: Requires-Python and Requires-Dist of every pinned release, copied from those
  resolutions, so the static check (``gpuplan check``, no network) and the resolver read the same metadata.

It also records the sets the issue found broken (``REFUSED``: pip must refuse them, and so must the static check),
reading their pins' metadata with ``pip install --dry-run --no-deps --report``.

    python scripts/gen_pin_metadata.py [--refresh] [--jobs N]

A set whose record exists is kept unless --refresh. Needs the package index (PyPI); pip downloads the wheels whose
metadata the index does not serve separately (minutes for vLLM and torch).
"""

from __future__ import annotations

import argparse
import datetime as dt
import importlib.util
import json
import sys
import tempfile
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
OUT = ROOT / "src" / "gpuplan" / "data" / "pin_metadata.json"
RESOLVED = ROOT / "tests" / "bundle" / "resolved"

# Sets the issue found broken; pip must refuse each, and gpuplan check must refuse it too (the two proofs agree).
REFUSED: dict[str, tuple[str, list[str]]] = {
    "refused-transformers-5-on-py310": ("3.10", ["transformers==5.24.0", "peft==0.21.2"]),
    "refused-megatron-core-0.18-on-py311": ("3.11", ["megatron-core==0.18.0"]),
    "refused-ms-swift-megatron-with-mcore-bridge-1.6.0": ("3.12", ["ms-swift[megatron]==4.5.2", "mcore-bridge==1.6.0"]),
}


def _resolver():
    spec = importlib.util.spec_from_file_location("pip_resolve", ROOT / "scripts" / "pip_resolve.py")
    assert spec and spec.loader
    mod = importlib.util.module_from_spec(spec)
    sys.modules["pip_resolve"] = mod
    spec.loader.exec_module(mod)
    return mod


def wanted() -> dict[str, tuple[str, list[str], bool]]:
    """{name: (Python, pin lines, expected to resolve)} of every set to record."""
    sys.path.insert(0, str(ROOT / "src"))
    from gpuplan.plan.advice.node_env import pin_sets

    out = {name: (python, [f"{k}=={v}" for k, v in pins], True) for name, (python, pins) in pin_sets().items()}
    out.update({name: (python, lines, False) for name, (python, lines) in REFUSED.items()})
    return out


def _one_release(pr, line: str) -> dict | None:
    """Requires-Python and Requires-Dist of one pinned release (no dependencies resolved)."""
    with tempfile.TemporaryDirectory() as tmp:
        proc = pr._pip("install", "--dry-run", "--no-deps", "--ignore-installed", "--ignore-requires-python",
                       "--quiet", "--report", "-", "--target", tmp, line)
    if proc.returncode != 0:
        print(f"  {line}: {proc.stderr.strip().splitlines()[-1] if proc.stderr.strip() else 'failed'}")
        return None
    meta = json.loads(proc.stdout)["install"][0]["metadata"]
    return {"requires_python": meta.get("requires_python"), "requires_dist": meta.get("requires_dist") or []}


def main(argv: list[str]) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--refresh", action="store_true", help="resolve every set again")
    ap.add_argument("--jobs", type=int, default=4)
    a = ap.parse_args(argv[1:])
    pr = _resolver()
    RESOLVED.mkdir(parents=True, exist_ok=True)
    sets = wanted()
    todo = {name: s for name, s in sets.items()
            if a.refresh or not (RESOLVED / f"{pr.requirements_key(s[0], s[1])}.json").exists()}

    def run(item):
        name, (python, lines, expected) = item
        print(f"resolving {name} (Python {python}): {' '.join(lines)}", flush=True)
        rec = pr.record(lines, python)
        rec.update(name=name, expect="resolves" if expected else "refused",
                   recorded=dt.date.today().isoformat())
        if rec["ok"] != expected:
            print(f"  {name}: pip {'resolved' if rec['ok'] else 'refused'} it, expected otherwise:\n{rec['error']}")
        (RESOLVED / f"{rec['key']}.json").write_text(json.dumps(rec, indent=1) + "\n")
        return name, rec["ok"]

    with ThreadPoolExecutor(max_workers=max(1, a.jobs)) as pool:
        for name, ok in pool.map(run, sorted(todo.items())):
            print(f"  {name}: {'resolves' if ok else 'refused'}")
    # pin metadata: every pinned release, from the resolutions (or read alone for the refused sets)
    packages: dict[str, dict[str, dict]] = {}
    for _name, (python, lines, _expected) in sorted(sets.items()):
        rec = json.loads((RESOLVED / f"{pr.requirements_key(python, lines)}.json").read_text())
        got = {i["name"]: i for i in rec["install"]}
        for line in lines:
            pkg, version = line.split("==")
            pkg = pr.norm(pkg.split("[")[0])
            if version in packages.get(pkg, {}):
                continue
            item = got.get(pkg)
            meta = ({"requires_python": item["requires_python"], "requires_dist": item["requires_dist"]}
                    if item and item["version"] == version else _one_release(pr, f"{pkg}=={version}"))
            if meta is not None:
                packages.setdefault(pkg, {})[version] = meta
    doc = {"source": "PyPI release metadata (Requires-Python, Requires-Dist) of every pin in data/environments.yaml "
                     "and of the refused sets, from pip's resolutions in tests/bundle/resolved/",
           "generated_by": "scripts/gen_pin_metadata.py", "as_of": dt.date.today().isoformat(),
           "packages": {n: dict(sorted(v.items())) for n, v in sorted(packages.items())}}
    OUT.write_text(json.dumps(doc, indent=1, sort_keys=False) + "\n", encoding="utf-8")
    keys = {pr.requirements_key(p, ln) for p, ln, _e in sets.values()}
    for stale in RESOLVED.glob("*.json"):
        if stale.stem not in keys:
            stale.unlink()
            print(f"removed {stale.name}: no bundle writes that set any more")
    print(f"wrote {OUT}: {sum(len(v) for v in packages.values())} releases; {len(keys)} sets in {RESOLVED}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv))
