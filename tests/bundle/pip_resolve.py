"""Resolve a bundle's requirements file for its declared node environment with pip's own resolver.

``pip install --dry-run --ignore-installed --report - --python-version X.Y --platform manylinux_2_N_x86_64 ...
--only-binary=:all: -r FILE`` answers "would this install on a Linux x86_64 node with Python X.Y?" without
installing anything. Two details pip needs help with:

- ``--platform`` does not expand manylinux compatibility by itself: every ``manylinux_2_17`` .. ``manylinux_2_35``
  tag a node with glibc 2.35 (Ubuntu 22.04) accepts is passed explicitly, plus the legacy aliases.
- ``--only-binary=:all:`` (required with ``--platform``) cannot see source-only packages (DeepSpeed, oss2 and
  crcmod publish only sdists). For each one pip reports missing, pip prepares the sdist's metadata on this machine
  and a metadata-only stub wheel (same name, version, Requires-Python and Requires-Dist) stands in for it, so its
  dependencies take part in the target resolution; the node builds the real sdist.

Results are cached by the sha256 of (requirements text, Python, platforms, pip version) under
``~/.cache/gpuplan/pip-resolve/`` (``GPUPLAN_RESOLVE_CACHE`` overrides): a set of pins is resolved once. A failure
to reach the package index raises :class:`IndexUnreachable` (the test fails loudly; it never passes silently).

Command line: ``python -m tests.bundle.pip_resolve requirements.txt --python 3.11``.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import re
import subprocess
import sys
import tempfile
import zipfile
from dataclasses import dataclass
from pathlib import Path

GLIBC_MINOR_MAX = 35        # Ubuntu 22.04 (the node image's OS): glibc 2.35
PLATFORMS = tuple([f"manylinux_2_{m}_x86_64" for m in range(GLIBC_MINOR_MAX, 16, -1)]
                  + ["manylinux2014_x86_64", "manylinux2010_x86_64", "manylinux1_x86_64"])
NETWORK_ERRORS = ("NewConnectionError", "Max retries exceeded", "Temporary failure in name resolution",
                  "Network is unreachable", "Connection refused", "ProxyError", "ConnectTimeoutError")
MAX_SDISTS = 12             # source-only packages one resolution may stand in for


class IndexUnreachable(RuntimeError):
    """The package index could not be reached: the resolution was not done (never a pass)."""


@dataclass(frozen=True)
class Resolution:
    ok: bool
    python: str
    installed: dict[str, str]         # name -> version the resolver picked
    error: str                        # pip's last lines when not ok
    sdists: dict[str, str]            # source-only packages, resolved through their metadata: name -> version


def _cache_dir() -> Path:
    return Path(os.environ.get("GPUPLAN_RESOLVE_CACHE") or Path.home() / ".cache" / "gpuplan" / "pip-resolve")


def _pip(*args: str, timeout_s: float = 900) -> subprocess.CompletedProcess:
    env = dict(os.environ, PIP_DISABLE_PIP_VERSION_CHECK="1", PIP_NO_INPUT="1")
    return subprocess.run([sys.executable, "-m", "pip", *args], capture_output=True, text=True, env=env,
                          timeout=timeout_s, check=False)


def _raise_if_offline(proc: subprocess.CompletedProcess) -> None:
    text = proc.stdout + proc.stderr
    if any(m in text for m in NETWORK_ERRORS):
        raise IndexUnreachable("pip could not reach the package index: " + text.strip().splitlines()[-1][:300])


def _norm(name: str) -> str:
    return re.sub(r"[-_.]+", "-", name).lower()


def _sdist_stub(req: str, stubs: Path) -> tuple[str, str] | None:
    """A wheel that stands in for a source-only package: pip prepares the sdist's metadata on this machine (PEP 517
    prepare_metadata, no --platform) and the stub carries its Name, Version, Requires-Python and Requires-Dist, so
    the target resolution checks its dependencies and Python range. (name, version), or None when there is no
    sdist either."""
    proc = _pip("install", "--dry-run", "--ignore-installed", "--no-deps", "--quiet", "--report", "-",
                "--no-binary=:all:", req)
    _raise_if_offline(proc)
    if proc.returncode != 0:
        return None
    meta = json.loads(proc.stdout)["install"][0]["metadata"]
    name, version = meta["name"], meta["version"]
    lines = ["Metadata-Version: 2.1", f"Name: {name}", f"Version: {version}"]
    if meta.get("requires_python"):
        lines.append(f"Requires-Python: {meta['requires_python']}")
    lines += [f"Provides-Extra: {e}" for e in meta.get("provides_extra") or []]
    lines += [f"Requires-Dist: {r}" for r in meta.get("requires_dist") or []]
    dist = f"{re.sub(r'[-.]+', '_', name)}-{version}"
    files = {f"{dist}.dist-info/METADATA": "\n".join(lines) + "\n",
             f"{dist}.dist-info/WHEEL": "Wheel-Version: 1.0\nGenerator: gpuplan-stub\nRoot-Is-Purelib: true\n"
                                        "Tag: py3-none-any\n"}
    files[f"{dist}.dist-info/RECORD"] = "".join(f"{k},,\n" for k in files) + f"{dist}.dist-info/RECORD,,\n"
    with zipfile.ZipFile(stubs / f"{dist}-py3-none-any.whl", "w") as z:
        for k, v in files.items():
            z.writestr(k, v)
    return name, version


def resolve(requirements: str, python: str, *, use_cache: bool = True) -> Resolution:
    """pip's resolution of ``requirements`` (a requirements.txt text) for CPython ``python`` on Linux x86_64."""
    key_src = json.dumps([requirements, python, PLATFORMS, _pip("--version").stdout.split()[1]])
    key = hashlib.sha256(key_src.encode()).hexdigest()[:24]
    cached = _cache_dir() / f"{key}.json"
    if use_cache and cached.is_file():
        return Resolution(**json.loads(cached.read_text()))
    sdists: dict[str, str] = {}
    with tempfile.TemporaryDirectory() as tmp:
        stubs = Path(tmp) / "stubs"
        stubs.mkdir()
        req_file = Path(tmp) / "requirements.txt"
        req_file.write_text(requirements)
        args = ["install", "--dry-run", "--ignore-installed", "--quiet", "--report", "-", "--python-version", python,
                "--implementation", "cp", "--only-binary=:all:", *[a for p in PLATFORMS for a in ("--platform", p)],
                "--find-links", str(stubs), "--use-feature=fast-deps", "-r", str(req_file)]
        while True:
            proc = _pip(*args)
            _raise_if_offline(proc)
            missing = re.search(r"No matching distribution found for (\S+)", proc.stderr)
            if proc.returncode == 0 or not missing or len(sdists) >= MAX_SDISTS:
                break
            got = _sdist_stub(missing.group(1), stubs)   # a source-only package: its metadata stands in
            if got is None or _norm(got[0]) in sdists:
                break
            sdists[_norm(got[0])] = got[1]
    if proc.returncode != 0:
        err = "\n".join(ln for ln in proc.stderr.strip().splitlines()
                        if not ln.startswith(("WARNING: Location", "WARNING: pip is using lazily")))
        out = Resolution(False, python, {}, err[-2000:], sdists)
    else:
        report = json.loads(proc.stdout)
        installed = {_norm(i["metadata"]["name"]): i["metadata"]["version"] for i in report["install"]}
        out = Resolution(True, python, installed, "", sdists)
    if out.ok:   # failures are not cached: a fixed index or pin is tried again
        cached.parent.mkdir(parents=True, exist_ok=True)
        cached.write_text(json.dumps(out.__dict__, indent=1, sort_keys=True))
    return out


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("requirements")
    p.add_argument("--python", required=True, help="X.Y")
    p.add_argument("--no-cache", action="store_true")
    a = p.parse_args(argv)
    r = resolve(Path(a.requirements).read_text(), a.python, use_cache=not a.no_cache)
    if not r.ok:
        print(r.error, file=sys.stderr)
        return 1
    for name, version in sorted(r.installed.items()):
        print(f"{name}=={version}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
