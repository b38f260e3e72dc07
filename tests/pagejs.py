"""Run the web page's request builder (src/gpuplan/api/static/request.js) outside the browser: the JSON the page
would POST for given form values. It needs a JavaScript runtime: `node` on the PATH, or the one the playwright
package ships (the browser tests need playwright anyway)."""

from __future__ import annotations

import json
import shutil
import subprocess
from pathlib import Path
from typing import Any

REQUEST_JS = Path(__file__).resolve().parents[1] / "src" / "gpuplan" / "api" / "static" / "request.js"

_RUNNER = """
import { buildRequest } from %s;
let input = "";
process.stdin.on("data", (c) => { input += c; });
process.stdin.on("end", () => {
  const cases = JSON.parse(input);
  process.stdout.write(JSON.stringify(cases.map(([fields, extra]) => buildRequest(fields, extra))));
});
"""


def node_binary() -> str | None:
    found = shutil.which("node")
    if found:
        return found
    try:
        from playwright._impl._driver import compute_driver_executable
    except ImportError:
        return None
    exe = compute_driver_executable()
    node = exe[0] if isinstance(exe, tuple) else None
    return str(node) if node and Path(node).exists() else None


def page_requests(cases: list[tuple[dict[str, Any], dict[str, Any] | None]]) -> list[dict[str, Any]]:
    """buildRequest(fields, extra) for each case, in one run of the JavaScript runtime."""
    node = node_binary()
    assert node, "no JavaScript runtime (node, or playwright's) to run the page's request builder"
    script = _RUNNER % json.dumps(REQUEST_JS.as_uri())
    out = subprocess.run([node, "--input-type=module", "-e", script], input=json.dumps(cases), capture_output=True,
                         text=True, timeout=60, check=True)
    return json.loads(out.stdout)
