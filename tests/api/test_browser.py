"""The page in a real browser: Playwright driving Debian's Chromium (installed by .ci/run).

Fills the form (model picker search, task, dataset), gets plans, checks both charts are drawn,
switches to Chinese and back, downloads the bundle, reopens the shared URL, shows a field error,
and saves screenshots. Every request the page makes must stay on the local server (no CDN).
Skips only when Chromium or the playwright package is missing. Screenshots go to a temporary
folder; GPUPLAN_UPDATE_SCREENSHOTS=1 also copies them to docs/screenshots/.
"""

from __future__ import annotations

import io
import math
import os
import re
import shutil
import zipfile
from pathlib import Path
from urllib.parse import urlparse

import pytest

from i18n.english import english_sentences  # tests/ is on sys.path (rootdir of the test packages)

CHROMIUM = shutil.which("chromium") or ("/usr/bin/chromium" if Path("/usr/bin/chromium").exists() else None)
if CHROMIUM is None:
    pytest.skip("Chromium is not installed (apt-get install chromium)", allow_module_level=True)
sync_api = pytest.importorskip("playwright.sync_api", reason="the playwright package is not installed")

pytestmark = pytest.mark.slow

ARGS = ["--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run", "--disable-background-networking",
        "--disable-component-update", "--disable-sync"]
DOCS_SHOTS = Path(__file__).resolve().parents[2] / "docs" / "screenshots"


@pytest.fixture(scope="module")
def browser():
    with sync_api.sync_playwright() as p:
        b = p.chromium.launch(executable_path=CHROMIUM, args=ARGS, headless=True)
        yield b
        b.close()


@pytest.fixture()
def page(browser, live_server):
    ctx = browser.new_context(viewport={"width": 1400, "height": 1000}, accept_downloads=True, locale="en-US")
    pg = ctx.new_page()
    pg.set_default_timeout(20_000)
    pg.foreign = []   # requests that left the local server
    pg.errors = []    # console errors and uncaught exceptions
    local = urlparse(live_server).netloc

    def guard(route):
        url = urlparse(route.request.url)
        if url.scheme in ("http", "https") and url.netloc != local:
            pg.foreign.append(route.request.url)
            route.abort()
        else:
            route.continue_()

    pg.route("**/*", guard)
    pg.on("console", lambda m: pg.errors.append(m.text) if m.type == "error" else None)
    pg.on("pageerror", lambda e: pg.errors.append(str(e)))
    yield pg
    ctx.close()


def _settled(pg) -> None:
    """Wait until the page has the answer of its latest search (the language switch asks the API again)."""
    pg.wait_for_selector("body[data-ready=true]:not([data-busy])")


def _save(pg, tmp_path: Path, name: str) -> Path:
    path = tmp_path / name
    pg.screenshot(path=str(path), full_page=True)
    assert path.stat().st_size > 10_000
    if os.environ.get("GPUPLAN_UPDATE_SCREENSHOTS") == "1":
        DOCS_SHOTS.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(path, DOCS_SHOTS / name)
    return path


def test_fill_form_get_plans_charts_language_and_bundle(page, live_server, tmp_path):
    pg = page
    pg.goto(live_server + "/")
    pg.wait_for_selector("body[data-ready=true]")

    # Model picker: typing searches ids and aliases; clicking a hit fills the field.
    pg.fill("#model", "qwen2.5-7b")
    hit = pg.locator('#model-list li[data-id="Qwen/Qwen2.5-7B-Instruct"]')
    hit.wait_for()
    hit.click()
    assert pg.input_value("#model") == "Qwen/Qwen2.5-7B-Instruct"

    pg.select_option("#task", "lora")
    pg.fill("#seq_len", "2048")
    pg.fill("#dataset_tokens", "1e8")
    pg.fill("#deadline_hours", "72")
    pg.click("#submit")
    rows = pg.locator("#plans tbody tr[data-rank]")
    rows.first.wait_for()
    _settled(pg)
    assert rows.count() >= 3
    assert pg.locator("#plans tbody tr.selected").count() == 1
    first_instance = rows.first.locator("td").nth(1).inner_text()
    assert first_instance.startswith("ecs.")

    # Charts: the memory bar has one rect per component, the scatter has points and a front.
    comps = pg.locator("#memory-svg rect[data-component]")
    assert comps.count() >= 3
    assert {comps.nth(i).get_attribute("data-component") for i in range(comps.count())} >= {"weights", "adapters"}
    assert pg.locator("#pareto-svg circle.point").count() >= 2
    assert pg.locator("#pareto-svg circle.front").count() >= 1
    assert pg.locator("#assumptions li").count() >= 3

    # The URL encodes the workload.
    assert "model=Qwen%2FQwen2.5-7B-Instruct" in pg.url and "task=lora" in pg.url and "dataset_tokens=1e8" in pg.url
    shared_url = pg.url
    _save(pg, tmp_path, "web-plans-en.png")

    # Chinese and back: static labels, column heads, the chart legend and the server's sentences change.
    pg.click("#lang-toggle")
    _settled(pg)
    assert pg.inner_text("#submit") == "查找方案"
    assert pg.locator("#plans thead th").nth(1).inner_text() == "实例规格"
    assert "权重" in pg.inner_text("#memory-chart")
    assert pg.evaluate("document.documentElement.lang") == "zh-CN"
    assert "lang=zh" in pg.url
    assert english_sentences(pg.inner_text("#results")) == [], english_sentences(pg.inner_text("#results"))
    _save(pg, tmp_path, "web-plans-zh.png")
    pg.click("#lang-toggle")
    _settled(pg)
    assert pg.inner_text("#submit") == "Find plans"
    assert pg.locator("#plans thead th").nth(1).inner_text() == "Instance"
    assert "lang=zh" not in pg.url

    # Selecting another plan redraws the memory chart; the bundle of that plan downloads as a zip.
    rows = pg.locator("#plans tbody tr[data-rank]")
    rows.nth(1).click()
    assert "selected" in (rows.nth(1).get_attribute("class") or "")
    with pg.expect_download() as dl:
        pg.click("#download")
    target = tmp_path / dl.value.suggested_filename
    dl.value.save_as(str(target))
    assert target.name.endswith("-plan.zip")
    with zipfile.ZipFile(io.BytesIO(target.read_bytes())) as zf:
        names = zf.namelist()
    assert any(n.endswith("/plan.json") for n in names) and any(n.endswith("/PLAN.md") for n in names)

    # The shared URL alone reproduces the result.
    pg.goto(shared_url)
    pg.locator("#plans tbody tr[data-rank]").first.wait_for()
    assert pg.locator("#plans tbody tr[data-rank]").first.locator("td").nth(1).inner_text() == first_instance
    assert pg.input_value("#dataset_tokens") == "1e8"

    assert pg.foreign == [], f"the page tried to load {pg.foreign}"
    assert pg.errors == [], pg.errors


def test_invalid_input_names_the_field(page, live_server, tmp_path):
    pg = page
    pg.goto(live_server + "/?lang=zh")
    pg.wait_for_selector("body[data-ready=true]")
    assert pg.inner_text("#submit") == "查找方案"
    pg.fill("#model", "qwen-7")
    pg.keyboard.press("Escape")
    pg.select_option("#task", "inference")
    pg.fill("#requests_per_s", "5")
    pg.click("#submit")
    err = pg.locator("#form-error")
    err.wait_for()
    # The page sends its language: the error and its hint are Chinese, and the hint points at the page.
    assert "未知的模型 'qwen-7'" in err.inner_text() and "您是否想输入" in err.inner_text()
    assert "gpuplan models" not in err.inner_text()
    assert "invalid" in (pg.get_attribute("#model", "class") or "")
    _save(pg, tmp_path, "web-error-zh.png")
    # 422 responses show up as console errors ("Failed to load resource"); nothing else may.
    assert all("422" in e for e in pg.errors), pg.errors
    assert pg.foreign == []


def test_serving_workload_and_offline_docs(page, live_server):
    pg = page
    pg.goto(live_server + "/?model=Qwen%2FQwen2.5-7B-Instruct&task=inference&requests_per_s=10&billing=payg")
    pg.locator("#plans tbody tr[data-rank]").first.wait_for()
    assert pg.locator("#memory-svg rect[data-component=kv_cache]").count() == 1
    assert pg.is_visible("#requests_per_s") and not pg.is_visible("#dataset_tokens")
    billing = pg.locator("#plans tbody tr[data-rank] td:nth-child(4)").all_inner_texts()
    assert billing and set(billing) == {"pay-as-you-go"}
    pg.goto(live_server + "/docs")
    pg.locator(".op h2").first.wait_for()
    heads = pg.locator(".op h2").all_inner_texts()
    assert "POST /api/recommend" in heads and "GET /api/models" in heads
    assert pg.foreign == [] and pg.errors == []


TRAINING_Q = "?model=Qwen%2FQwen2.5-7B-Instruct&task=lora&seq_len=2048&dataset_tokens=1e8"
SERVING_Q = "?model=Qwen%2FQwen2.5-7B-Instruct&task=inference&requests_per_s=10"


@pytest.mark.parametrize("width, height", [(1280, 900), (390, 844)])
def test_results_fit_the_screen_in_both_languages(browser, live_server, tmp_path, width, height):
    """No sideways scroll (page or plan table) after a training and a serving result, en and zh;
    the price date sits under the headline; chart ticks are round numbers; phones get cards."""
    ctx = browser.new_context(viewport={"width": width, "height": height}, locale="en-US")
    pg = ctx.new_page()
    pg.set_default_timeout(30_000)
    errors: list[str] = []
    pg.on("pageerror", lambda e: errors.append(str(e)))
    try:
        for query in (TRAINING_Q, SERVING_Q):
            for lang in ("en", "zh"):
                pg.goto(live_server + "/" + query + ("&lang=zh" if lang == "zh" else ""))
                pg.locator("#plans tbody tr[data-rank]").first.wait_for()
                _settled(pg)
                sizes = pg.evaluate("""() => {
                    const d = document.documentElement, w = document.querySelector('.table-wrap');
                    return [d.scrollWidth, d.clientWidth, w.scrollWidth, w.clientWidth];
                }""")
                assert sizes[0] <= sizes[1], f"page scrolls sideways at {width}px ({lang}, {query}): {sizes}"
                assert sizes[2] <= sizes[3], f"plan table scrolls sideways at {width}px ({lang}, {query}): {sizes}"
                note = pg.inner_text("#price-note")
                assert re.search(r"\d{4}-\d{2}-\d{2}", note), note
                assert ("截至" in note) == (lang == "zh")
                if width < 760:
                    assert not pg.is_visible("#plans thead")
                    label = pg.evaluate("getComputedStyle(document.querySelector('#plans td'), '::before').content")
                    assert label.strip('"') in ("#",)
                ticks = [t.replace(",", "") for t in
                         pg.eval_on_selector_all("#pareto-svg text.tick", "els => els.map(e => e.textContent)")]
                if ticks:
                    _assert_round_ticks(ticks)
            _save(pg, tmp_path, f"fit-{width}.png")
    finally:
        ctx.close()
    assert errors == []


def _assert_round_ticks(ticks: list[str]) -> None:
    values = sorted({float(t) for t in ticks})
    assert values[0] == 0
    step = values[1] - values[0]
    mantissa = step / 10 ** math.floor(math.log10(step))
    assert any(abs(mantissa - m) < 1e-6 for m in (1, 2, 2.5, 5)), values
