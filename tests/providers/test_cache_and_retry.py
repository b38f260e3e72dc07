"""Cache location, atomic writes, consistency check; error classification and backoff."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from gpuplan.providers import cache, cache_commit
from gpuplan.providers.base import CatalogSnapshot
from gpuplan.providers.retry import SERVER, THROTTLED, TIMEOUT, backoff_s, call_with_retries, classify


@pytest.mark.parametrize(
    ("env", "platform", "expected"),
    [
        ({"GPUPLAN_CACHE_DIR": "/x/c", "HOME": "/h"}, "linux", "/x/c"),
        ({"HOME": "/h"}, "linux", "/h/.cache/gpuplan"),
        ({"HOME": "/h", "XDG_CACHE_HOME": "/xdg"}, "linux", "/xdg/gpuplan"),
        ({"HOME": "/h"}, "darwin", "/h/Library/Caches/gpuplan"),
        ({"HOME": "/h", "LOCALAPPDATA": "/lad"}, "win32", "/lad/gpuplan/Cache"),
    ],
)
def test_default_cache_dir_follows_the_platform(env: dict, platform: str, expected: str) -> None:
    assert cache.default_cache_dir(env, platform) == Path(expected)


def _snap(prices: int = 1, region: str = "r1") -> CatalogSnapshot:
    row = {"instance_type": "t1", "region": region, "billing": "payg", "price": "1.5", "unit": "hour",
           "currency": "CNY", "as_of": "2026-11-30", "source": "https://e/?Action=DescribePrice",
           "confidence": "confirmed", "notes": ""}
    return CatalogSnapshot(cloud="alibaba", fetched_at="2026-11-30T00:00:00Z", regions=(region,), source="test",
                           instances=(), prices=tuple(dict(row, instance_type=f"t{i}") for i in range(prices)))


def _files(root: Path) -> dict[str, bytes]:
    return {str(p.relative_to(root)): p.read_bytes() for p in sorted(root.rglob("*")) if p.is_file()}


def test_a_failure_while_writing_leaves_the_old_files(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    cache_commit.write_snapshot(_snap(1), tmp_path)
    before = _files(tmp_path)
    real = cache_commit._write_temp
    calls = {"n": 0}

    def flaky(folder_: Path, name: str, text: str) -> Path:
        calls["n"] += 1
        if calls["n"] == 3:
            raise OSError(28, "No space left on device")
        return real(folder_, name, text)

    monkeypatch.setattr(cache_commit, "_write_temp", flaky)
    with pytest.raises(OSError):
        cache_commit.write_snapshot(_snap(3), tmp_path)
    assert _files(tmp_path) == before  # no temp files left either (the lock file is empty and kept)


def test_verify_files_detects_a_changed_file(tmp_path: Path) -> None:
    cache_commit.write_snapshot(_snap(2), tmp_path)
    assert cache.verify_files(tmp_path, "alibaba") == []
    (cache.current_dir(tmp_path, "alibaba") / "prices.csv").write_text("instance_type\n")
    assert cache.verify_files(tmp_path, "alibaba") == ["prices.csv"]


def test_merge_keeps_other_regions(tmp_path: Path) -> None:
    cache_commit.write_snapshot(_snap(2, "r1"), tmp_path)
    cache_commit.write_snapshot(_snap(1, "r2"), tmp_path)
    cache_commit.write_snapshot(_snap(1, "r1"), tmp_path)  # r1 refreshed again: its old rows are replaced
    folder = cache.current_dir(tmp_path, "alibaba")
    text = (folder / "prices.csv").read_text().splitlines()
    assert len(text) == 1 + 2 and sum(",r1," in line for line in text) == 1
    manifest = json.loads((folder / "manifest.json").read_text())
    assert sorted(manifest["regions"]) == ["r1", "r2"]
    # the one in use and the one before it (for readers that resolved the pointer just before)
    assert len([p for p in (tmp_path / "clouds" / "alibaba" / "snapshots").iterdir()]) == 2


class _Exc(Exception):
    def __init__(self, code: str = "", status_code: int | None = None) -> None:
        super().__init__(code)
        self.code = code
        self.status_code = status_code


@pytest.mark.parametrize(
    ("exc", "kind"),
    [
        (_Exc("Throttling.User", 400), THROTTLED),
        (_Exc("Throttling", 503), THROTTLED),
        (_Exc("", 429), THROTTLED),
        (_Exc("ServiceUnavailable", 503), SERVER),
        (_Exc("InternalError", 500), SERVER),
        (TimeoutError("t"), TIMEOUT),
        (_Exc("InvalidAccessKeyId.NotFound", 404), None),
        (ValueError("x"), None),
    ],
)
def test_classify(exc: Exception, kind: str | None) -> None:
    assert classify(exc) == kind


def test_backoff_grows_and_is_capped() -> None:
    assert all(0 <= backoff_s(a, 0.5, 4.0) <= min(4.0, 0.5 * 2 ** a) for a in range(8) for _ in range(20))
    assert backoff_s(0, 0.5, 10.0, retry_after_s=3.0) >= 3.0


def test_permanent_errors_are_not_retried() -> None:
    calls = []

    def boom():
        calls.append(1)
        raise ValueError("bad")

    with pytest.raises(ValueError):
        call_with_retries(boom, sleep=lambda s: None)
    assert calls == [1]
