"""Resolve a set of requirement pins for a node environment with pip's own resolver, and check a recorded resolution
offline.

``pip install --dry-run --ignore-installed --report - --python-version X.Y --platform manylinux_2_N_x86_64 ...
--only-binary=:all: -r FILE`` answers "would this install on a Linux x86_64 node with Python X.Y?" without installing
anything. Two details pip needs help with:

- ``--platform`` does not expand manylinux compatibility by itself: every ``manylinux_2_17`` .. ``manylinux_2_35``
  tag a node with glibc 2.35 (Ubuntu 22.04) accepts is passed explicitly, plus the legacy aliases.
- ``--only-binary=:all:`` (required with ``--platform``) cannot see source-only packages (DeepSpeed publishes only an
  sdist). For each one pip reports missing, pip prepares the sdist's metadata on this machine and a metadata-only
  stub wheel (same name, version, Requires-Python and Requires-Dist) stands in for it, so its dependencies take part
  in the target resolution; the node builds the real sdist.

pip runs with no configuration file (``PIP_CONFIG_FILE=/dev/null``: no local find-links, extra indexes or
constraints) against ``INDEX`` (PyPI), so a recorded resolution is PyPI's, whatever machine recorded it.

:func:`record` returns the resolution as a JSON-ready record (what tests/bundle/resolved/<key>.json holds: every
distribution pip picked with its version, wheel file, Requires-Python, Requires-Dist and requested extras, or pip's
error); :func:`verify` re-checks such a record offline with ``packaging``: the pins are installed at their versions,
every distribution's Requires-Python admits the node's Python, every Requires-Dist that applies on Linux x86_64
CPython is met by the set, and every wheel's tags fit the node. ``requirements_key`` names a set of pins for a Python.

Command line: ``python scripts/pip_resolve.py requirements.txt --python 3.11`` prints the resolved set.
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
from pathlib import Path

INDEX = "https://pypi.org/simple"
GLIBC_MINOR_MAX = 35        # Ubuntu 22.04 (the node image's OS): glibc 2.35
PLATFORMS = tuple([f"manylinux_2_{m}_x86_64" for m in range(GLIBC_MINOR_MAX, 16, -1)]
                  + ["manylinux2014_x86_64", "manylinux2010_x86_64", "manylinux1_x86_64"])
NETWORK_ERRORS = ("NewConnectionError", "Max retries exceeded", "Temporary failure in name resolution",
                  "Network is unreachable", "Connection refused", "ProxyError", "ConnectTimeoutError")
MAX_SDISTS = 12             # source-only packages one resolution may stand in for
# The node: Linux x86_64 CPython (PEP 508 marker environment; python_version from the environment's Python).
MARKER_ENV = {"sys_platform": "linux", "platform_system": "Linux", "platform_machine": "x86_64", "os_name": "posix",
              "implementation_name": "cpython", "platform_python_implementation": "CPython", "platform_release": "",
              "platform_version": "", "implementation_version": ""}


class IndexUnreachable(RuntimeError):
    """The package index could not be reached: the resolution was not done (never a pass)."""


def norm(name: str) -> str:
    return re.sub(r"[-_.]+", "-", name).lower()


def pin_lines(requirements: str) -> list[str]:
    """The ``name==version`` lines of a requirements text, comments and blank lines dropped, in file order."""
    return [ln.split("#", 1)[0].strip() for ln in requirements.splitlines() if ln.split("#", 1)[0].strip()]


def requirements_key(python: str, lines: list[str]) -> str:
    """The name of one requirements set for one Python on the node platform (order does not matter)."""
    src = json.dumps({"python": python, "platforms": PLATFORMS, "requirements": sorted(lines)}, sort_keys=True)
    return hashlib.sha256(src.encode()).hexdigest()[:16]


def _pip(*args: str, timeout_s: float = 1800) -> subprocess.CompletedProcess:
    env = {k: v for k, v in os.environ.items() if not k.startswith("PIP_")}
    env.update(PIP_CONFIG_FILE=os.devnull, PIP_DISABLE_PIP_VERSION_CHECK="1", PIP_NO_INPUT="1",
               PIP_INDEX_URL=INDEX)
    for keep in ("PIP_CERT", "PIP_DEFAULT_TIMEOUT"):
        if keep in os.environ:
            env[keep] = os.environ[keep]
    return subprocess.run([sys.executable, "-m", "pip", *args], capture_output=True, text=True, env=env,
                          timeout=timeout_s, check=False)


def pip_version() -> str:
    return _pip("--version").stdout.split()[1]


def _raise_if_offline(proc: subprocess.CompletedProcess) -> None:
    text = proc.stdout + proc.stderr
    if any(m in text for m in NETWORK_ERRORS):
        raise IndexUnreachable("pip could not reach the package index: " + text.strip().splitlines()[-1][:300])


def _sdist_stub(req: str, stubs: Path) -> tuple[str, str] | None:
    """A wheel that stands in for a source-only package: pip prepares the sdist's metadata on this machine (PEP 517
    prepare_metadata, no --platform) and the stub carries its Name, Version, Requires-Python and Requires-Dist."""
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


def record(lines: list[str], python: str) -> dict:
    """pip's resolution of ``lines`` (``name==version`` pins) for CPython ``python`` on Linux x86_64, as a record."""
    sdists: dict[str, str] = {}
    with tempfile.TemporaryDirectory() as tmp:
        stubs = Path(tmp) / "stubs"
        stubs.mkdir()
        req_file = Path(tmp) / "requirements.txt"
        req_file.write_text("\n".join(lines) + "\n")
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
            if got is None or norm(got[0]) in sdists:
                break
            sdists[norm(got[0])] = got[1]
    out: dict = {"key": requirements_key(python, lines), "python": python, "platforms": list(PLATFORMS),
                 "index": INDEX, "pip": pip_version(), "requirements": lines, "ok": proc.returncode == 0}
    if proc.returncode != 0:
        err = [ln for ln in proc.stderr.strip().splitlines()
               if not ln.startswith(("WARNING: Location", "WARNING: pip is using lazily"))]
        out.update(error="\n".join(err)[-2000:], install=[])
        return out
    install = []
    for item in json.loads(proc.stdout)["install"]:
        meta = item["metadata"]
        url = (item.get("download_info") or {}).get("url") or ""
        name = norm(meta["name"])
        install.append({"name": name, "version": meta["version"],
                        "wheel": None if name in sdists else url.rsplit("/", 1)[-1],
                        "sdist": name in sdists, "requires_python": meta.get("requires_python"),
                        "requires_dist": meta.get("requires_dist") or [],
                        "requested_extras": sorted(norm(e) for e in item.get("requested_extras") or [])})
    out.update(error="", install=sorted(install, key=lambda i: i["name"]))
    return out


def _supported_tags(python: str) -> set:
    from packaging import tags

    major, minor = (int(x) for x in python.split(".")[:2])
    version = (major, minor)
    return set(tags.cpython_tags(python_version=version, platforms=PLATFORMS)) | set(
        tags.compatible_tags(python_version=version, interpreter=f"cp{major}{minor}", platforms=PLATFORMS))


def verify(rec: dict, python: str, pins: dict[str, str]) -> list[str]:
    """What is wrong with a recorded resolution for the node's ``python`` and the bundle's ``pins`` (name -> version,
    extras allowed in the name); empty when it proves the pins install. Offline: packaging only."""
    from packaging.requirements import InvalidRequirement, Requirement
    from packaging.specifiers import SpecifierSet
    from packaging.utils import parse_wheel_filename

    problems: list[str] = []
    if not rec.get("ok"):
        return [f"pip did not resolve these pins: {rec.get('error', '')[-500:]}"]
    if rec.get("python") != python:
        problems.append(f"resolved for Python {rec.get('python')}, the node runs {python}")
    got = {i["name"]: i for i in rec["install"]}
    full = python if python.count(".") == 2 else python + ".0"
    env = {**MARKER_ENV, "python_version": ".".join(python.split(".")[:2]), "python_full_version": full}
    supported = _supported_tags(python)
    for name, version in pins.items():
        base = norm(name.split("[")[0])
        if base not in got or got[base]["version"] != version:
            problems.append(f"{name}=={version} pinned, {base} {got.get(base, {}).get('version')} resolved")
    for item in rec["install"]:
        spec = item.get("requires_python")
        if spec and not SpecifierSet(spec).contains(full, prereleases=True):
            problems.append(f"{item['name']} {item['version']} requires Python {spec}")
        if item.get("wheel"):
            _n, _v, _b, wheel_tags = parse_wheel_filename(item["wheel"])
            if not set(wheel_tags) & supported:
                problems.append(f"{item['wheel']} has no tag Linux x86_64 CPython {python} accepts")
        elif not item.get("sdist"):
            problems.append(f"{item['name']} {item['version']} has neither a wheel nor an sdist")
        extras = ["", *(item.get("requested_extras") or [])]
        for dep in item.get("requires_dist") or []:
            try:
                req = Requirement(dep)
            except InvalidRequirement:
                problems.append(f"{item['name']}: unreadable Requires-Dist {dep!r}")
                continue
            if req.marker is not None and not any(req.marker.evaluate({**env, "extra": e}) for e in extras):
                continue
            target = got.get(norm(req.name))
            if target is None:
                problems.append(f"{item['name']} {item['version']} requires {req}, which is not in the set")
            elif not req.specifier.contains(target["version"], prereleases=True):
                problems.append(f"{item['name']} {item['version']} requires {req}, {target['name']} "
                                f"{target['version']} resolved")
    return problems


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("requirements")
    p.add_argument("--python", required=True, help="X.Y")
    a = p.parse_args(argv)
    rec = record(pin_lines(Path(a.requirements).read_text()), a.python)
    if not rec["ok"]:
        print(rec["error"], file=sys.stderr)
        return 1
    for item in rec["install"]:
        print(f"{item['name']}=={item['version']}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
