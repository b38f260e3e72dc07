"""run_doctor end to end: report, JSON contract, exit codes, no torch import, no traceback."""

import io
import json
import subprocess
import sys
import types

from gpuplan.doctor import run_doctor

from .fakes import FakeNvml, FakeRunner, NVMLError_LibraryNotFound, a10_node, a100_node


def no_gpu():
    return FakeRunner(files={"/proc/meminfo": "MemTotal:       24000000 kB\n"}), \
        FakeNvml([], init_error=NVMLError_LibraryNotFound("NVML Shared Library Not Found"))


def doctor(**kw):
    out = io.StringIO()
    kw.setdefault("metadata_version", lambda name: None)
    code = run_doctor(out=out, **kw)
    return code, out.getvalue()


def test_no_gpu_text_report_exit_2():
    runner, nvml = no_gpu()
    code, text = doctor(runner=runner, nvml=nvml)
    assert code == 2
    assert "No NVIDIA GPU or driver found." in text
    assert "no NVIDIA GPU or driver found" in text and "Traceback" not in text


def test_no_gpu_json_is_valid_and_complete():
    runner, nvml = no_gpu()
    code, text = doctor(runner=runner, nvml=nvml, as_json=True)
    doc = json.loads(text)
    assert code == 2 and doc["exit_code"] == 2 and doc["schema_version"] == 1
    assert doc["facts"]["gpus"] == [] and doc["facts"]["gpu_source"] is None
    assert doc["checks"][0] == {"id": "gpu.present", "status": "fail",
                                "message": "no NVIDIA GPU or driver found (NVML could not start: NVML Shared "
                                           "Library Not Found; nvidia-smi not found)",
                                "fix": doc["checks"][0]["fix"]}
    assert set(doc) == {"schema_version", "facts", "checks", "benchmarks", "exit_code"}
    assert all(set(c) == {"id", "status", "message", "fix"} for c in doc["checks"])


def test_no_gpu_with_bench_skips_benchmarks():
    runner, nvml = no_gpu()
    fake_torch = types.SimpleNamespace(cuda=types.SimpleNamespace(is_available=lambda: False))
    code, text = doctor(runner=runner, nvml=nvml, as_json=True, bench=True, torch_module=fake_torch)
    assert code == 2 and json.loads(text)["benchmarks"] == {"skipped": "no NVIDIA GPU"}


def test_real_machine_without_gpu_never_tracebacks():
    # This machine (CI) has no GPU: the real runner and the real nvidia-ml-py.
    code, text = doctor(as_json=True)
    doc = json.loads(text)
    assert code == doc["exit_code"]
    if not doc["facts"]["gpus"]:
        assert code == 2 and doc["checks"][0]["id"] == "gpu.present"


def test_chinese_report():
    runner, nvml = no_gpu()
    code, text = doctor(runner=runner, nvml=nvml, lang="zh")
    assert "未发现 NVIDIA GPU 或驱动" in text and "退出码 2" in text and code == 2


def test_json_messages_stay_english_under_zh():
    runner, nvml = a10_node()
    _, text = doctor(runner=runner, nvml=nvml, as_json=True, lang="zh")
    assert "未" not in text


def test_healthy_node_exit_0_and_report(make_plan):
    runner, nvml = a100_node()
    code, text = doctor(runner=runner, nvml=nvml, plan_dir=make_plan("ecs.gn7e-c16g1.32xlarge", "A100-SXM4-80GB"))
    assert code == 0
    assert "NVIDIA A100-SXM4-80GB" in text and "12/12" in text and "→ exit 0" in text


def test_warning_exit_1():
    runner, nvml = a10_node(persistence_off=1)
    code, _ = doctor(runner=runner, nvml=nvml)
    assert code == 1


def test_failure_exit_2_json(make_plan):
    runner, nvml = a100_node(nvlink_down=3)
    code, text = doctor(runner=runner, nvml=nvml, as_json=True,
                        plan_dir=make_plan("ecs.gn7e-c16g1.32xlarge", "A100-SXM4-80GB"))
    doc = json.loads(text)
    assert code == 2 and doc["exit_code"] == 2
    nv = next(c for c in doc["checks"] if c["id"] == "nvlink")
    assert nv["status"] == "fail" and nv["fix"]
    assert doc["facts"]["topology"]["matrix"]["GPU3"]["GPU0"] == "NODE"


def test_bad_plan_dir_is_a_clean_error(tmp_path):
    runner, nvml = a10_node()
    code, text = doctor(runner=runner, nvml=nvml, plan_dir=tmp_path / "nope", as_json=True)
    assert code == 2 and json.loads(text)["error"].startswith("No plan.json in")
    (tmp_path / "plan.json").write_text("{not json")
    code, text = doctor(runner=runner, nvml=nvml, plan_dir=tmp_path)
    assert code == 2 and text.startswith("Error: Cannot read") and "Hint:" in text


def test_plan_tolerates_missing_keys(tmp_path):
    (tmp_path / "plan.json").write_text(json.dumps({"schema_version": 1, "plan": {}}))
    runner, nvml = a10_node()
    code, text = doctor(runner=runner, nvml=nvml, plan_dir=tmp_path, as_json=True)
    skips = {c["id"]: c["message"] for c in json.loads(text)["checks"] if c["status"] == "skip"}
    assert skips["gpu.model"] == "not in plan" and code == 0


def test_internal_error_is_reported_not_raised():
    class Broken(FakeRunner):
        def read_text(self, path):
            raise RuntimeError("boom")

    code, text = doctor(runner=Broken(), nvml=None, as_json=True)
    assert code == 2 and "internal error in the doctor: RuntimeError: boom" in json.loads(text)["error"]


def test_metadata_not_fetched_unless_asked():
    runner, nvml = a10_node()
    called = []
    doctor(runner=runner, nvml=nvml, metadata_fetcher=lambda: called.append(1))
    assert called == []
    code, text = doctor(runner=runner, nvml=nvml, instance_metadata=True, as_json=True,
                        metadata_fetcher=lambda: "ecs.ebmgn7i.32xlarge")
    assert json.loads(text)["facts"]["host"]["instance_type"] == "ecs.ebmgn7i.32xlarge"


def test_doctor_does_not_import_torch_without_bench():
    code = ("import sys, io\nfrom gpuplan.doctor import run_doctor\n"
            "run_doctor(out=io.StringIO(), as_json=True)\nprint('torch' in sys.modules)")
    res = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert res.stdout.strip() == "False", res.stderr
