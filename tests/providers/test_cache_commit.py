"""The price cache under concurrency, crashes and damage (issue 15, section 3).

* two refreshes at once (threads, and separate processes) never lose a region;
* a failure or a kill at every step of a commit leaves the old or the new snapshot in use, never a
  mix, and the next commit removes every leftover;
* a damaged snapshot (non-UTF-8, truncated or missing file) is detected by the manifest hashes, not
  used (the bundled catalog is, with one warning), and set aside by the next refresh.
"""

from __future__ import annotations

import io
import json
import logging
import os
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest
from aliyun_fakes import FakeTransport, sdk_factory

from gpuplan.providers import cache, cache_commit, refresh
from gpuplan.providers.base import CatalogSnapshot
from gpuplan.providers.status import collect

SRC = Path(__file__).resolve().parents[2] / "src"
STEPS = ("make folder", "write instances.csv", "write prices.csv", "write stock.csv", "write manifest.json",
         "sync folder", "publish folder", "write pointer", "switch pointer", "clean up")


def _snap(region: str, n: int = 1, price: str = "1.5") -> CatalogSnapshot:
    row = {"instance_type": "ecs.gn7i-c8g1.2xlarge", "region": region, "billing": "payg", "price": price,
           "unit": "hour", "currency": "CNY", "as_of": "2026-11-30",
           "source": "https://ecs.example/?Action=DescribePrice", "confidence": "confirmed", "notes": ""}
    return CatalogSnapshot(cloud="alibaba", fetched_at="2026-11-30T00:00:00Z", regions=(region,), source="test",
                           instances=(), prices=tuple(dict(row, billing=b) for b in ("payg", "spot")[:n]))


def _regions(root: Path) -> set[str]:
    manifest = cache.read_manifest(root, "alibaba") or {}
    return set(manifest.get("regions") or {})


def _price_regions(root: Path) -> set[str]:
    rows = cache.read_csv(cache.current_dir(root, "alibaba") / "prices.csv")
    return {r["region"] for r in rows}


def _leftovers(root: Path) -> list[str]:
    return sorted(str(p.relative_to(root)) for p in root.rglob("*") if p.name.endswith(".tmp"))


# ------------------------------------------------------------------------------------ concurrency


def test_concurrent_commits_in_threads_never_lose_a_region(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # Each commit pauses between reading the snapshot in use and writing its own: without the lock,
    # both would merge into the same old snapshot and the second switch would drop the first's region.
    monkeypatch.setattr(cache_commit, "commit_hook", lambda step: time.sleep(0.05) if step == "make folder" else None)
    cache_commit.write_snapshot(_snap("cn-hangzhou"), tmp_path)
    regions = ["cn-shanghai", "cn-beijing", "cn-shenzhen", "cn-hongkong"]
    errors: list[BaseException] = []

    def commit(region: str) -> None:
        try:
            cache_commit.write_snapshot(_snap(region), tmp_path)
        except BaseException as exc:  # noqa: BLE001 - reported by the assertion below
            errors.append(exc)

    threads = [threading.Thread(target=commit, args=(r,)) for r in regions]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=30)
    assert errors == []
    assert _regions(tmp_path) == _price_regions(tmp_path) == {"cn-hangzhou", *regions}
    assert cache.verify_files(tmp_path, "alibaba") == [] and _leftovers(tmp_path) == []


def test_without_the_lock_the_same_race_loses_a_region(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The test above can fail: with the lock taken out, the same interleaving drops a region."""
    from contextlib import nullcontext

    monkeypatch.setattr(cache_commit, "refresh_lock", lambda *a, **k: nullcontext())
    barrier = threading.Barrier(2)
    monkeypatch.setattr(cache_commit, "commit_hook", lambda step: barrier.wait(5) if step == "make folder" else None)

    def commit(region: str) -> None:
        try:
            cache_commit.write_snapshot(_snap(region), tmp_path)
        except OSError:  # without the lock, one commit may also trip over the other's clean-up
            pass

    threads = [threading.Thread(target=commit, args=(r,)) for r in ("r1", "r2")]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=30)
    assert _regions(tmp_path) != {"r1", "r2"}  # at least one region lost (or both commits broken)


_CHILD = """
import sys, time
sys.path.insert(0, {src!r})
from gpuplan.providers import cache_commit
from gpuplan.providers.base import CatalogSnapshot
region, root, start = sys.argv[1], sys.argv[2], float(sys.argv[3])
row = {{"instance_type": "ecs.gn7i-c8g1.2xlarge", "region": region, "billing": "payg", "price": "2",
       "unit": "hour", "currency": "CNY", "as_of": "2026-11-30", "source": "https://e/?Action=DescribePrice",
       "confidence": "confirmed", "notes": ""}}
snap = CatalogSnapshot(cloud="alibaba", fetched_at="2026-11-30T00:00:00Z", regions=(region,), source="test",
                       instances=(), prices=(row,))
cache_commit.commit_hook = lambda step: time.sleep(0.1) if step == "make folder" else None
time.sleep(max(0.0, start - time.time()))
cache_commit.write_snapshot(snap, root)
"""


def test_concurrent_refresh_processes_never_lose_a_region(tmp_path: Path) -> None:
    script = tmp_path / "child.py"
    script.write_text(_CHILD.format(src=str(SRC)))
    start = time.time() + 1.5  # every child starts its commit at the same moment
    regions = ["cn-shanghai", "cn-beijing", "cn-shenzhen"]
    procs = [subprocess.Popen([sys.executable, str(script), r, str(tmp_path), str(start)]) for r in regions]
    assert [p.wait(timeout=60) for p in procs] == [0, 0, 0]
    assert _regions(tmp_path) == _price_regions(tmp_path) == set(regions)
    assert cache.verify_files(tmp_path, "alibaba") == [] and _leftovers(tmp_path) == []


def test_two_refreshes_through_the_fake_api_keep_both_regions(transport: FakeTransport, cache_dir: Path) -> None:
    transport.delay_s = 0.002
    results: list[int] = []

    def run(region: str) -> None:
        out = io.StringIO()
        results.append(refresh([region], False, cache_dir=cache_dir, client_factory=sdk_factory(FakeTransport()),
                               progress=False, out=out, sleep=lambda s: None))

    threads = [threading.Thread(target=run, args=(r,)) for r in ("cn-shanghai", "cn-beijing")]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=60)
    assert results == [0, 0]
    assert _regions(cache_dir) == _price_regions(cache_dir) == {"cn-shanghai", "cn-beijing"}


# ------------------------------------------------------------------------------------ crashes


@pytest.mark.parametrize("step", STEPS)
def test_a_failure_at_any_commit_step_leaves_old_or_new(step: str, tmp_path: Path,
                                                        monkeypatch: pytest.MonkeyPatch) -> None:
    cache_commit.write_snapshot(_snap("r1"), tmp_path)

    def boom(at: str) -> None:
        if at == step:
            raise OSError(5, f"injected failure at {at}")

    monkeypatch.setattr(cache_commit, "commit_hook", boom)
    with pytest.raises(OSError):
        cache_commit.write_snapshot(_snap("r2"), tmp_path)
    committed = STEPS.index(step) > STEPS.index("switch pointer")
    assert _regions(tmp_path) == _price_regions(tmp_path) == ({"r1", "r2"} if committed else {"r1"})
    assert cache.verify_files(tmp_path, "alibaba") == []
    assert _leftovers(tmp_path) == []  # the failed commit removed its own temporary files


_KILLED = """
import os, sys
sys.path.insert(0, {src!r})
from gpuplan.providers import cache_commit
from gpuplan.providers.base import CatalogSnapshot
row = {{"instance_type": "ecs.gn7i-c8g1.2xlarge", "region": "r2", "billing": "payg", "price": "2", "unit": "hour",
       "currency": "CNY", "as_of": "2026-11-30", "source": "https://e/?Action=DescribePrice",
       "confidence": "confirmed", "notes": ""}}
snap = CatalogSnapshot(cloud="alibaba", fetched_at="2026-11-30T00:00:00Z", regions=("r2",), source="test",
                       instances=(), prices=(row,))
cache_commit.commit_hook = lambda step: os._exit(9) if step == sys.argv[2] else None
cache_commit.write_snapshot(snap, sys.argv[1])
"""


def test_a_kill_at_any_commit_step_leaves_old_or_new_and_the_next_commit_cleans_up(tmp_path: Path) -> None:
    script = tmp_path / "killed.py"
    script.write_text(_KILLED.format(src=str(SRC)))
    seen = {}
    for step in STEPS:
        root = tmp_path / step.replace(" ", "-")
        cache_commit.write_snapshot(_snap("r1"), root)
        rc = subprocess.run([sys.executable, str(script), str(root), step], timeout=60, check=False).returncode
        assert rc == 9, step
        regions = _regions(root)
        assert regions == _price_regions(root), step  # files and manifest from the same commit
        assert regions in ({"r1"}, {"r1", "r2"}), step
        assert cache.verify_files(root, "alibaba") == [], step
        seen[step] = regions
        cache_commit.write_snapshot(_snap("r3"), root)  # the next commit removes what the killed one left
        assert _leftovers(root) == [], step
        assert len(list((root / "clouds" / "alibaba" / "snapshots").iterdir())) <= 2, step
        assert _regions(root) == regions | {"r3"}, step
    assert seen["write pointer"] == {"r1"} and seen["clean up"] == {"r1", "r2"}


# ------------------------------------------------------------------------------------ damage


def _damage(folder: Path, how: str) -> None:
    path = folder / "prices.csv"
    if how == "not utf-8":
        path.write_bytes(path.read_bytes().replace(b"CNY", b"\xff\xfeY"))
    elif how == "truncated":
        path.write_bytes(path.read_bytes()[:-20])
    elif how == "missing":
        path.unlink()
    elif how == "manifest":
        (folder / "manifest.json").write_text("{not json")


@pytest.mark.parametrize("how", ["not utf-8", "truncated", "missing", "manifest"])
def test_a_damaged_cache_is_not_used_and_is_set_aside_by_the_next_refresh(
        how: str, tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    prices = pytest.importorskip("gpuplan.catalog.prices.prices")
    cache_commit.write_snapshot(_snap("cn-shanghai", price="3.33"), tmp_path)
    assert {o.origin for o in prices.load_offers("alibaba", tmp_path)} >= {"cache"}
    folder = cache.current_dir(tmp_path, "alibaba")
    _damage(folder, how)

    with caplog.at_level(logging.WARNING, logger="gpuplan"):
        offers = prices.load_offers("alibaba", tmp_path)
    assert "cache" not in {o.origin for o in offers}  # the bundled catalog, not half a cache
    assert "damaged" in caplog.text and "gpuplan catalog refresh" in caplog.text
    report = collect(tmp_path)["clouds"]["alibaba"]
    assert report["prices_from"] == "bundled" and report["cache"] is None or report["cache"]["inconsistent_files"]

    notes: list[str] = []
    new = cache_commit.write_snapshot(_snap("cn-beijing"), tmp_path, notes=notes)
    assert notes and "damaged" in notes[0] and "set aside" in notes[0]
    assert (folder.parent / f"damaged-{folder.name}").is_dir() and not folder.exists()
    assert cache.current_dir(tmp_path, "alibaba") == new
    assert _regions(tmp_path) == {"cn-beijing"} and cache.verify_files(tmp_path, "alibaba") == []
    assert any(o.origin == "cache" and o.region == "cn-beijing" for o in prices.load_offers("alibaba", tmp_path))


def test_refresh_over_a_damaged_cache_repairs_it(transport: FakeTransport, cache_dir: Path) -> None:
    out = io.StringIO()
    assert refresh(["cn-shanghai"], False, cache_dir=cache_dir, client_factory=sdk_factory(transport),
                   progress=False, out=out, sleep=lambda s: None) == 0
    _damage(cache.current_dir(cache_dir, "alibaba"), "not utf-8")
    out = io.StringIO()
    rc = refresh(["cn-shanghai"], False, cache_dir=cache_dir, client_factory=sdk_factory(FakeTransport()),
                 progress=False, out=out, sleep=lambda s: None)
    assert rc == 0, out.getvalue()
    assert "warning: the cached snapshot was damaged" in out.getvalue()
    assert cache.verify_files(cache_dir, "alibaba") == [] and _price_regions(cache_dir) == {"cn-shanghai"}


def test_a_hand_made_overlay_without_snapshots_is_still_read(tmp_path: Path) -> None:
    prices = pytest.importorskip("gpuplan.catalog.prices.prices")
    folder = tmp_path / "clouds" / "alibaba"
    folder.mkdir(parents=True)
    (folder / "prices.csv").write_text(
        "instance_type,region,billing,price,unit,currency,as_of,source,confidence,notes\n"
        "ecs.gn7i-c8g1.2xlarge,cn-shanghai,payg,8.88,hour,CNY,2026-10-01,https://x,confirmed,\n")
    assert [o.price for o in prices.load_offers("alibaba", tmp_path)
            if o.origin == "cache" and o.instance_type == "ecs.gn7i-c8g1.2xlarge"] == [8.88]
    cache_commit.write_snapshot(_snap("cn-beijing"), tmp_path)  # the first refresh takes it over
    assert _price_regions(tmp_path) == {"cn-shanghai", "cn-beijing"} and not (folder / "prices.csv").exists()


# ------------------------------------------------------------------------------------ refresh output


def test_without_credentials_one_line_on_stderr_and_a_json_form(capsys: pytest.CaptureFixture[str],
                                                                tmp_path: Path) -> None:
    pytest.importorskip("alibabacloud_ecs20140526")
    t0 = time.monotonic()
    assert refresh(["cn-shanghai"], False, cache_dir=tmp_path / "c", progress=False) == 2
    captured = capsys.readouterr()
    assert captured.out == "" and len(captured.err.splitlines()) == 1
    assert captured.err.startswith("error: No Alibaba Cloud credentials found")
    assert refresh(["cn-shanghai"], False, cache_dir=tmp_path / "c", progress=False, as_json=True) == 2
    captured = capsys.readouterr()
    doc = json.loads(captured.out)
    assert doc["exit_code"] == 2 and "ALIBABA_CLOUD_ACCESS_KEY_ID" in doc["error"] and captured.err == ""
    assert time.monotonic() - t0 < 10  # no metadata-service probing, no waiting
    assert not (tmp_path / "c").exists()


def test_refresh_json_on_success(transport: FakeTransport, cache_dir: Path) -> None:
    out = io.StringIO()
    assert refresh(["cn-shanghai"], False, cache_dir=cache_dir, client_factory=sdk_factory(transport),
                   progress=False, out=out, as_json=True, sleep=lambda s: None) == 0
    doc = json.loads(out.getvalue())
    assert doc["ok"] is True and doc["regions"] == ["cn-shanghai"] and doc["prices"] > 0
    assert doc["cache"] == str(cache.current_dir(cache_dir, "alibaba"))


def test_a_dead_endpoint_gives_up_within_the_timeout(transport: FakeTransport, cache_dir: Path) -> None:
    import requests
    from darabonba.exceptions import UnretryableException
    from darabonba.policy.retry import RetryPolicyContext

    transport.always_fail["DescribeRegions"] = UnretryableException(
        RetryPolicyContext(retries_attempted=1, exception=requests.exceptions.ConnectTimeout("connect timed out")))
    out = io.StringIO()
    t0 = time.monotonic()
    rc = refresh(["cn-shanghai"], False, cache_dir=cache_dir, client_factory=sdk_factory(transport),
                 progress=False, out=out, timeout_s=1.0)  # real sleeps: the backoff meets the deadline
    assert rc == 1 and "did not answer in time" in out.getvalue()
    assert time.monotonic() - t0 < 3.0
    assert len(out.getvalue().splitlines()) == 2  # error + hint


def test_retries_are_reported_as_they_happen() -> None:
    from gpuplan.providers.retry import call_with_retries

    told: list[tuple[int, str, float]] = []
    calls = iter([TimeoutError("t"), TimeoutError("t"), "ok"])

    def fn() -> str:
        item = next(calls)
        if isinstance(item, Exception):
            raise item
        return item

    assert call_with_retries(fn, sleep=lambda s: None, on_retry=lambda a, k, d: told.append((a, k, d))) == "ok"
    assert [(a, k) for a, k, _ in told] == [(1, "timeout"), (2, "timeout")]


def test_progress_notes_go_to_stderr(capsys: pytest.CaptureFixture[str]) -> None:
    from gpuplan.providers.alibaba import _Progress

    with _Progress(True, "Alibaba Cloud") as bar:
        bar.note("DescribeRegions in cn-hangzhou: timeout; retry 1/4 in 0.4 s")
    captured = capsys.readouterr()
    assert "retry 1/4" in captured.err and captured.out == ""


def test_the_lock_times_out_with_a_clear_error(tmp_path: Path) -> None:
    from filelock import FileLock

    folder = tmp_path / "clouds" / "alibaba"
    folder.mkdir(parents=True)
    holder = FileLock(str(folder / cache.LOCK))
    holder.acquire()
    try:
        result: list[BaseException] = []
        t = threading.Thread(target=lambda: _expect_busy(tmp_path, result))
        t.start()
        t.join(timeout=10)
        assert result and isinstance(result[0], cache.CacheBusy)
    finally:
        holder.release()
    assert os.listdir(folder) == [cache.LOCK]


def _expect_busy(root: Path, result: list[BaseException]) -> None:
    try:
        cache_commit.write_snapshot(_snap("r1"), root, lock_timeout_s=0.2)
    except BaseException as exc:  # noqa: BLE001 - inspected by the test
        result.append(exc)
