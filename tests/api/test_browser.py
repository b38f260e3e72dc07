"""The page in a real browser: Playwright driving Debian's Chromium (installed by .ci/run).

Fills the form (model picker search, task, dataset), gets plans, checks both charts are drawn,
switches to Chinese and back, downloads the bundle, reopens the shared URL, shows a field error,
and saves screenshots. Every request the page makes must stay on the local server (no CDN).
Skips only when Chromium or the playwright package is missing. Screenshots go to a temporary
folder; GPUPLAN_UPDATE_SCREENSHOTS=1 also copies them to docs/screenshots/.
"""

from __future__ import annotations

import io
import json
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


def _plain(text: str) -> str:
    """Text as typed: the page joins a number and its unit with no-break spaces and word joiners."""
    return text.replace("\u00a0", " ").replace("\u2060", "")


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


# ----------------------------------------------------------------------------------------- issue 24

FIXTURES = Path(__file__).with_name("fixtures")
SERVING_SLA_Q = SERVING_Q + "&ttft_ms=1500&tpot_ms=80"


def _goto(pg, url: str) -> None:
    pg.goto(url)
    pg.wait_for_selector("body[data-ready=true]")
    _settled(pg)


def test_serving_result_shows_ttft_tpot_load_and_all_chinese(page, live_server, tmp_path):
    pg = page
    _goto(pg, live_server + "/" + SERVING_SLA_Q)
    assert pg.is_visible("#ttft_ms") and pg.is_visible("#tpot_ms")
    assert pg.input_value("#ttft_ms") == "1500" and pg.input_value("#tpot_ms") == "80"
    assert pg.inner_text("#col-time") == "Latency"
    first = pg.locator("#plans tbody tr[data-rank]").first
    assert "TTFT" in first.inner_text() and "TPOT" in first.inner_text()
    details = _plain(pg.inner_text("#plans tr.details"))
    for label in ("TTFT (time to first token)", "TPOT (time per output token)", "Load at the peak", "Headroom",
                  "target 1.5 s"):
        assert label in details, details
    pg.click("#lang-toggle")
    _settled(pg)
    text = pg.inner_text("#results")
    assert "首字延迟" in text and "余量" in text
    assert english_sentences(text) == [], english_sentences(text)
    assert not re.search(r"\d (ms|s|min|h|days)\b|req/s|images/s", text), text
    assert pg.errors == [] and pg.foreign == []


def test_a_failed_search_clears_the_previous_answer(page, live_server):
    pg = page
    _goto(pg, live_server + "/" + TRAINING_Q)
    assert pg.locator("#plans tbody tr[data-rank]").count() >= 1 and pg.is_visible("#download")
    pg.fill("#model", "qwen-7")
    pg.keyboard.press("Escape")
    pg.click("#submit")
    pg.locator("#form-error").wait_for()
    _settled(pg)
    assert pg.locator("#plans tbody tr").count() == 0
    assert not pg.is_visible("#download") and not pg.is_visible("#output")
    assert pg.inner_text("#download-status") == ""
    assert "failed" in pg.inner_text("#status")


def test_deadline_without_dataset_is_flagged_next_to_the_field(page, live_server):
    pg = page
    _goto(pg, live_server + "/")
    pg.select_option("#task", "lora")
    pg.fill("#deadline_hours", "48")
    note = pg.locator("#deadline_hours-note")
    assert note.is_visible() and "dataset" in note.inner_text()
    pg.fill("#dataset_tokens", "1e8")
    assert not note.is_visible()


def _axe(pg) -> list[dict]:
    axe = pytest.importorskip("axe_playwright_python", reason="axe-playwright-python (ships axe-core) is not installed")
    script = (Path(axe.__file__).parent / "axe.min.js").read_text(encoding="utf-8")
    pg.evaluate(script)     # through the DevTools protocol: the page's CSP does not apply
    result = pg.evaluate("async () => await axe.run(document, {resultTypes: ['violations']})")
    return [v for v in result["violations"] if v["impact"] in ("serious", "critical")]


@pytest.mark.parametrize("query", [TRAINING_Q, SERVING_SLA_Q])
def test_axe_finds_no_serious_violation_and_rows_work_by_keyboard(page, live_server, query):
    pg = page
    _goto(pg, live_server + "/" + query)
    bad = _axe(pg)
    assert bad == [], [(v["id"], v["help"], [n["target"] for n in v["nodes"]][:3]) for v in bad]
    rows = pg.locator("#plans tbody tr[data-rank]")
    assert rows.count() >= 2
    assert all(rows.nth(i).get_attribute("tabindex") == "0" for i in range(rows.count()))
    # Tab reaches the first row; ArrowDown moves to the next; Enter opens it (its details row appears).
    rows.first.focus()
    assert pg.evaluate("document.activeElement.dataset.index") == "0"
    pg.keyboard.press("ArrowDown")
    assert pg.evaluate("document.activeElement.dataset.index") == "1"
    pg.keyboard.press("Enter")
    expanded = lambda i: rows.nth(i).locator("button.expand").get_attribute("aria-expanded")  # noqa: E731
    assert expanded(1) == "true"
    assert pg.locator(f"#plan-details-{rows.nth(1).get_attribute('data-rank')}").is_visible()
    assert pg.evaluate("document.activeElement.dataset.index") == "1"
    pg.keyboard.press(" ")
    assert expanded(1) == "true" and expanded(0) == "false"
    # the model combobox
    assert pg.get_attribute("#model", "role") == "combobox"
    pg.focus("#model")
    pg.fill("#model", "qwen2.5")
    pg.keyboard.press("ArrowDown")
    active = pg.get_attribute("#model", "aria-activedescendant")
    assert active and pg.get_attribute(f"#{active}", "role") == "option"
    assert pg.get_attribute(f"#{active}", "aria-selected") == "true"
    assert pg.errors == []


@pytest.mark.parametrize("fixture, want", [
    ("recommend-serving-blocks.json", ["vllm", "231 ms median, 412 ms p90", "target 1 s", "18.3 ms", "71%", "29%",
                                       "met", "Engine copies"]),
    ("recommend-training-blocks.json", ["Micro-batch", "4 (chosen by the search)", "8 (set by you)",
                                        "12.5%", "46.3%", "selective", "micro-batch 4: 71 of 78 GiB"]),
])
def test_the_serving_and_recipe_blocks_are_shown(page, live_server, fixture, want):
    """The contract's new blocks (branches serving and recipe), from a fixture answer."""
    pg = page
    body = (FIXTURES / fixture).read_text(encoding="utf-8")
    pg.route("**/api/recommend*", lambda route: route.fulfill(status=200, body=body,
                                                              headers={"content-type": "application/json"}))
    task = "inference" if "serving" in fixture else "lora"
    _goto(pg, live_server + f"/?model=Qwen%2FQwen2.5-7B-Instruct&task={task}")
    details = _plain(pg.inner_text("#plans tr.details") + "\n" + pg.inner_text("#why"))
    for w in want:
        assert w in details, (w, details)
    assert "Ranked by: lowest expected cost" in pg.inner_text("#ranking-basis")


def _text_boxes(pg, selector: str) -> list[dict]:
    return pg.eval_on_selector_all(selector + " text", """els => els.map(e => {
        const r = e.getBoundingClientRect(), svg = e.ownerSVGElement.getBoundingClientRect();
        const size = parseFloat(getComputedStyle(e).fontSize) * e.ownerSVGElement.getScreenCTM().a;
        return {text: e.textContent, x: r.left, y: r.top, w: r.width, h: r.height, size,
                inside: r.left >= svg.left - 0.5 && r.right <= svg.right + 0.5 && r.top >= svg.top - 0.5
                        && r.bottom <= svg.bottom + 0.5};
    })""")


def _overlap(a: dict, b: dict) -> bool:
    return a["x"] < b["x"] + b["w"] - 0.5 and b["x"] < a["x"] + a["w"] - 0.5 and \
        a["y"] < b["y"] + b["h"] - 0.5 and b["y"] < a["y"] + a["h"] - 0.5


@pytest.mark.parametrize("query", [TRAINING_Q, SERVING_SLA_Q])
@pytest.mark.parametrize("lang", ["en", "zh"])
def test_charts_and_cards_are_readable_on_a_phone(browser, live_server, query, lang):
    ctx = browser.new_context(viewport={"width": 390, "height": 844}, locale="en-US")
    pg = ctx.new_page()
    pg.set_default_timeout(30_000)
    try:
        _goto(pg, live_server + "/" + query + ("&lang=zh" if lang == "zh" else ""))
        for chart in ("#memory-svg", "#pareto-svg"):
            boxes = _text_boxes(pg, chart)
            assert boxes, chart
            small = [b["text"] for b in boxes if b["size"] < 11]
            assert small == [], f"text under 11 px in {chart}: {small}"
            clipped = [b["text"] for b in boxes if not b["inside"]]
            assert clipped == [], f"clipped labels in {chart}: {clipped}"
            hits = [(a["text"], b["text"]) for i, a in enumerate(boxes) for b in boxes[i + 1:] if _overlap(a, b)]
            assert hits == [], f"overlapping labels in {chart}: {hits}"
        over = pg.eval_on_selector_all("#plans td", "els => els.filter(e => e.scrollWidth > e.clientWidth + 1)"
                                                    ".map(e => e.textContent)")
        assert over == [], f"table cells overflow on a phone: {over}"
    finally:
        ctx.close()


def test_workload_downloads_as_yaml_and_loads_back(page, live_server, tmp_path):
    import yaml

    pg = page
    _goto(pg, live_server + "/" + SERVING_SLA_Q)
    with pg.expect_download() as dl:
        pg.click("#save-workload")
    path = tmp_path / dl.value.suggested_filename
    dl.value.save_as(str(path))
    assert path.suffix == ".yaml"
    data = yaml.safe_load(path.read_text(encoding="utf-8"))
    assert data["serving"] == {"requests_per_s": 10, "ttft_ms": 1500, "tpot_ms": 80}
    from gpuplan.workload_loading import load_workload

    assert load_workload(path).serving.ttft_ms == 1500          # the file the CLI reads
    # Load a file with a key the form does not show: the form fills, the key is kept and named.
    other = tmp_path / "mine.yaml"
    other.write_text("model: Qwen/Qwen2.5-7B-Instruct\ntask: lora\nseq_len: 4096\ndataset: {tokens: 2e8}\n"
                     "lora: {rank: 64, alpha: 128}\ngradient_accumulation: 4\nconstraints: {deadline_hours: 24}\n",
                     encoding="utf-8")
    _goto(pg, live_server + "/")
    pg.set_input_files("#load-workload", str(other))
    pg.locator("#file-status", has_text="mine.yaml").wait_for()
    assert pg.input_value("#task") == "lora" and pg.input_value("#seq_len") == "4096"
    assert pg.input_value("#dataset_tokens") == "200000000" and pg.input_value("#deadline_hours") == "24"
    assert pg.input_value("#lora_rank") == "64"
    # keys the form has no field for are kept, named, and shown in the "other keys" box
    status = pg.inner_text("#file-status")
    assert "gradient_accumulation" in status and "lora.alpha" in status, status
    assert json.loads(pg.input_value("#other_keys")) == {"gradient_accumulation": 4, "lora": {"alpha": 128}}
    sent = []
    pg.on("request", lambda r: sent.append(r.post_data_json) if r.url.endswith("/api/recommend?top=8") else None)
    pg.click("#submit")
    _settled(pg)
    assert sent and sent[-1]["lora"] == {"rank": 64, "alpha": 128} and sent[-1]["seq_len"] == 4096
    assert sent[-1]["gradient_accumulation"] == 4
    # A file that is not a workload: the error names the key, nothing is filled in.
    bad = tmp_path / "bad.yaml"
    bad.write_text("model: Qwen/Qwen2.5-7B-Instruct\ntsk: lora\n", encoding="utf-8")
    pg.set_input_files("#load-workload", str(bad))
    pg.locator("#form-error").wait_for()
    assert "tsk" in pg.inner_text("#form-error")


# ----------------------------------------------------------------------------------------- issue 31

@pytest.mark.parametrize("lang, dated", [("en", r"\d{4}-\d{2}-\d{2} \(\d+ d\)"), ("zh", r"\d{4}-\d{2}-\d{2}（\d+[ \u00a0]天）")])
def test_every_plan_row_shows_its_own_price_basis_and_date(page, live_server, lang, dated):
    # not only plan 1's: each row's price cell says how its price was obtained, its date and its age
    _goto(page, live_server + "/" + SERVING_Q + ("&lang=zh" if lang == "zh" else ""))
    rows = page.locator("#plans tbody tr[data-rank]")
    assert rows.count() >= 3
    for i in range(rows.count()):
        cell = rows.nth(i).locator("td small.dated")
        assert cell.count() == 1 and re.search(dated, cell.inner_text()), rows.nth(i).inner_text()


# ----------------------------------------------------------------------------------------- issue 32

def _requests(pg) -> list[dict]:
    sent: list[dict] = []
    pg.on("request", lambda r: sent.append(r.post_data_json) if "/api/recommend" in r.url else None)
    return sent


def test_a_pre_quantized_checkpoint_is_planned_as_published(page, live_server):
    """Precision and quantization default to "as published": the page leaves them out and the server reads them
    from the model id, so a -GPTQ-Int4 checkpoint plans as the CLI plans it (it used to fail: quantization none)."""
    pg = page
    _goto(pg, live_server + "/")
    assert pg.input_value("#precision") == "" and pg.input_value("#quantization") == ""
    sent = _requests(pg)
    pg.fill("#model", "Qwen/Qwen2.5-72B-Instruct-GPTQ-Int4")
    pg.keyboard.press("Escape")
    pg.select_option("#task", "inference")
    pg.fill("#requests_per_s", "1")
    pg.click("#submit")
    pg.locator("#plans tbody tr[data-rank]").first.wait_for()
    _settled(pg)
    assert sent and "precision" not in sent[-1] and "quantization" not in sent[-1], sent[-1]
    assert not pg.is_visible("#form-error")
    assert "GPTQ" in pg.inner_text("#plans tbody") + pg.inner_text("#why")
    assert pg.errors == []


def test_a_batch_job_has_its_fields_and_is_priced_as_a_job(page, live_server):
    pg = page
    _goto(pg, live_server + "/")
    pg.fill("#model", "Qwen/Qwen2.5-7B-Instruct")
    pg.keyboard.press("Escape")
    pg.select_option("#task", "inference")
    assert pg.is_visible("#requests_per_s") and not pg.is_visible("#items")
    pg.select_option("#mode", "batch")
    assert pg.is_visible("#items") and pg.is_visible("#audio_hours") and pg.is_visible("#deadline_hours")
    assert not pg.is_visible("#requests_per_s") and not pg.is_visible("#ttft_ms")
    sent = _requests(pg)
    pg.fill("#items", "200000")
    pg.fill("#prompt_tokens", "512")
    pg.fill("#output_tokens", "128")
    pg.fill("#deadline_hours", "24")
    pg.click("#submit")
    pg.locator("#plans tbody tr[data-rank]").first.wait_for()
    _settled(pg)
    body = sent[-1]
    assert body["dataset"] == {"items": 200000} and body["constraints"] == {"deadline_hours": 24}, body
    assert "serving" not in body
    assert "mode=batch" in pg.url and "items=200000" in pg.url
    # the shared URL brings the batch job back
    pg.goto(pg.url)
    pg.locator("#plans tbody tr[data-rank]").first.wait_for()
    assert pg.input_value("#mode") == "batch" and pg.input_value("#items") == "200000"
    assert pg.errors == []


def test_regions_are_those_of_the_chosen_cloud(page, live_server):
    pg = page
    _goto(pg, live_server + "/")
    options = lambda: pg.eval_on_selector_all("#region option", "os => os.map(o => o.value).filter(Boolean)")  # noqa: E731
    alibaba = options()
    assert "cn-hangzhou" in alibaba and "ap-guangzhou" not in alibaba, alibaba
    pg.select_option("#cloud", "tencent")
    tencent = options()
    assert "ap-guangzhou" in tencent and "cn-hangzhou" not in tencent, tencent
    sent = _requests(pg)
    pg.select_option("#region", "ap-guangzhou")
    pg.fill("#model", "Qwen/Qwen2.5-7B-Instruct")
    pg.keyboard.press("Escape")
    pg.select_option("#task", "inference")
    pg.fill("#requests_per_s", "1")
    pg.click("#submit")
    _settled(pg)
    assert sent[-1]["constraints"] == {"clouds": ["tencent"], "regions": ["ap-guangzhou"]}, sent[-1]
    assert not pg.is_visible("#form-error"), pg.inner_text("#form-error")
    regions = set(pg.locator("#plans tbody tr[data-rank] td:nth-child(2) small").all_inner_texts())
    assert regions <= {"ap-guangzhou"}, regions


@pytest.mark.parametrize("query", [TRAINING_Q + "&deadline_hours=72", SERVING_SLA_Q])
def test_why_lists_each_sentence_once_and_names_only_plans_shown(page, live_server, query):
    pg = page
    _goto(pg, live_server + "/" + query)
    rows = pg.locator("#plans tbody tr[data-rank]")
    shown = {rows.nth(i).get_attribute("data-rank") for i in range(rows.count())}
    for i in range(min(3, rows.count())):
        rows.nth(i).click()
        why = pg.eval_on_selector_all("#why li", "ls => ls.map(l => l.textContent)")
        assert len(why) == len(set(why)), why
        assert pg.inner_text("#headline") not in why
        text = pg.inner_text("#headline") + "\n" + "\n".join(why)
        named = set(re.findall(r"\bplan (\d+)\b", text))
        assert named <= shown, (named, shown, text)
        for ref in pg.locator("#why button.plan-ref").all():
            assert ref.get_attribute("data-index") is not None
    assert pg.errors == []


UNIT_SPANS = r"""() => {
  const re = /(\d[\d,.]*)([ \u00a0]*)(ms|s|min|h|days|GiB|毫\u2060?秒|秒|分钟|小时|天)(?![A-Za-z])/g;
  const out = [];
  const walker = document.createTreeWalker(document.querySelector("#results"), NodeFilter.SHOW_TEXT);
  for (let node = walker.nextNode(); node; node = walker.nextNode()) {
    if (!node.parentElement || node.parentElement.closest("svg, [hidden]")) continue;
    for (const m of node.textContent.matchAll(re)) {
      const r = document.createRange();
      r.setStart(node, m.index);
      r.setEnd(node, m.index + m[0].length);
      const lines = new Set([...r.getClientRects()].filter((b) => b.width > 0).map((b) => Math.round(b.top)));
      out.push({ text: m[0], sep: m[2], lines: lines.size });
    }
  }
  return out;
}"""


@pytest.mark.parametrize("lang", ["en", "zh"])
def test_a_number_and_its_unit_never_break_apart(browser, live_server, lang):
    """A phone-width table wraps its cells; "237 毫秒" and "TTFT 85.6 ms" stay on one line (no-break joins)."""
    ctx = browser.new_context(viewport={"width": 390, "height": 844}, locale="en-US")
    pg = ctx.new_page()
    pg.set_default_timeout(30_000)
    try:
        for query in (SERVING_SLA_Q, TRAINING_Q):
            _goto(pg, live_server + "/" + query + ("&lang=zh" if lang == "zh" else ""))
            spans = pg.evaluate(UNIT_SPANS)
            assert len(spans) >= 3, spans
            split = [s for s in spans if s["lines"] > 1]
            assert split == [], split
            spaced = [s for s in spans if " " in s["sep"]]
            assert spaced == [], spaced        # the join is a no-break space, never a plain one
    finally:
        ctx.close()
