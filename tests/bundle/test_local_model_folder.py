"""A model given as a local folder (config.json) gets a bundle that loads that folder and passes its own preflight.

Before: every such bundle failed `gpuplan check` at once ("launch.sh keeps the weights in /mnt/data/models/<name>,
but the plan staged them in <folder>"): plan.json and the Python servers loaded the folder, the shell launchers'
MODEL_DIR named the data disk, two rules for one path. And a folder of a model whose code is not in transformers
(ChatGLM's config.json) was launched without trust_remote_code: the estimate's JSON carried no arch for the bundle
to read.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
import yaml

from gpuplan.check import check_bundle
from gpuplan.errors import GpuplanError
from gpuplan.workload import Workload
from gpuplan.write_bundle import write_plan_bundle

CONFIGS = Path(__file__).resolve().parents[2] / "scripts" / "model-configs"


def _folder(tmp: Path, config: str) -> Path:
    d = tmp / "weights"
    d.mkdir()
    shutil.copy(CONFIGS / config / "config.json", d / "config.json")
    return d


def _bundle(tmp: Path, model: Path, **extra) -> Path:
    w = {"name": "local-job", "model": str(model), "task": "lora", "seq_len": 2048, "batch_size": 1,
         "gradient_accumulation": 8, "lora": {"rank": 8},
         "dataset": {"samples": 2000, "tokens_per_sample": 2048, "epochs": 1},
         "constraints": {"regions": ["cn-hangzhou"]}, **extra}
    path, _info = write_plan_bundle(Workload.model_validate(w), tmp / "b")
    return path


@pytest.fixture(scope="module")
def qwen3_folder_bundle(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("q3")
    folder = _folder(tmp, "Qwen/Qwen3-4B-Instruct-2507")
    return folder, _bundle(tmp, folder)


def test_a_local_folder_bundle_passes_its_own_preflight(qwen3_folder_bundle):
    _folder_path, path = qwen3_folder_bundle
    report = check_bundle(path)
    assert report.ok, report.to_dict()


def test_every_script_loads_the_folder_itself(qwen3_folder_bundle):
    folder, path = qwen3_folder_bundle
    weights = json.loads((path / "plan.json").read_text())["weights"]
    assert weights["local_dir"] == str(folder)
    for script in ("launch.sh", "fetch-model.sh", "swift-sft.sh"):
        assert f'MODEL_DIR="${{MODEL_DIR:-{folder}}}"' in (path / script).read_text(), script
    assert "/mnt/data/models/" not in (path / "launch.sh").read_text().split("MODEL_DIR=", 1)[1].split("\n", 1)[0]
    assert "nothing to download" in (path / "fetch-model.sh").read_text()


def test_a_remote_code_folder_is_launched_with_trust_remote_code(tmp_path):
    folder = _folder(tmp_path, "THUDM/codegeex2-6b")                     # model_type chatglm: code outside transformers
    path = _bundle(tmp_path, folder)
    assert check_bundle(path).ok
    assert 'TRUST_REMOTE_CODE="${TRUST_REMOTE_CODE:-1}"' in (path / "launch.sh").read_text()
    assert "trust_remote_code: true" in (path / "llamafactory.yaml").read_text()
    assert json.loads((path / "plan.json").read_text())["weights"]["trust_remote_code"] is True


def test_an_in_library_folder_is_not(qwen3_folder_bundle):
    _folder_path, path = qwen3_folder_bundle
    assert 'TRUST_REMOTE_CODE="${TRUST_REMOTE_CODE:-0}"' in (path / "launch.sh").read_text()


def test_a_local_folder_service_mounts_its_weights_in_the_pod(tmp_path):
    folder = _folder(tmp_path, "Qwen/Qwen3-4B-Instruct-2507")
    path = _bundle(tmp_path, folder, task="inference", prompt_tokens=1000, output_tokens=300,
                   serving={"requests_per_s": 2}, dataset=None)   # a service, not a batch job
    report = check_bundle(path)
    assert report.ok, report.to_dict()                  # before: "the Deployment's engine loads ... no volume mounted"
    dep = next(d for d in yaml.safe_load_all((path / "k8s" / "deployment.yaml").read_text())
               if d["kind"] == "Deployment")
    main = dep["spec"]["template"]["spec"]["containers"][0]
    assert str(folder) in main["args"]
    assert {"name": "local-model", "mountPath": str(folder), "readOnly": True} in main["volumeMounts"]
    assert {"name": "local-model", "hostPath": {"path": str(folder), "type": "Directory"}} in \
        dep["spec"]["template"]["spec"]["volumes"]
    assert "is loaded where it is, nothing is downloaded" in (path / "PLAN.md").read_text()


def test_a_relative_path_or_its_config_file_names_the_same_absolute_folder(tmp_path, monkeypatch):
    folder = _folder(tmp_path, "Qwen/Qwen3-4B-Instruct-2507")
    monkeypatch.chdir(tmp_path)
    for i, ref in enumerate(("./weights", str(folder / "config.json"))):
        (tmp_path / str(i)).mkdir()
        path = _bundle(tmp_path / str(i), ref)
        assert json.loads((path / "plan.json").read_text())["weights"]["local_dir"] == str(folder), ref
        assert check_bundle(path).ok, ref


def test_the_node_unit_and_the_job_pod_mount_the_folder(qwen3_folder_bundle):
    """The ECS unit runs every command in the bundle's image and the ACK Job runs launch.sh in a pod: the folder must
    be visible there, read-only, at the path the launchers load (it had been left outside both)."""
    folder, path = qwen3_folder_bundle
    unit = next(path.glob("*.service")).read_text()
    assert f"-v {folder}:{folder}:ro" in unit
    assert "-v /mnt/data:/mnt/data" in unit
    job = next(d for d in yaml.safe_load_all((path / "k8s" / "job.yaml").read_text()) if d["kind"] == "Job")
    pod = job["spec"]["template"]["spec"]
    assert {"name": "local-model", "mountPath": str(folder), "readOnly": True} in pod["containers"][0]["volumeMounts"]


def test_a_path_the_launch_files_cannot_carry_is_refused(tmp_path):
    d = tmp_path / "my weights"
    d.mkdir()
    shutil.copy(CONFIGS / "Qwen/Qwen3-4B-Instruct-2507" / "config.json", d / "config.json")
    with pytest.raises(GpuplanError) as err:
        _bundle(tmp_path, d)
    assert err.value.field == "model" and "plain path" in err.value.hint
