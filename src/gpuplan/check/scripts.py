"""Shell scripts as the node's shell reads them: ``bash -n`` on every ``*.sh`` and on the scripts cloud-init writes
(``write_files`` entries ending in .sh), and shellcheck (errors and warnings) when it is installed."""

from __future__ import annotations

import re
import shutil
import subprocess
import tempfile
from pathlib import Path

import yaml

from gpuplan.check.bundle import Bundle, Finding
from gpuplan.i18n import _

TIMEOUT_S = 60
GCC = re.compile(r"^(?P<file>.+?):(?P<line>\d+):(?P<col>\d+): (?P<level>\w+): (?P<msg>.*)$")


def _cloud_init_scripts(b: Bundle) -> list[tuple[str, str, int | None]]:
    """(script path on the node, its text, the cloud-init.yaml line of its entry)."""
    if not b.has("cloud-init.yaml"):
        return []
    try:
        doc = yaml.safe_load(b.text("cloud-init.yaml") or "") or {}
    except yaml.YAMLError:
        return []   # the schema check reports the parse error
    out = []
    for entry in doc.get("write_files") or []:
        if isinstance(entry, dict) and str(entry.get("path", "")).endswith(".sh"):
            out.append((str(entry["path"]), str(entry.get("content") or ""),
                        b.line_of("cloud-init.yaml", f"path: {entry['path']}")))
    return out


def check(b: Bundle) -> list[Finding]:
    out: list[Finding] = []
    scripts = b.glob("**/*.sh")
    embedded = _cloud_init_scripts(b)
    with tempfile.TemporaryDirectory(prefix="gpuplan-check-") as tmp:
        where: dict[str, tuple[str, int | None, str | None]] = {}   # checked file -> (bundle file, line offset, origin)
        for rel in scripts:
            where[str(b.root / rel)] = (rel, None, None)
        for i, (node_path, text, line) in enumerate(embedded):
            p = Path(tmp) / f"cloud-init-{i}.sh"
            p.write_text(text, encoding="utf-8")
            where[str(p)] = ("cloud-init.yaml", line, node_path)
        for path, (rel, line, origin) in where.items():
            res = subprocess.run(["bash", "-n", path], capture_output=True, text=True, timeout=TIMEOUT_S)
            if res.returncode != 0:
                m = re.search(r"line (\d+):", res.stderr)
                at = line if origin else (int(m.group(1)) if m else None)
                out.append(Finding(rel, at, "bash-syntax", _("bash cannot parse {script}: {error}").format(
                    script=origin or rel, error=res.stderr.strip().splitlines()[-1] if res.stderr.strip() else "")))
        shellcheck = shutil.which("shellcheck")
        if not shellcheck:
            b.notes.append(_("shellcheck is not installed: shell scripts were only parsed with bash -n "
                             "(install shellcheck for the full check)."))
            return out
        if not where:
            return out
        res = subprocess.run([shellcheck, "--severity=warning", "--format=gcc", "--shell=bash", *where],
                             capture_output=True, text=True, timeout=TIMEOUT_S * 4, cwd=b.root)
        for line_text in res.stdout.splitlines():
            m = GCC.match(line_text)
            if not m:
                continue
            path = m.group("file")
            key = path if path in where else str((b.root / path).resolve())
            rel, line, origin = where.get(key, (path, None, None))
            at = line if origin else int(m.group("line"))
            # shellcheck's own message stays in its language (English); the sentence around it is translated
            text = (_("shellcheck: {message}").format(message=m.group("msg")) if not origin else
                    _("shellcheck: {message} ({script}, line {line})").format(message=m.group("msg"), script=origin,
                                                                               line=m.group("line")))
            out.append(Finding(rel, at, "shellcheck", text))
    return out
