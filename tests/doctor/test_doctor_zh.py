"""The doctor in Chinese (issue 16): every finding, fix and label comes from the message catalog."""

import io

import pytest

from gpuplan.doctor import run_doctor
from i18n.english import english_sentences  # tests/ is on sys.path (rootdir of the test packages)

from .fakes import FakeNvml, FakeRunner, NVMLError_LibraryNotFound, a10_node, a100_node


def _no_gpu():
    return FakeRunner(files={"/proc/meminfo": "MemTotal:       24000000 kB\n"}), \
        FakeNvml([], init_error=NVMLError_LibraryNotFound("libnvidia-ml.so.1"))   # the library's text is quoted as-is


def _report(runner, nvml, **kw) -> str:
    out = io.StringIO()
    run_doctor(out=out, runner=runner, nvml=nvml, lang="zh", metadata_version=lambda name: None, **kw)
    return out.getvalue()


@pytest.mark.parametrize("node", [
    "no-gpu", "a10-healthy", "a10-persistence-off-x8", "a100-nvlink-down", "a100-ecc", "a100-planned",
])
def test_doctor_report_has_no_english_sentence(node, make_plan):
    kw = {}
    if node == "no-gpu":
        runner, nvml = _no_gpu()
    elif node == "a10-healthy":
        runner, nvml = a10_node()
    elif node == "a10-persistence-off-x8":
        runner, nvml = a10_node(persistence_off=1, x8_gpu=2)
    elif node == "a100-nvlink-down":
        runner, nvml = a100_node(nvlink_down=3)
    elif node == "a100-ecc":
        runner, nvml = a100_node(ecc_gpu=1, rdma=[])
    else:
        runner, nvml = a100_node(x8_gpu=0)
        kw["plan_dir"] = make_plan("ecs.gn7e-c16g1.32xlarge", "A100-SXM4-80GB", count=2)
    text = _report(runner, nvml, **kw)
    assert "退出码" in text
    assert english_sentences(text) == [], text


def test_doctor_error_in_chinese(tmp_path):
    runner, nvml = a10_node()
    text = _report(runner, nvml, plan_dir=tmp_path / "missing")
    assert text.startswith("错误") and "提示" in text
    assert english_sentences(text) == [], text
