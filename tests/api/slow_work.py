"""Stand-ins for the API's work functions, for the limit tests: top-level, so that they pickle by
reference into the worker processes (a test patches ``gpuplan.api.work.do_estimate`` with one)."""

from __future__ import annotations

import os
import time
from pathlib import Path


def sleep_half_second(w, lim) -> dict:
    time.sleep(0.5)
    return {}


def wait_for_file(w, lim) -> dict:
    """Write '<flag>.started', wait (at most 10 s) until '<flag>' exists; the flag path is the workload's name."""
    flag = Path(w.name)
    Path(str(flag) + ".started").write_text(str(os.getpid()))
    for _ in range(1000):
        if flag.exists():
            break
        time.sleep(0.01)
    return {"ok": True}


def spin_forever(w, lim) -> dict:
    while True:
        pass
