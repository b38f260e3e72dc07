"""The analytic path and `gpuplan gpus` never import torch."""

import subprocess
import sys


def _modules_after(code: str) -> set[str]:
    out = subprocess.run([sys.executable, "-c", code + "\nimport sys; print('\\n'.join(sys.modules))"],
                         capture_output=True, text=True, check=True)
    return set(out.stdout.split())


def test_estimate_does_not_import_torch():
    mods = _modules_after("from gpuplan.estimate.core import estimate\n"
                          "estimate({'model': 'qwen2.5-7b', 'task': 'lora', 'hardware': {'gpu': 'A10'}})")
    assert "torch" not in mods and "transformers" not in mods


def test_cli_gpus_does_not_import_torch():
    mods = _modules_after("import sys\nfrom gpuplan import cli\nsys.argv=['gpuplan','gpus','--json']\n"
                          "import contextlib, io\n"
                          "with contextlib.redirect_stdout(io.StringIO()):\n"
                          "    try:\n        cli.main()\n    except SystemExit:\n        pass")
    assert "torch" not in mods
