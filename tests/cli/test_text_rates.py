"""Text output of slow per-second rates: a figure is never shown as 0.00 when it is not zero."""

from __future__ import annotations

import io

from rich.console import Console

from gpuplan.render.text import performance_view


def _rows(perf: dict) -> dict:
    """The table as printed: {label: value} from its rendered lines."""
    console = Console(width=100, record=True, file=io.StringIO())
    console.print(performance_view({"performance": perf, "intervals": {}}, "en"))
    rows = {}
    for line in console.export_text().splitlines():
        cells = [c.strip() for c in line.strip("│┃ ").split("│")]
        if len(cells) == 2 and cells[0]:
            rows[cells[0]] = cells[1]
    return rows


def test_a_video_every_few_minutes_is_not_zero_per_second():
    """Before: CogVideoX-5b on an A100 (one video in 3.4 min) showed "Samples/s 0.00"."""
    rows = _rows({"samples_per_s": 0.00485, "images_per_s": 0.5, "denoising_steps_per_s": 12.345})
    assert rows["Samples/s"] == "0.00485"
    assert rows["Images/s"] == "0.5"
    assert rows["Denoising steps/s"] == "12.35"


def test_an_image_or_video_generator_shows_its_latency_not_a_ttft():
    rows = _rows({"ttft_s": 204.0, "latency_s": 204.0, "denoising_steps_per_s": 0.25, "samples_per_s": 0.0049})
    assert "TTFT" not in rows and rows["Latency"] == "3.4 min"
    llm = _rows({"ttft_s": 0.2, "tpot_s": 0.02, "output_tokens_per_s": 500.0})
    assert "TTFT" in llm
