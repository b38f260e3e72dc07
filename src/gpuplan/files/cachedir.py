"""Where gpuplan keeps its cache folder (a module of its own, so that finding it imports nothing heavy)."""

from __future__ import annotations

import os
import sys
from collections.abc import Mapping
from pathlib import Path


def default_cache_dir(env: Mapping[str, str] | None = None, platform: str | None = None) -> Path:
    """``$GPUPLAN_CACHE_DIR``, else the platform's cache folder + ``gpuplan``.

    Linux/BSD: ``$XDG_CACHE_HOME/gpuplan`` or ``~/.cache/gpuplan`` (XDG Base Directory spec);
    macOS: ``~/Library/Caches/gpuplan``; Windows: ``%LOCALAPPDATA%\\gpuplan\\Cache``.
    """
    env = os.environ if env is None else env
    platform = sys.platform if platform is None else platform
    if env.get("GPUPLAN_CACHE_DIR"):
        return Path(env["GPUPLAN_CACHE_DIR"]).expanduser()
    home = Path(env.get("HOME") or env.get("USERPROFILE") or Path.home())
    if platform == "darwin":
        return home / "Library" / "Caches" / "gpuplan"
    if platform.startswith("win"):
        base = env.get("LOCALAPPDATA") or str(home / "AppData" / "Local")
        return Path(base) / "gpuplan" / "Cache"
    xdg = env.get("XDG_CACHE_HOME")
    return (Path(xdg) if xdg else home / ".cache") / "gpuplan"
