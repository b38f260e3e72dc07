"""Issue 31: `gpuplan catalog import FILE` keeps the buyer's own prices (a price CSV, a DescribePrice answer
saved from Alibaba's API explorer, an Alibaba bill export), checks the whole file first, and the kept rows
win over the bundled and refreshed prices in every answer (CLI, Python API, REST, plan bundle) until
removed. The fixtures follow the documented shapes (tests/fixtures/prices/: the DescribePrice answer of ECS
API 2014-05-26, and a bill with the Chinese site's column names)."""

from __future__ import annotations

import datetime as dt
import json
from pathlib import Path

import pytest

from clirun import run_cli as _run
from gpuplan.catalog.prices.alibaba_quotes import QuoteContext
from gpuplan.catalog.prices.price_files import import_prices, read_price_file
from gpuplan.catalog.prices.prices import load_offers, offers_for
from gpuplan.errors import GpuplanError
from gpuplan.providers.imported import import_files, remove

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "prices"
TODAY = dt.date.today()
QUOTED = (TODAY - dt.timedelta(days=2)).isoformat()
HEADER = "cloud,instance_type,region,billing,price,currency,unit,date,source"


class _Result:
    def __init__(self, code: int, out: str, err: str):
        self.exit_code, self.output, self.stdout = code, out + err, out


def run_cli(args: list[str]) -> _Result:
    return _Result(*_run(*args, *(["--lang", "en"] if "--lang" not in args else [])))


def _csv(path: Path, *rows: str) -> Path:
    path.write_text(HEADER + "\n" + "".join(r + "\n" for r in rows), encoding="utf-8")
    return path


@pytest.fixture
def cache(tmp_path, monkeypatch):
    folder = tmp_path / "cache"
    monkeypatch.setenv("GPUPLAN_CACHE_DIR", str(folder))
    return folder


# ----------------------------------------------------------------------------- the three formats


def test_price_csv_is_kept_as_the_buyers_own_quote(tmp_path, cache):
    quote = _csv(tmp_path / "quote.csv",
                 f"alibaba,ecs.gn6i-c4g1.xlarge,cn-shanghai,subscription,1500,CNY,month,{QUOTED},console quote",
                 f"alibaba,gn7i-c8g1.2xlarge,cn-shanghai,payg,7.5,RMB,hour,{QUOTED},console quote")
    result = import_prices(quote)
    assert result.stored == cache / "imports" / "quote.csv.csv" and result.stored.is_file()
    kept = {o.instance_type: o for o in result.file.offers}
    assert set(kept) == {"ecs.gn6i-c4g1.xlarge", "ecs.gn7i-c8g1.2xlarge"}   # names made canonical
    o = kept["ecs.gn7i-c8g1.2xlarge"]
    assert (o.price, o.currency, o.basis, o.kind, o.confidence) == (7.5, "CNY", "quoted", "user", "confirmed")
    assert o.origin == "import:quote.csv" and o.as_of.isoformat() == QUOTED
    assert o.source == f"your own price: quote.csv, imported {dt.date.today().isoformat()}"   # today, not at collection
    assert "your source: console quote" in o.notes


def test_describe_price_answer_takes_type_region_and_billing_from_flags_and_says_so(cache):
    answer = FIXTURES / "describe_price_gn8is.json"
    with pytest.raises(GpuplanError) as err:   # the answer does not say what was asked
        import_prices(answer)
    assert "--instance-type" in err.value.message and "--region" in err.value.message
    assert not import_files(cache)
    ctx = QuoteContext(instance_type="gn8is.2xlarge", region="cn-shanghai", billing="payg")
    result = import_prices(answer, ctx=ctx)
    (o,) = result.file.offers
    # the instanceType line's TradePrice (the account's price, the system disk left out), dated today
    assert (o.instance_type, o.region, o.billing, o.price, o.unit) == (
        "ecs.gn8is.2xlarge", "cn-shanghai", "payg", 13.75, "hour")
    assert o.as_of == dt.date.today() and o.source.startswith("your own DescribePrice quote: describe_price_gn8is.json")
    assert "list price 15.28" in o.notes
    assert any("(command line)" in n and "the import date" in n for n in result.file.notes)


def test_describe_price_answer_with_the_request_saved_next_to_it(cache):
    result = import_prices(FIXTURES / "describe_price_wrapped.json")
    (o,) = result.file.offers
    # PriceUnit Month, Period 3: CNY 11,340 for three months of the instance line = 3,780 per month
    assert (o.instance_type, o.region, o.billing, o.unit) == ("ecs.gn7i-c8g1.2xlarge", "cn-hangzhou",
                                                             "subscription", "month")
    assert o.price == pytest.approx(11340.0 / 3) and o.as_of == dt.date(2026, 11, 28)
    assert any("(the file)" in n for n in result.file.notes)
    with pytest.raises(GpuplanError, match="on the command line but 'cn-hangzhou' in the file"):
        import_prices(FIXTURES / "describe_price_wrapped.json", ctx=QuoteContext(region="cn-beijing"))


def test_bill_export_derives_the_hourly_price_from_amount_and_usage(cache):
    result = import_prices(FIXTURES / "bill_detail_zh.csv", today=dt.date(2026, 12, 3))
    (o,) = result.file.offers
    # three one-hour instance lines of gn8is.2xlarge: 13.5 + (13.0 + 0.5 coupon) + 13.5 = 40.5 over 3 h;
    # the system disk, the g7 (no GPU) and the bandwidth lines are left out and counted
    assert (o.instance_type, o.region, o.billing, o.price, o.currency) == (
        "ecs.gn8is.2xlarge", "cn-shanghai", "payg", pytest.approx(13.5), "CNY")
    assert o.as_of == dt.date(2026, 11, 20) and o.basis == "quoted" and o.kind == "user"
    assert "derived from the bill" in o.source and "derived from your bill: CNY 40.50 over 3.00 h" in o.notes
    notes = " | ".join(result.file.notes)
    assert "CNY assumed" in notes and "ecs.g7.large" in notes and "3, 7" in notes


def test_dry_run_checks_and_keeps_nothing(tmp_path, cache):
    quote = _csv(tmp_path / "q.csv", f"alibaba,ecs.gn6i-c4g1.xlarge,cn-shanghai,payg,3,CNY,hour,{QUOTED},q")
    result = import_prices(quote, dry_run=True)
    assert result.stored is None and not import_files(cache)
    assert result.file.offers[0].source.startswith("your own price: q.csv")


# ----------------------------------------------------------------------------- nothing stored on bad input


@pytest.mark.parametrize("row, message", [
    (f"alibaba,ecs.gn7i-c8g1.2xlarg,cn-shanghai,payg,7,CNY,hour,{QUOTED},x", "Unknown instance type"),
    (f"alibaba,ecs.gn7i-c8g1.2xlarge,cn-shangai,payg,7,CNY,hour,{QUOTED},x", "unknown alibaba region 'cn-shangai'"),
    (f"alibaba,ecs.gn7i-c8g1.2xlarge,cn-shanghai,payg,-7,CNY,hour,{QUOTED},x", "price must be > 0"),
    (f"alibaba,ecs.gn7i-c8g1.2xlarge,cn-shanghai,payg,0,CNY,hour,{QUOTED},x", "price must be > 0"),
    ("alibaba,ecs.gn7i-c8g1.2xlarge,cn-shanghai,payg,7,CNY,hour,2026-13-01,x", "the date must look like"),
    ("alibaba,ecs.gn7i-c8g1.2xlarge,cn-shanghai,payg,7,CNY,hour,2999-01-01,x", "is in the future"),
    (f"alibaba,ecs.gn7i-c8g1.2xlarge,cn-shanghai,payg,7,EUR,hour,{QUOTED},x", "unknown currency 'EUR'"),
    (f"alibaba,ecs.gn7i-c8g1.2xlarge,cn-shanghai,hourly,7,CNY,hour,{QUOTED},x", "unknown billing mode 'hourly'"),
])
def test_a_bad_row_exits_2_naming_its_line_and_nothing_changes(tmp_path, cache, row, message):
    good = _csv(tmp_path / "good.csv", f"alibaba,ecs.gn6i-c4g1.xlarge,cn-shanghai,payg,3,CNY,hour,{QUOTED},q")
    import_prices(good)
    before = {p.name: p.read_bytes() for p in import_files(cache)}
    bad = _csv(tmp_path / "good.csv", f"alibaba,ecs.gn6i-c4g1.xlarge,cn-shanghai,payg,4,CNY,hour,{QUOTED},q", row)
    r = run_cli(["catalog", "import", str(bad)])
    assert r.exit_code == 2, r.output
    assert "good.csv, line 3" in r.output and message in r.output and "Nothing was imported" in r.output
    assert {p.name: p.read_bytes() for p in import_files(cache)} == before   # the earlier import is untouched
    if "Unknown instance type" in message:
        assert "ecs.gn7i-c8g1.2xlarge" in r.output   # did you mean
    if "region" in message:
        assert "Did you mean 'cn-shanghai'" in r.output


def test_every_problem_of_a_file_is_counted_in_one_error(tmp_path, cache):
    bad = _csv(tmp_path / "b.csv", f"alibaba,ecs.nope,cn-shanghai,payg,4,CNY,hour,{QUOTED},q",
               f"alibaba,ecs.gn6i-c4g1.xlarge,cn-shanghai,payg,0,CNY,hour,{QUOTED},q",
               f"alibaba,ecs.gn6i-c4g1.xlarge,cn-shanghai,payg,1,XYZ,hour,{QUOTED},q")
    with pytest.raises(GpuplanError) as err:
        import_prices(bad)
    assert "b.csv, line 2" in err.value.message and "2 more problem(s): b.csv, line 3; b.csv, line 4" in err.value.message
    assert not import_files(cache)


def test_a_refund_line_in_a_bill_names_its_line(tmp_path, cache):
    text = (FIXTURES / "bill_detail_zh.csv").read_text(encoding="utf-8-sig").splitlines()
    cells = text[3].split(",")
    amount = text[0].split(",").index("应付金额")
    cells[amount] = "-13.0"
    text[3] = ",".join(cells)
    (tmp_path / "bill.csv").write_text("\n".join(text) + "\n", encoding="utf-8")
    with pytest.raises(GpuplanError) as err:
        import_prices(tmp_path / "bill.csv", today=dt.date(2026, 12, 3))
    assert "bill.csv, line 4" in err.value.message and "refund" in err.value.message
    assert not import_files(cache)


def test_prices_flag_goes_through_the_same_validator(tmp_path):
    # --prices FILE: one command, the same formats and checks, nothing kept
    offers = read_price_file(FIXTURES / "describe_price_wrapped.json").offers
    assert offers[0].origin == "user:describe_price_wrapped.json" and offers[0].kind == "user"
    bad = _csv(tmp_path / "p.csv", f"alibaba,ecs.gn7i-c8g1.2xlarge,cn-shangai,payg,7,CNY,hour,{QUOTED},x")
    with pytest.raises(GpuplanError, match="p.csv, line 2: unknown alibaba region"):
        load_offers(extra_files=[bad])


# ----------------------------------------------------------------------------- the overlay and removal


def test_imported_rows_win_over_bundled_and_refreshed_rows_and_prices_flag_wins_over_them(tmp_path, cache):
    refreshed = cache / "clouds" / "alibaba" / "prices.csv"
    refreshed.parent.mkdir(parents=True)
    refreshed.write_text("instance_type,region,billing,price,unit,currency,as_of,source,confidence,notes\n"
                         "ecs.gn7i-c8g1.2xlarge,cn-shanghai,payg,8.88,hour,CNY,2026-11-01,DescribePrice,confirmed,\n",
                         encoding="utf-8")
    assert [o.price for o in offers_for("gn7i-c8g1.2xlarge", "cn-shanghai", "payg")] == [8.88]
    import_prices(_csv(tmp_path / "quote.csv", f"alibaba,ecs.gn7i-c8g1.2xlarge,cn-shanghai,payg,7.5,CNY,hour,{QUOTED},q"))
    assert [(o.price, o.origin) for o in offers_for("gn7i-c8g1.2xlarge", "cn-shanghai", "payg")] == [
        (7.5, "import:quote.csv")]
    one_shot = _csv(tmp_path / "mine.csv", f"alibaba,ecs.gn7i-c8g1.2xlarge,cn-shanghai,payg,6,CNY,hour,{QUOTED},m")
    assert [o.price for o in offers_for("gn7i-c8g1.2xlarge", "cn-shanghai", "payg", extra_files=[one_shot])] == [6.0]


def test_status_lists_the_imports_and_forget_removes_them(tmp_path, cache):
    import_prices(_csv(tmp_path / "a.csv", f"alibaba,ecs.gn7i-c8g1.2xlarge,cn-shanghai,payg,7.5,CNY,hour,{QUOTED},q",
                       f"alibaba,ecs.gn6i-c4g1.xlarge,cn-shanghai,payg,3,CNY,hour,{QUOTED},q"))
    import_prices(_csv(tmp_path / "b.csv", f"alibaba,ecs.gn6i-c4g1.xlarge,cn-beijing,payg,3.1,CNY,hour,{QUOTED},q"))
    status = run_cli(["catalog", "status", "--json"])
    doc = json.loads(status.stdout)
    assert [i["import"] for i in doc["imports"]] == ["a.csv", "b.csv"] and doc["clouds"]["alibaba"]["imported"] == 3
    text = run_cli(["catalog", "status"]).output
    assert "Your imported prices" in text and "ecs.gn6i-c4g1.xlarge cn-beijing payg: CNY 3.1/h" in text
    # by type, across files
    r = run_cli(["catalog", "forget", "--instance-type", "gn6i-c4g1.xlarge"])
    assert r.exit_code == 0 and "Removed 2 imported price(s)" in r.output
    assert [p.name for p in import_files(cache)] == ["a.csv.csv"]
    assert offers_for("gn6i-c4g1.xlarge", "cn-beijing", "payg")[0].origin == "bundled"
    # by file, then all
    import_prices(_csv(tmp_path / "b.csv", f"alibaba,ecs.gn6i-c4g1.xlarge,cn-beijing,payg,3.1,CNY,hour,{QUOTED},q"))
    assert run_cli(["catalog", "import", "--remove", str(tmp_path / "b.csv")]).exit_code == 0
    assert [p.name for p in import_files(cache)] == ["a.csv.csv"]
    assert len(remove()) == 1 and not import_files(cache)
    assert offers_for("gn7i-c8g1.2xlarge", "cn-shanghai", "payg")[0].origin == "bundled"


def test_cli_import_prints_what_it_kept(tmp_path, cache):
    quote = _csv(tmp_path / "quote.csv", f"alibaba,ecs.gn7i-c8g1.2xlarge,cn-shanghai,payg,7.5,CNY,hour,{QUOTED},q")
    r = run_cli(["catalog", "import", str(quote)])
    assert r.exit_code == 0 and "Imported 1 price(s) from quote.csv (price CSV)" in r.output
    assert "your own price: quote.csv, imported" in r.output
    zh = run_cli(["catalog", "import", str(quote), "--lang", "zh", "--dry-run"])
    assert zh.exit_code == 0 and "您自己的价格：quote.csv" in zh.output
    doc = json.loads(run_cli(["catalog", "import", str(quote), "--json"]).stdout)
    assert doc["format"] == "csv" and doc["prices"][0]["origin"] == "import:quote.csv"
