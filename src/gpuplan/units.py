"""Units and dtype sizes. Base units inside (bytes, FLOPs, seconds); convert only when rendering."""

from __future__ import annotations

KIB = 1024
MIB = 1024**2
GIB = 1024**3
TIB = 1024**4
GB = 1e9
TERA = 1e12
HOUR_S = 3600.0
DAY_S = 86400.0
HOURS_PER_MONTH = 730.0  # 365 * 24 / 12, the convention cloud price calculators use

# Bytes per element for each storage / compute dtype (floats: 4-bit is 0.5).
BYTES_PER_DTYPE: dict[str, float] = {
    "fp32": 4.0,
    "tf32": 4.0,
    "fp16": 2.0,
    "bf16": 2.0,
    "fp8": 1.0,
    "int8": 1.0,
    "int4": 0.5,
    "nf4": 0.5,
}


def gib(n_bytes: float) -> float:
    return n_bytes / GIB


def fmt_bytes(n_bytes: float | None) -> str:
    if n_bytes is None:
        return "-"
    if abs(n_bytes) >= GIB:
        return f"{n_bytes / GIB:.2f} GiB"
    if abs(n_bytes) >= MIB:
        return f"{n_bytes / MIB:.0f} MiB"
    return f"{n_bytes:.0f} B"


def fmt_duration(seconds: float | None) -> str:
    """A duration with its unit, in the current language (``--lang zh``: 毫秒, 秒, 分钟, 小时, 天)."""
    from gpuplan.i18n import _

    if seconds is None:
        return "-"
    if seconds < 1:
        return _("{n} ms").format(n=f"{seconds * 1000:.1f}")
    if seconds < 120:
        return _("{n} s").format(n=f"{seconds:.1f}")
    if seconds < 2 * 3600:
        return _("{n} min").format(n=f"{seconds / 60:.1f}")
    if seconds < 3 * 86400:
        return _("{n} h").format(n=f"{seconds / 3600:.1f}")
    return _("{n} days").format(n=f"{seconds / 86400:.1f}")
