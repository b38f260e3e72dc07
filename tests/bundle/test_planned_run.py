"""The planned run and nothing else, on storage that holds it (issue 28): run length as planned (epochs or the token
budget), checkpoints rotated to what the plan's storage counts, the loss on the answer tokens, remote code trusted
where the model needs it, the DLC job's storage mounted, engine flags for what the plan counted, and a rehearsal that
says what to install instead of a traceback."""

from __future__ import annotations

import importlib.util
import json
import math
import shlex
import subprocess
from pathlib import Path

import pytest
import yaml

from gpuplan.plan.advice.storage import storage_advice, storage_budget
from gpuplan.render.bundle import render_bundle
from gpuplan.units import GIB
from gpuplan.workload import Workload
from gpuplan.write_bundle import write_plan_bundle

from .scenarios import inputs

TRAIN_PY = Path(__file__).resolve().parents[2] / "src/gpuplan/render/templates/bundle/train.py"


def _words(script: str, name: str) -> list[str]:
    line = next(ln for ln in script.splitlines() if ln.startswith(f"{name}=("))
    return shlex.split(line[len(name) + 2: line.rindex(")")])


def _default(script: str, var: str) -> str:
    line = next(ln for ln in script.splitlines() if ln.startswith(f'{var}="${{{var}:-'))
    return line.split(":-", 1)[1].split("}", 1)[0]


# --- storage that holds the whole run ------------------------------------------------------------------------

def test_a_70b_megatron_run_keeps_two_checkpoints_and_fits_its_cpfs(tmp_path):
    """Llama-3-70B full fine-tuning, 1B tokens over four 8 x A100 nodes under Megatron: each checkpoint is 14 bytes per
    parameter (16-bit weights + fp32 master + two fp32 Adam moments: 70.6e9 x 14 = 988 GB). Unrotated, 23 saves
    (1,908 steps, one every 83) would need 22.7 TB of the 16,800 GiB CPFS; the bundle keeps 2 (--save_total_limit 2) and
    the plan counts exactly that: weights + data + 2 checkpoints + the final model <= the CPFS."""
    w = Workload.model_validate({"name": "llama3-70b-full", "model": "meta-llama/Meta-Llama-3-70B", "task": "full",
                                 "framework": "megatron", "seq_len": 4096, "dataset": {"tokens": 1.0e9},
                                 "constraints": {"regions": ["cn-shanghai"], "deadline_hours": 168}})
    path, _ = write_plan_bundle(w, tmp_path / "b")
    doc = json.loads((path / "plan.json").read_text())
    storage = doc["plan"]["storage"]
    b = storage["budget"]
    assert b["checkpoint_bytes"] == pytest.approx(70.6e9 * 14, rel=0.01)
    assert b["checkpoints_kept"] == 2 == doc["bundle"]["checkpoint_rotation"]
    assert b["checkpoints_on"] == "shared" and b["fits"]
    assert b["shared_needed_bytes"] == b["weights_bytes"] + b["dataset_bytes"] + 2 * b["checkpoint_bytes"] + \
        b["final_bytes"] <= b["shared_bytes"] == storage["shared"]["capacity_gib"] * GIB
    launch = (path / "launch.sh").read_text()
    assert '--save_total_limit "$SAVE_TOTAL_LIMIT"' in launch and _default(launch, "SAVE_TOTAL_LIMIT") == "2"
    # the weights: the local copy staged once on the CPFS, never a hub id (no --use_hf, no --model in the fixed args)
    megatron = _words(launch, "MEGATRON_ARGS")
    assert "--use_hf" not in megatron and "--model" not in megatron
    assert 'MEGATRON_CMDLINE=(--model "$MODEL"' in launch and _default(launch, "MODEL_DIR").startswith("/mnt/shared/")
    saves = math.ceil(int(megatron[megatron.index("--train_iters") + 1]) / int(_default(launch, "SAVE_STEPS")))
    assert saves * b["checkpoint_bytes"] > b["shared_bytes"]   # what rotation prevents


def test_the_budget_adds_up_on_the_disk_without_shared_storage():
    adv = storage_advice(training=True, nodes=1, read_bytes_s=1e6, checkpoint_bytes=60e9, model_bytes=15e9,
                         dataset_bytes=2e9, instance_disk_mb_s=None, final_bytes=15e9)
    b = adv["budget"]
    assert adv["checkpoints_kept"] == b["checkpoints_kept"] == 2 and b["checkpoints_on"] == "disk"
    assert b["disk_needed_bytes"] == b["scratch_bytes"] + 15e9 + 2e9 + 2 * 60e9 + 15e9
    assert b["disk_needed_bytes"] <= b["disk_bytes"] == adv["disk"]["size_gib"] * GIB and b["fits"]
    assert storage_budget(model_bytes=1, dataset_bytes=0, checkpoint_bytes=10 * GIB, kept=2, final_bytes=0,
                          scratch_bytes=0, disk={"size_gib": 5}, shared=None)["fits"] is False


# --- the run length as planned -------------------------------------------------------------------------------

def test_a_two_epoch_lora_trains_two_epochs_everywhere():
    """100,000 samples x 2,048 tokens x 2 epochs = 409.6M tokens; global batch 16 x 2,048 tokens: 12,500 steps in
    launch.sh, LLaMA-Factory and ms-swift (max_steps), with the epochs stated."""
    plan, w, est = inputs("lora_single")
    w = w.model_copy(update={"dataset": w.dataset.model_copy(update={"tokens": None, "samples": 100_000,
                                                                     "tokens_per_sample": 2048, "epochs": 2})})
    files = render_bundle(plan, w, est)
    args = _words(files["launch.sh"], "PLAN_ARGS")
    global_batch, seq = int(args[args.index("--global_batch") + 1]), int(args[args.index("--seq_len") + 1])
    steps = math.ceil(100_000 * 2048 * 2 / (global_batch * seq))
    assert _default(files["launch.sh"], "MAX_STEPS") == str(steps)
    lf = yaml.safe_load(files["llamafactory.yaml"])
    assert lf["max_steps"] == steps and lf["num_train_epochs"] == 2.0 and lf["save_total_limit"] == 2
    assert _default(files["swift-sft.sh"], "MAX_STEPS") == str(steps) and "--num_train_epochs 2" in files["swift-sft.sh"]
    assert json.loads(files["plan.json"])["bundle"]["train_steps"] == steps


# --- the loss on the answers ---------------------------------------------------------------------------------

def _train_module():
    spec = importlib.util.spec_from_file_location("bundle_train", TRAIN_PY)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def test_sft_labels_mask_the_prompt_and_pretraining_learns_every_token():
    t = _train_module()
    rows = [[{"role": "system", "content": "Be brief."}, {"role": "user", "content": "What is 2+2?"},
             {"role": "assistant", "content": "4."}]]
    sft = t.tokenize(rows, None, 64, mask_prompt=True)
    ids, labels = sft[:, 0].flatten().tolist(), sft[:, 1].flatten().tolist()
    text = bytes(i for i in ids[:ids.index(0)]).decode()
    assert text == "system: Be brief.\nuser: What is 2+2?\nassistant: 4.\n"
    learned = bytes(i for i, lab in zip(ids, labels, strict=True) if lab != -100 and i).decode()
    assert learned.startswith("assistant: 4.\n") and "2+2" not in learned
    full = t.tokenize(rows, None, 64, mask_prompt=False)
    assert (full[:, 1] == full[:, 0]).all()
    # every block keeps a label to predict after its first position: a block whose only label is its first token has
    # a loss of 0/0 (NaN, which poisoned a DeepSpeed rehearsal's steps) and is dropped. With a 1-byte question and a
    # 1-byte answer in 7-byte blocks, a block starts with the answer's last byte and holds no other label.
    tiny = [[{"role": "user", "content": "q"}, {"role": "assistant", "content": "a"}]]
    short = t.tokenize(tiny, None, 7, mask_prompt=True)
    assert len(short) and (short[:, 1, 1:] != -100).any(dim=1).all()


def test_the_chat_template_marks_the_assistant_turns():
    t = _train_module()

    class Tok:   # a chat template that wraps each turn; bytes as tokens
        chat_template = "x"
        eos_token_id = 0

        def apply_chat_template(self, msgs, tokenize=False):
            return "".join(f"<{m['role']}>{m['content']}</>" for m in msgs)

        def __call__(self, text, add_special_tokens=False):
            return {"input_ids": list(text.encode())}

    pieces = t.segments([{"role": "user", "content": "hi"}, {"role": "assistant", "content": "yo"}], Tok())
    assert pieces == [("<user>hi</>", False), ("<assistant>yo</>", True)]


# --- remote code, engines ------------------------------------------------------------------------------------

def test_qwen_7b_chat_loads_with_its_remote_code_everywhere():
    plan, w, est = inputs("lora_single")
    est = json.loads(json.dumps(est))
    est["model"]["arch"] = "qwen1"
    files = render_bundle(plan, w.model_copy(update={"model": "Qwen/Qwen-7B-Chat"}), est)
    assert _default(files["launch.sh"], "TRUST_REMOTE_CODE") == "1"
    assert yaml.safe_load(files["llamafactory.yaml"])["trust_remote_code"] is True
    assert "--trust_remote_code true" in files["swift-sft.sh"]
    assert json.loads(files["plan.json"])["weights"]["trust_remote_code"] is True
    sp, sw, se = inputs("vllm_service")
    se = json.loads(json.dumps(se))
    se["model"]["arch"] = "qwen1"
    served = render_bundle(sp, sw.model_copy(update={"model": "Qwen/Qwen-7B-Chat"}), se)
    assert "--trust-remote-code" in served["serve.sh"] and "--trust-remote-code" in served["serve-sglang.sh"]
    plain = render_bundle(*inputs("vllm_service"))
    assert "--trust-remote-code" not in plain["serve.sh"]


def test_vllm_dp_attention_starts_what_the_plan_counted():
    """A plan that counts data-parallel attention on one node gets it launched: vLLM -dp over the TP ranks with the
    experts split (TP 1); SGLang --enable-dp-attention --dp-size."""
    plan, w, est = inputs("vllm_service")
    plan = json.loads(json.dumps(plan))
    plan["parallel"].update({"tp": 4, "dp_attention": True, "ep": 4})
    est = json.loads(json.dumps(est))
    est["parallel"].update({"tp": 4})
    files = render_bundle(plan, w, est)
    serve = files["serve.sh"]
    assert "--tensor-parallel-size 1\n" in serve and "--data-parallel-size 4\n" in serve
    assert "--enable-expert-parallel" in serve
    sg = files["serve-sglang.sh"]
    assert "--enable-dp-attention" in sg and "--dp-size 4" in sg


def test_dp_attention_across_pipeline_stages_is_not_planned():
    from gpuplan.plan import recommend

    w = Workload.model_validate({"name": "r1", "model": "deepseek-ai/DeepSeek-R1", "task": "inference",
                                 "prompt_tokens": 4096, "output_tokens": 1024,
                                 "serving": {"requests_per_s": 2, "peak_requests_per_s": 4, "ttft_ms": 10000,
                                             "tpot_ms": 100}, "constraints": {"regions": ["cn-shanghai"]}})
    plans = recommend(w, top=5).to_dict()["plans"]
    assert plans
    for p in plans:
        par = p["parallel"]
        if par.get("dp_attention"):
            assert par["pp"] == 1 and (par["engine"] == "sglang" or p["instance_count"] // p["replicas"] == 1)


# --- PAI-DLC keeps its outputs ------------------------------------------------------------------------------

@pytest.mark.parametrize("scenario", ["lora_single", "two_node"])
def test_the_dlc_job_mounts_the_storage_its_weights_and_checkpoints_live_on(scenario):
    files = render_bundle(*inputs(scenario))
    job = json.loads(files["pai-dlc-job.json"])
    (mount,) = job["DataSources"]
    env = job["Envs"]
    assert env["OUTPUT_DIR"].startswith(mount["MountPath"] + "/") and env["MODEL_DIR"].startswith(mount["MountPath"] + "/")
    assert mount["Uri"].startswith("nas://" if scenario == "two_node" else "oss://")


# --- the rehearsal without the training stack ---------------------------------------------------------------

def test_the_rehearsal_without_the_training_stack_says_what_to_install(tmp_path):
    python = Path("/usr/bin/python3")
    if not python.exists() or subprocess.run([str(python), "-c", "import torch"], capture_output=True).returncode == 0:
        pytest.skip("needs a python3 without torch at /usr/bin/python3")
    files = render_bundle(*inputs("spot_job"))
    for rel, text in files.items():
        (tmp_path / rel).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / rel).write_text(text)
    res = subprocess.run(["bash", "launch.sh", "--smoke"], cwd=tmp_path, capture_output=True, text=True, timeout=60,
                         env={"PATH": "/usr/bin:/bin", "HOME": str(tmp_path)})
    assert res.returncode == 3 and "Traceback" not in res.stderr + res.stdout
    assert "not installed here: torch transformers peft bitsandbytes" in res.stderr
    assert "pip install -i https://mirrors.aliyun.com/pypi/simple/" in res.stderr and "torch==2.10.0" in res.stderr
    direct = subprocess.run(["/usr/bin/python3", "train.py", "--help"], cwd=tmp_path, capture_output=True, text=True,
                            timeout=60)
    assert direct.returncode != 0 and "Traceback" not in direct.stderr and "pip install -r requirements.txt" in \
        direct.stderr
