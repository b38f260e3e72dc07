"""Price offers, pinned to the June 2023 cn-shanghai console snapshot (https://arthurchiao.art/blog/gpu-prices/)."""

from __future__ import annotations

import datetime as dt

import pytest

from gpuplan.catalog.hardware.instances import load_instances
from gpuplan.catalog.prices.prices import PRICE_COLUMNS, PRICE_KINDS, load_offers, offers_for, price_note
from gpuplan.errors import GpuplanError

TODAY = dt.date(2026, 11, 29)
S13 = "https://arthurchiao.art/blog/gpu-prices/"



def _offer(instance_type, billing, as_of=None, **kw):
    hits = [o for o in offers_for(instance_type, region="cn-shanghai", billing=billing, **kw)
            if as_of is None or o.as_of == as_of]
    assert hits, (instance_type, billing)
    return hits[0]


def test_every_price_is_dated_sourced_positive_and_for_a_known_type():
    offers = load_offers("alibaba")
    known = load_instances()
    for o in offers:
        assert o.as_of and o.source and o.price > 0
        assert o.instance_type in known
        assert o.kind in PRICE_KINDS and o.kind != "user"
        assert o.basis == "quoted" or o.rule, o  # a derived or guessed price always says its rule
        assert o.confidence == "unconfirmed"       # no official Alibaba price list is bundled
        assert o.currency == ("CNY" if o.region.startswith("cn-") else "USD")
        assert o.unit == {"payg": "hour", "subscription": "month", "spot": "hour"}[o.billing]
    # quoted: the 2023 cn-shanghai list (60 rows, a third party's copy of the console) and the 2026
    # DescribePrice quotes (5); guessed: the gn8v/sgn8ia code table (5, no region stated); derived: the
    # gn8is invoices (3)
    quoted = [o for o in offers if o.basis == "quoted"]
    assert len(quoted) == 60 + 5 and all(o.kind == "third-party" for o in quoted)
    assert len([o for o in offers if o.basis == "guessed" and o.kind != "estimated"]) == 5
    assert len([o for o in offers if o.basis == "derived" and o.kind != "estimated"]) == 3


def test_snapshot_values_2023():
    snap = dt.date(2023, 6, 1)
    a10 = _offer("ecs.gn7i-c8g1.2xlarge", "payg", snap)
    assert (a10.price, a10.unit, a10.source) == (9.53, "hour", S13)
    assert _offer("gn7i-c8g1.2xlarge", "subscription", snap).price == 4575.66
    assert _offer("ecs.ebmgn7e.32xlarge", "payg", snap).price == 277.93
    assert _offer("ecs.gn7e-c16g1.4xlarge", "subscription", snap).price == 16676.0
    assert _offer("ecs.gn6i-c40g1.10xlarge", "payg", snap).price == 14.81  # as published, below c24g1.6xlarge


def test_spot_checks_2026_are_separate_unconfirmed_rows():
    rows = offers_for("ecs.gn7i-c8g1.2xlarge", region="cn-shanghai", billing="payg")
    assert [(o.as_of.isoformat(), o.price) for o in rows] == [("2026-09-24", 9.74), ("2023-06-01", 9.53)]
    l20 = offers_for("ecs.gn8is.2xlarge", region="cn-shanghai")
    assert {(o.billing, o.price) for o in l20} == {("payg", 14.63), ("subscription", 7019.25)}
    assert all("Shenzhen" in o.notes and o.confidence == "unconfirmed" and o.kind == "third-party" for o in l20)


def test_no_price_is_an_empty_list_never_zero():
    assert offers_for("ecs.gn7r-c16g1.4xlarge") == []  # A16: no price, and no priced type with the same GPU
    assert all(o.price > 0 for o in load_offers())


def test_monthly_and_hourly_conversions_use_730_hours():
    month = _offer("ecs.gn7i-c8g1.2xlarge", "subscription", dt.date(2023, 6, 1))
    assert month.price_per_hour == pytest.approx(4575.66 / 730)
    assert month.price_per_month == 4575.66
    hour = _offer("ecs.gn7i-c8g1.2xlarge", "payg", dt.date(2023, 6, 1))
    assert hour.price_per_month == pytest.approx(9.53 * 730)


def test_staleness_after_180_days():
    old = _offer("ecs.gn7i-c8g1.2xlarge", "payg", dt.date(2023, 6, 1))
    assert old.age_days(TODAY) == 1277 and old.is_stale(TODAY)
    new = _offer("ecs.gn7i-c8g1.2xlarge", "payg", dt.date(2026, 9, 24))
    assert new.age_days(TODAY) == 66 and not new.is_stale(TODAY)
    assert new.is_stale(dt.date(2027, 3, 24)) and not new.is_stale(dt.date(2027, 3, 23))


def test_price_note_text():
    old = _offer("ecs.gn7i-c8g1.2xlarge", "payg", dt.date(2023, 6, 1))
    assert price_note(old, TODAY) == ("CNY 9.53/h, cn-shanghai, as of 2023-06-01 (quoted, third-party copy: third-party "
                                      "console snapshot; 1277 days old — prices may have changed)")
    new = _offer("ecs.gn8is.2xlarge", "subscription")
    assert price_note(new, TODAY) == ("CNY 7,019.25/month, cn-shanghai, as of 2026-09-24 (quoted, third-party copy: "
                                      "third-party spot check; 66 days old)")
    # a derived row says its rule, and its age is its own row's (the price it was computed from)
    ebm = _offer("ecs.ebmgn8is.32xlarge", "payg")
    assert price_note(ebm, TODAY).startswith("CNY 133.04/h, cn-shanghai, as of 2026-09-24 (derived: per-GPU price of "
                                             "ecs.gn8is.2xlarge")


def test_to_dict_is_json_ready():
    d = _offer("ecs.gn7i-c8g1.2xlarge", "payg").to_dict()
    assert d["as_of"] == "2026-09-24" and d["price_per_hour"] == 9.74 and d["origin"] == "bundled"


# ----------------------------------------------------------------------------- overlays


_HEADER = ",".join(PRICE_COLUMNS)


def _write(path, rows, header=_HEADER):
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(header + "\n" + "".join(r + "\n" for r in rows), encoding="utf-8")
    return path


def test_cache_prices_replace_the_bundled_price(tmp_path):
    _write(tmp_path / "clouds" / "alibaba" / "prices.csv",
           ["ecs.gn7i-c8g1.2xlarge,cn-shanghai,payg,8.88,hour,CNY,2026-11-01,DescribePrice,confirmed,live"])
    payg = offers_for("gn7i-c8g1.2xlarge", region="cn-shanghai", billing="payg", cache_dir=tmp_path)
    assert [(o.price, o.origin, o.kind) for o in payg] == [(8.88, "cache", "official")]  # both bundled rows replaced
    sub = offers_for("gn7i-c8g1.2xlarge", region="cn-shanghai", billing="subscription", cache_dir=tmp_path)
    assert {o.price for o in sub} == {4575.66, 4675.66}  # other billing modes untouched
    assert "live refresh" in price_note(payg[0], TODAY)
    # the bundled view is unchanged
    assert 8.88 not in {o.price for o in offers_for("gn7i-c8g1.2xlarge", billing="payg")}


def test_user_price_file_overrides_cache_and_fills_defaults(tmp_path):
    cache = tmp_path / "cache"
    _write(cache / "clouds" / "alibaba" / "prices.csv",
           ["ecs.gn7i-c8g1.2xlarge,cn-shanghai,payg,8.88,hour,CNY,2026-11-01,DescribePrice,confirmed,"])
    user = _write(tmp_path / "mine.csv", ["GN7I-C8G1.2XLARGE,cn-shanghai,payg,5.5,hour,CNY,2026-10-01",
                                          "gn8v.4xlarge,cn-hongkong,spot,600,month,USD,2026-10-01"],
                  header="instance_type,region,billing,price,unit,currency,as_of")
    offers = offers_for("gn7i-c8g1.2xlarge", region="cn-shanghai", billing="payg", cache_dir=cache, extra_files=[user])
    assert [(o.price, o.confidence, o.origin, o.kind) for o in offers] == [(5.5, "confirmed", "user:mine.csv", "user")]
    assert offers[0].source == "user price file mine.csv"
    hk = offers_for("gn8v.4xlarge", cache_dir=cache, extra_files=[user])
    assert (hk[0].currency, hk[0].region, hk[0].billing) == ("USD", "cn-hongkong", "spot")
    assert "your price file mine.csv" in price_note(hk[0], TODAY)


@pytest.mark.parametrize("row, message", [
    ("ecs.gn7i-c8g1.2xlarge,cn-shanghai,payg,0,hour,CNY,2026-10-01", "price must be > 0"),
    ("ecs.gn7i-c8g1.2xlarge,cn-shanghai,payg,abc,hour,CNY,2026-10-01", "not a number"),
    ("ecs.gn7i-c8g1.2xlarge,cn-shanghai,payg,1,hour,CNY,01/10/2026", "the date must look like 2026-11-30"),
    ("ecs.gn7i-c8g1.2xlarge,cn-shanghai,payg,-1,hour,CNY,2026-10-01", "price must be > 0"),
    ("ecs.gn7i-c8g1.2xlarge,cn-shangai,payg,1,hour,CNY,2026-10-01", "unknown alibaba region 'cn-shangai'"),
    ("ecs.gn7i-c8g1.2xlarge,cn-shanghai,payg,1,hour,HKD,2026-10-01", "unknown currency 'HKD'"),
    ("ecs.gn7i-c8g1.2xlarge,cn-shanghai,payg,1,hour,CNY,2099-10-01", "is in the future"),
    ("ecs.gn7i-c8g1.2xlarge,cn-shanghai,hourly,1,hour,CNY,2026-10-01", "unknown billing mode 'hourly'"),
    ("ecs.gn7i-c8g1.2xlarg,cn-shanghai,payg,1,hour,CNY,2026-10-01", "Unknown instance type"),
])
def test_bad_user_price_file_names_the_line(tmp_path, row, message):
    user = _write(tmp_path / "bad.csv", ["ecs.gn6i-c4g1.xlarge,cn-shanghai,payg,11,hour,CNY,2026-10-01", row],
                  header="instance_type,region,billing,price,unit,currency,as_of")
    with pytest.raises(GpuplanError) as err:
        load_offers(extra_files=[user])
    assert "bad.csv, line 3" in err.value.message and message in err.value.message


def test_user_price_file_column_errors(tmp_path):
    user = _write(tmp_path / "cols.csv", ["ecs.gn6i-c4g1.xlarge,cn-shanghai,payg,11,hour,CNY,2026-10-01,x"],
                  header="instance_type,region,billing,price,unit,currency,as_of,notse")
    with pytest.raises(GpuplanError) as err:
        load_offers(extra_files=[user])
    assert "notse" in err.value.message and "notes" in err.value.hint
    missing = _write(tmp_path / "missing.csv", ["ecs.gn6i-c4g1.xlarge,cn-shanghai,payg,11"],
                     header="instance_type,region,billing,price")
    with pytest.raises(GpuplanError, match="missing column"):
        load_offers(extra_files=[missing])
    with pytest.raises(GpuplanError, match="Cannot read"):
        load_offers(extra_files=[tmp_path / "nope.csv"])


def test_unknown_instance_in_offers_for():
    with pytest.raises(GpuplanError) as err:
        offers_for("gn7e-c16g1.4xlarg")
    assert "ecs.gn7e-c16g1.4xlarge" in err.value.hint
