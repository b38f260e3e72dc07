"""Issue 22, infrastructure: the download takes what PLAN.md says, auto-release counts it, weights come from
OSS / ModelScope / Hugging Face with HF_TOKEN from the environment only, and a shared mount that fails stops
the job instead of letting it write to the root disk.

Figures: data/ops.yaml bundle_network (100 Mbit/s pay-by-traffic, inbound = outbound above 10 Mbit/s:
https://www.alibabacloud.com/help/en/ecs/user-guide/network-bandwidth).
"""

from __future__ import annotations

import math
import os
import re
import subprocess
import time
from pathlib import Path

import pytest
import yaml

from gpuplan.render.bundle import render_bundle
from gpuplan.render.bundle.context_build import build_context
from gpuplan.plan.money.transfer import MBIT, release_hours, transfer_s
from gpuplan.render.bundle.node.transfer import transfers

from .scenarios import inputs

SYSTEM_PATH = "/usr/bin:/bin"


def test_a_70b_checkpoint_takes_three_hours_at_100_mbit_s_not_31():
    # 70.6e9 params x 2 bytes = 141 GB: 10 Mbit/s (the old default) = 31.4 h; 100 Mbit/s = 3.1 h.
    n_bytes = 70.6e9 * 2
    assert transfer_s(n_bytes, 10 * MBIT) / 3600 == pytest.approx(31.4, abs=0.1)
    assert transfer_s(n_bytes, 100 * MBIT) / 3600 == pytest.approx(3.14, abs=0.01)


def test_release_hours_add_boot_download_run_with_margin_and_upload():
    # 1,800 s boot + 11,296 s download + 30 h run x 1.2 + 1,450 s upload = 40.4 h -> 41 h
    hours = release_hours(bootstrap_s=1800, download_s=11296, job_s=30 * 3600, upload_s=1450, margin=0.2, min_hours=1)
    assert hours == math.ceil((1800 + 11296 + 36 * 3600 + 1450) / 3600) == 41
    assert release_hours(bootstrap_s=0, download_s=0, job_s=60, upload_s=0, margin=0.2, min_hours=1) == 1
    # the operator's launch steps after apply count too (data/ops.yaml training.auto_release.operator_s, assumed 1 h)
    assert release_hours(bootstrap_s=1800, download_s=11296, job_s=30 * 3600, upload_s=1450, margin=0.2, min_hours=1,
                         operator_s=3600) == 42


def test_auto_release_is_never_before_the_download_and_the_run_end():
    for name in ("lora_single", "two_node", "spot_job"):
        plan, workload, est = inputs(name)
        t = transfers(build_context(plan, workload, est))
        assert t.release_hours * 3600 >= t.bootstrap_s + (t.download_s or 0) + t.job_s * (1 + t.margin)
    serving = transfers(build_context(*inputs("vllm_service")))
    assert serving.release_hours == 0            # a service is not auto-released


def test_the_plan_json_advice_and_the_terraform_release_at_the_same_hour(tmp_path):
    """recommend --json's ops.auto_release and the bundle's auto_release_hours are one computation
    (gpuplan.plan.money.transfer): first boot + model download + run x 1.2 + checkpoint upload."""
    import json

    from gpuplan.workload_loading import load_workload
    from gpuplan.write_bundle import write_plan_bundle

    root = Path(__file__).resolve().parents[2]
    path, _info = write_plan_bundle(load_workload(root / "examples" / "qwen-7b-full-zero.yaml"), tmp_path / "b")
    advice = json.loads((path / "plan.json").read_text())["plan"]["ops"]["auto_release"]
    variables = (path / "terraform" / "variables.tf").read_text()
    tf = int(re.search(r'variable "auto_release_hours" \{[^}]*default\s+= (\d+)', variables).group(1))
    assert advice["hours"] == tf > 0
    assert "model download" in advice["text"] and "checkpoint upload" in advice["text"]


def test_plan_md_terraform_and_fetch_model_state_the_same_download_time():
    plan, workload, est = inputs("lora_single")
    files = render_bundle(plan, workload, est)
    t = transfers(build_context(plan, workload, est))
    from gpuplan.units import fmt_duration

    shown = fmt_duration(t.download_s)
    assert f"at 100 Mbit/s of public bandwidth (pay-by-traffic; inbound traffic is free): about {shown}" in files["PLAN.md"]
    assert f"in about {shown.replace(' ', '')}" in files["terraform/main.tf"]
    assert f"at 100 Mbit/s: {shown.replace(' ', '')}" in files["fetch-model.sh"]
    assert f"model download {shown}" in files["PLAN.md"]     # and the auto-release line counts it


def test_checkpoints_are_named_on_storage_that_survives(bundles):
    single = (bundles["lora_single"] / "PLAN.md").read_text()
    assert "Checkpoints: /mnt/data/checkpoints/qwen7b-lora-demo on the data disk, a separate ESSD" in single
    shared = (bundles["two_node"] / "PLAN.md").read_text()
    assert "Checkpoints: /mnt/shared/checkpoints/llama8b-full-2node on the shared Extreme NAS file system" in shared


def test_mainland_regions_download_from_modelscope_elsewhere_hugging_face():
    plan, workload, est = inputs("vllm_service")
    assert 'MODEL_HUB="${MODEL_HUB:-modelscope}"' in render_bundle(plan, workload, est)["serve.sh"]
    abroad = render_bundle({**plan, "region": "ap-southeast-1"}, workload, est)
    assert 'MODEL_HUB="${MODEL_HUB:-huggingface}"' in abroad["serve.sh"]
    assert "MODEL_HUB=huggingface" in abroad["cloud-init.yaml"]


# --- fetch-model.sh ---------------------------------------------------------------------------------------

def _stub(bindir: Path, name: str, body: str) -> None:
    path = bindir / name
    path.write_text("#!/bin/sh\n" + body)
    path.chmod(0o755)


@pytest.fixture
def fetch(bundles, tmp_path):
    bindir = tmp_path / "bin"
    bindir.mkdir()
    log = tmp_path / "calls.log"
    script = bundles["lora_single"] / "fetch-model.sh"   # an English bundle (vllm_service is Chinese)

    def run(hub: str = "modelscope", **env: str) -> subprocess.CompletedProcess:
        full = {"PATH": f"{bindir}:{SYSTEM_PATH}", "MODEL_DIR": str(tmp_path / "models"), "MODEL_HUB": hub,
                "HF_TOKEN": "hf_secretSecretSecret123", **env}
        return subprocess.run(["bash", str(script)], capture_output=True, text=True, env=full, timeout=60)

    # A downloader stub writes config.json and a weight file into the folder named after --local_dir/--local-dir.
    writer = ('echo "$(basename "$0") $*" >> ' + str(log) + '\n'
              'for a in "$@"; do if [ "$prev" = --local_dir ] || [ "$prev" = --local-dir ]; then d="$a"; fi; prev="$a"; '
              'done\nmkdir -p "$d" && echo {} > "$d/config.json" && head -c 2097152 /dev/zero > "$d/model.safetensors"\n')
    return run, bindir, log, writer


def test_fetch_model_downloads_once_from_modelscope(fetch, tmp_path):
    run, bindir, log, writer = fetch
    _stub(bindir, "modelscope", writer)
    first = run()
    assert first.returncode == 0, first.stderr
    # the formats no engine here loads are left out (Meta's original/*.pth: a second copy of a Llama checkpoint)
    assert log.read_text().splitlines() == [f"modelscope download --model Qwen/Qwen2.5-7B-Instruct --local_dir "
                                            f"{tmp_path / 'models'} --exclude original/* *.gguf onnx/* *.onnx "
                                            "*.onnx_data openvino/* *.h5 *.msgpack"]
    assert (tmp_path / "models/.gpuplan-complete").exists()
    assert re.search(r"fetch-model.sh: \d+ MB in \d+ s into ", first.stdout)
    again = run()
    assert again.returncode == 0 and "already in" in again.stdout and len(log.read_text().splitlines()) == 1
    assert "hf_secret" not in first.stdout + first.stderr + again.stdout + again.stderr


def test_a_copy_placed_by_hand_is_used_and_a_half_done_download_is_not(fetch, tmp_path):
    """Weights copied into MODEL_DIR by hand (an ACK claim, a NAS share) carry no download marker: they are used as
    they are (before: a staged plan stopped, "MODEL_OSS is not set"). A download that stopped half way leaves
    .gpuplan-partial, so its files are not taken for a copy: the script downloads again."""
    run, bindir, log, writer = fetch
    models = tmp_path / "models"
    models.mkdir()
    (models / "config.json").write_text("{}")
    res = run(MODEL_OSS="oss://my-bucket/qwen7b/")
    assert res.returncode == 0 and "placed there by hand" in res.stdout and not log.exists()
    (models / ".gpuplan-partial").write_text("")
    _stub(bindir, "ossutil", 'echo "ossutil $*" >> ' + str(log) + '\necho {} > "$7/config.json"\n')
    again = run(MODEL_OSS="oss://my-bucket/qwen7b/")
    assert again.returncode == 0 and log.read_text().startswith("ossutil cp -r -f --jobs 16 oss://my-bucket/qwen7b/")
    assert (models / ".gpuplan-complete").exists() and not (models / ".gpuplan-partial").exists()


def test_fetch_model_in_a_mainland_region_never_asks_hugging_face(fetch):
    """cn-* bundles fetch from ModelScope or OSS only: a failed ModelScope download fails (no Hugging Face fallback),
    and MODEL_HUB=huggingface is refused with one line (huggingface.co is not reliably reachable from mainland nodes)."""
    run, bindir, log, writer = fetch
    _stub(bindir, "modelscope", "exit 1\n")
    _stub(bindir, "hf", writer)
    res = run()
    assert res.returncode != 0 and not log.exists()
    hub = run(hub="huggingface")
    assert hub.returncode == 2 and len(hub.stderr.strip().splitlines()) == 1 and "mainland region" in hub.stderr
    assert not log.exists() and "hf_secret" not in res.stdout + res.stderr + hub.stderr


def test_fetch_model_outside_the_mainland_downloads_from_hugging_face(tmp_path):
    plan, workload, est = inputs("lora_single")
    files = render_bundle(dict(plan, region="ap-southeast-1", price_region="ap-southeast-1"), workload, est)
    script = tmp_path / "fetch-model.sh"
    script.write_text(files["fetch-model.sh"])
    bindir = tmp_path / "bin"
    bindir.mkdir()
    log = tmp_path / "calls.log"
    _stub(bindir, "hf", f'echo "hf $*" >> {log}\nmkdir -p "$4" && echo {{}} > "$4/config.json"\n')
    res = subprocess.run(["bash", str(script)], capture_output=True, text=True, timeout=60,
                         env={"PATH": f"{bindir}:{SYSTEM_PATH}", "MODEL_DIR": str(tmp_path / "m"),
                              "HF_TOKEN": "hf_secretSecretSecret123"})
    assert res.returncode == 0, res.stderr
    skipped = " ".join(f"--exclude {p}" for p in ("original/*", "*.gguf", "onnx/*", "*.onnx", "*.onnx_data",
                                                   "openvino/*", "*.h5", "*.msgpack"))
    assert log.read_text().strip() == f"hf download Qwen/Qwen2.5-7B-Instruct --local-dir {tmp_path / 'm'} {skipped}"
    assert "hf_secret" not in res.stdout + res.stderr


def test_fetch_model_copies_staged_weights_from_oss(fetch, tmp_path):
    run, bindir, log, _writer = fetch
    # the stub writes into the destination: the argument after the source (ossutil cp SRC DST [options])
    _stub(bindir, "ossutil", 'echo "ossutil $*" >> ' + str(log) + '\nd="$7"\n'
          'echo {} > "$d/config.json"\n')
    res = run(MODEL_OSS="oss://my-bucket/qwen7b/")
    assert res.returncode == 0, res.stderr
    # ossutil 1.x reads no credentials by itself: the region's internal endpoint and the node role the Terraform
    # attaches (alicloud_ram_role.node) are on every call (before: no endpoint, no credentials, so it failed)
    assert log.read_text().strip() == (f"ossutil cp -r -f --jobs 16 oss://my-bucket/qwen7b/ {tmp_path / 'models'}/ "
                                       "-e oss-cn-shanghai-internal.aliyuncs.com --mode EcsRamRole "
                                       "--ecs-role-name qwen7b-lora-demo-node")
    tf = (Path(__file__).parent / "golden" / "lora_single" / "terraform" / "main.tf").read_text()
    assert 'role_name                   = "qwen7b-lora-demo-node"' in tf
    assert "role_name                  = alicloud_ram_role.node.role_name" in tf   # on the instance
    log.write_text("")
    for f in (tmp_path / "models").iterdir():   # an empty folder again (a copy with config.json is taken as is)
        f.unlink()
    res = run(MODEL_OSS="oss://my-bucket/qwen7b/", OSS_ROLE="")   # your ossutil config file instead of the role
    assert res.returncode == 0, res.stderr
    assert log.read_text().strip().endswith("/ -e oss-cn-shanghai-internal.aliyuncs.com")
    (bindir / "ossutil").unlink()
    for f in (tmp_path / "models").iterdir():
        f.unlink()
    missing = run(MODEL_OSS="oss://my-bucket/qwen7b")
    assert missing.returncode != 0 and "ossutil is not installed" in missing.stderr


def test_fetch_model_asks_modelscope_for_its_own_id_and_stops_for_an_unknown_one(tmp_path):
    """The ModelScope id, not the Hugging Face one (meta-llama/Meta-Llama-3-70B is LLM-Research/Meta-Llama-3-70B on
    ModelScope, ms-swift's registry); a model the table cannot place stops with one line asking for MODELSCOPE_ID or
    MODEL_OSS instead of guessing."""
    plan, workload, est = inputs("lora_single")
    bindir = tmp_path / "bin"
    bindir.mkdir()
    log = tmp_path / "calls.log"
    _stub(bindir, "modelscope", f'echo "modelscope $*" >> {log}\nmkdir -p "$5" && echo {{}} > "$5/config.json"\n')
    for model, want in (("meta-llama/Meta-Llama-3-70B", "LLM-Research/Meta-Llama-3-70B"),
                        ("tiiuae/falcon-7b", None)):
        files = render_bundle(plan, workload.model_copy(update={"model": model}), est)
        script = tmp_path / "fetch-model.sh"
        script.write_text(files["fetch-model.sh"])
        res = subprocess.run(["bash", str(script)], capture_output=True, text=True, timeout=60,
                             env={"PATH": f"{bindir}:{SYSTEM_PATH}", "MODEL_DIR": str(tmp_path / model)})
        if want:
            assert res.returncode == 0, res.stderr
            assert log.read_text().split()[:4] == ["modelscope", "download", "--model", want]
        else:
            assert res.returncode == 2 and len(res.stderr.strip().splitlines()) == 1
            assert "MODELSCOPE_ID" in res.stderr and "MODEL_OSS" in res.stderr
            ok = subprocess.run(["bash", str(script)], capture_output=True, text=True, timeout=60,
                                env={"PATH": f"{bindir}:{SYSTEM_PATH}", "MODEL_DIR": str(tmp_path / "f"),
                                     "MODELSCOPE_ID": "someone/falcon-7b"})
            assert ok.returncode == 0 and log.read_text().splitlines()[-1].split()[3] == "someone/falcon-7b"


def test_fetch_model_downloads_once_for_nodes_sharing_the_folder(fetch, bundles, tmp_path):
    """Two nodes (or pods) sharing MODEL_DIR on NAS/CPFS: one downloads, the other waits for its marker."""
    _run, bindir, log, writer = fetch
    _stub(bindir, "modelscope", "sleep 2\n" + writer)
    env = {"PATH": f"{bindir}:{SYSTEM_PATH}", "MODEL_DIR": str(tmp_path / "models"), "FETCH_WAIT_S": "60"}
    script = str(bundles["lora_single"] / "fetch-model.sh")
    procs = [subprocess.Popen(["bash", script], env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
             for _ in range(2)]
    outs = [p.communicate(timeout=90) for p in procs]
    assert [p.returncode for p in procs] == [0, 0], outs
    assert len(log.read_text().splitlines()) == 1          # one download
    assert (tmp_path / "models/.gpuplan-complete").exists() and not (tmp_path / "models.lock").exists()



def test_a_lock_left_by_a_killed_download_is_taken_over(fetch, tmp_path):
    """A download killed mid-way (docker stop's SIGKILL, a reboot) leaves $MODEL_DIR.lock behind: its owner no longer
    refreshes it, so the next start takes it over after FETCH_STALE_S instead of waiting WAIT_S and failing forever."""
    run, bindir, log, writer = fetch
    _stub(bindir, "modelscope", writer)
    lock = tmp_path / "models.lock"
    lock.mkdir()
    old = time.time() - 600
    os.utime(lock, (old, old))
    res = run(FETCH_STALE_S="300", FETCH_WAIT_S="30")
    assert res.returncode == 0, res.stderr
    assert "taking it over" in res.stderr
    assert (tmp_path / "models/.gpuplan-complete").exists() and not lock.exists()


def test_a_lock_a_live_download_refreshes_is_waited_for(fetch, tmp_path):
    """A lock younger than FETCH_STALE_S belongs to a download under way: the script waits (here: until WAIT_S)."""
    run, bindir, log, writer = fetch
    _stub(bindir, "modelscope", writer)
    (tmp_path / "models.lock").mkdir()
    res = run(FETCH_STALE_S="300", FETCH_WAIT_S="0")
    assert res.returncode == 1 and "held for" in res.stderr
    assert not log.exists()                                  # nothing downloaded beside the live one

# --- a failed shared mount stops the job ------------------------------------------------------------------

def test_a_failed_shared_mount_fails_loudly(bundles, tmp_path):
    doc = yaml.safe_load((bundles["two_node"] / "cloud-init.yaml").read_text())
    script = next(f["content"] for f in doc["write_files"] if f["path"].endswith("mount-shared.sh"))
    env_file = tmp_path / "job.env"
    env_file.write_text("SHARED_MOUNT='0a1b2c-x.cn-beijing.extreme.nas.aliyuncs.com:/share'\n")
    shared = tmp_path / "shared"
    script = script.replace("/etc/gpuplan/llama8b-full-2node.env", str(env_file)).replace("/mnt/shared", str(shared))
    path = tmp_path / "mount-shared.sh"
    path.write_text(script)
    bindir = tmp_path / "bin"
    bindir.mkdir()
    _stub(bindir, "mount", "exit 32\n")
    _stub(bindir, "mountpoint", "exit 1\n")
    _stub(bindir, "sleep", "exit 0\n")
    res = subprocess.run(["sh", str(path)], capture_output=True, text=True, timeout=60,
                         env={"PATH": f"{bindir}:{SYSTEM_PATH}"})
    assert res.returncode == 1
    assert "could not mount 0a1b2c-x" in res.stderr and "will not start until" in res.stderr
    unit = next(p for p in bundles["two_node"].iterdir() if p.suffix == ".service").read_text()
    guard = re.search(r"^ExecStartPre=/bin/sh -c '(mountpoint -q /mnt/shared .*)'$", unit, re.M).group(1)
    check = subprocess.run(["sh", "-c", guard], capture_output=True, text=True, env={"PATH": f"{bindir}:{SYSTEM_PATH}"})
    assert check.returncode == 1 and "/mnt/shared is not mounted" in check.stderr


def test_training_unit_fetches_the_model_within_its_start_timeout(bundles):
    plan, workload, est = inputs("two_node")
    t = transfers(build_context(plan, workload, est))
    unit = next(p for p in bundles["two_node"].iterdir() if p.suffix == ".service").read_text()
    assert re.search(r"^ExecStartPre=/usr/bin/docker run --rm --network host .* -v /mnt/shared:/mnt/shared "
                     r"gpuplan/llama8b-full-2node:bundle bash /workspace/fetch-model.sh$", unit, re.M)
    timeout = int(re.search(r"^TimeoutStartSec=(\d+)$", unit, re.M).group(1))
    assert timeout >= 2 * t.download_s
    assert "EnvironmentFile=-/etc/gpuplan/secrets.env" in unit
    env = next(f["content"] for f in yaml.safe_load((bundles["two_node"] / "cloud-init.yaml").read_text())["write_files"]
               if f["path"].endswith(".env"))
    # two nodes with CPFS: the weights are staged once on the shared file system
    assert "MODEL_DIR=/mnt/shared/models/llama8b-full-2node" in env and "HF_TOKEN" not in env
    assert os.environ.get("HF_TOKEN", "hf_") not in env


def test_the_data_disk_is_awaited_and_a_missing_one_fails_loudly(bundles, tmp_path):
    """The kept disk is attached by Terraform after the instance starts: mount-data.sh waits for it (here it
    never comes: the stubbed lsblk shows only the root disk), then fails with one line instead of going on."""
    doc = yaml.safe_load((bundles["lora_single"] / "cloud-init.yaml").read_text())
    script = next(f["content"] for f in doc["write_files"] if f["path"].endswith("mount-data.sh"))
    data = tmp_path / "data"
    path = tmp_path / "mount-data.sh"
    path.write_text(script.replace("/mnt/data", str(data)).replace("/etc/fstab", str(tmp_path / "fstab")))
    bindir = tmp_path / "bin"
    bindir.mkdir()
    sleeps = tmp_path / "sleeps"
    for name, body in {"mountpoint": "exit 1\n", "findmnt": "echo /dev/vda1\n", "blkid": "exit 2\n",
                       "lsblk": 'case "$*" in *PKNAME*) echo vda;; *NAME,TYPE*) echo "/dev/vda disk";; esac\n',
                       "sleep": f"echo x >> {sleeps}\n", "mount": "exit 32\n", "mkfs.ext4": "exit 1\n"}.items():
        _stub(bindir, name, body)
    res = subprocess.run(["sh", str(path)], capture_output=True, text=True, timeout=60,
                         env={"PATH": f"{bindir}:{SYSTEM_PATH}"})
    assert res.returncode == 1 and "no data disk found" in res.stderr
    assert len(sleeps.read_text().splitlines()) == 60          # 10 minutes of waiting, in 10 s steps
