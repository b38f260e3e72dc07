"""The generated training launches run the planned job: `./launch.sh --smoke` (no settings, CPU, gloo,
the plan's layout mapped to local node groups, a tiny model of the plan's family, 6 steps, a checkpoint,
SIGKILL, a resume) for the five training workloads of issue 22 and an FSDP plan; the Megatron command
line parses with ms-swift 4.5.2's own argument classes; resume finds ms-swift's versioned folders; every
pick of every training example writes a bundle whose files agree on the batch arithmetic.
`pytest -k smoke` selects these.
"""

from __future__ import annotations

import json
import os
import re
import shlex
import socket
import subprocess
import sys
import time
from pathlib import Path

import pytest
import yaml

from gpuplan.errors import GpuplanError
from gpuplan.write_bundle import write_plan_bundle
from gpuplan.plan.search.candidates import launchable, launcher_for
from gpuplan.render.bundle import build_bundle
from gpuplan.workload import Workload
from gpuplan.workload_loading import load_workload

from .scenarios import inputs

ROOT = Path(__file__).resolve().parents[2]
EXAMPLES = ROOT / "examples"
BIN = str(Path(sys.executable).parent)
SMOKE_TIMEOUT_S = 400


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def smoke_env(tmp: Path, **extra: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("RANK", "LOCAL_RANK", "WORLD_SIZE"))}
    env.update(PATH=BIN + os.pathsep + env.get("PATH", ""), PYTHONPATH="", SMOKE_STEP_DELAY="0.3",
               MASTER_ADDR="127.0.0.1", TMPDIR=str(tmp))
    env.update(extra)
    return env


def launch_var(bundle: Path, name: str) -> list[str]:
    """The words of a bash array assigned in launch.sh (as bash itself splits them)."""
    line = next(ln for ln in (bundle / "launch.sh").read_text().splitlines() if ln.startswith(f"{name}=("))
    return shlex.split(line[len(name) + 2: line.rindex(")")])


def arg(words: list[str], flag: str) -> str:
    return words[words.index(flag) + 1]


# --------------------------------------------------------------------------------- CPU smoke runs
# The five training workloads of issue 22, each planned by the recommender and rehearsed with
# `./launch.sh --smoke` and no settings at all (only PATH to the test's Python and HOME).
# The smoke runs the plan's accumulation for real (6 steps x accumulation micro-steps on CPU), so each workload
# pins a small global batch (or accumulation): the plan keeps its launcher, layout, checkpointing and optimizer
# (EXPECTED below checks them) with accumulation 1 to 4 instead of the recipes' 16 to 128, which took the five
# rehearsals from 15 minutes (one past its 400 s timeout) to about two (issue 32).
WORKLOADS: dict[str, dict | tuple[str, dict]] = {
    # 70B full fine-tuning over two nodes under Megatron (TP 8 x PP 2), full recomputation.
    "llama70b_full_megatron": {"name": "llama70b-full", "model": "meta-llama/Meta-Llama-3-70B", "task": "full",
                               "grad_checkpointing": True, "parallel": {"tp": 8, "pp": 2}, "global_batch_size": 4,
                               "dataset": {"tokens": 1.0e9}, "constraints": {"max_gpus": 64}},  # refitted bands: TP8 x PP2 needs DP > 2 to fit at the high end
    # 70B LoRA with the framework named: DeepSpeed ZeRO-3 (was an ms-swift Megatron launch).
    "llama70b_lora_deepspeed": {"name": "llama70b-lora-ds", "model": "meta-llama/Meta-Llama-3-70B", "task": "lora",
                                "framework": "deepspeed", "global_batch_size": 4, "dataset": {"tokens": 2.0e8}},
    # 7B LoRA on one GPU (the README example pinned to one GPU; its accumulation of 16 cut to 2). Its cheapest plan
    # since the plans count packed blocks is 4 x A100-40GB under Megatron TP2, tested by the Megatron workloads.
    "qwen7b_lora_one_gpu": ("qwen2.5-7b-lora.yaml", {"gradient_accumulation": 2, "gpus": 1}),
    # 1B pre-training with tensor parallelism (Megatron, TP 2).
    "llama1b_pretrain_tp": {"name": "llama1b-pretrain-tp", "model": "meta-llama/Llama-3.2-1B", "task": "pretrain",
                            "parallel": {"tp": 2}, "global_batch_size": 8, "dataset": {"tokens": 2.0e9}},
    # 8-bit AdamW (bitsandbytes) for a full fine-tune under DeepSpeed ZeRO-2 on one GPU.
    "qwen7b_full_adamw8bit": {"name": "qwen7b-full-8bit", "model": "Qwen/Qwen2.5-7B", "task": "full",
                              "optimizer": "adamw-8bit", "global_batch_size": 2, "hardware": {"count": 1},
                              "dataset": {"tokens": 1.0e8}},
}
EXPECTED = {   # what the plan must be for the test to mean what it says
    "llama70b_full_megatron": {"launcher": "megatron", "checkpointing": "full", "multi_node": True},
    "llama70b_lora_deepspeed": {"launcher": "deepspeed", "zero": 3},
    "qwen7b_lora_one_gpu": {"gpus_total": 1},
    "llama1b_pretrain_tp": {"launcher": "megatron", "tp": 2},
    "qwen7b_full_adamw8bit": {"optimizer": "adamw-8bit", "launcher": "deepspeed", "zero": 2},
}


def workload_bundle(key: str, tmp: Path) -> tuple[Path, dict]:
    spec = WORKLOADS[key]
    w = load_workload(EXAMPLES / spec[0], **spec[1]) if isinstance(spec, tuple) else Workload.model_validate(spec)
    path, _ = write_plan_bundle(w, tmp / key)
    return path, json.loads((path / "plan.json").read_text())


def check_plan(key: str, data: dict) -> None:
    plan, par = data["plan"], data["plan"]["parallel"]
    for k, v in EXPECTED[key].items():
        got = plan["instance_count"] > 1 if k == "multi_node" else plan.get(k, par.get(k))
        if k == "optimizer":
            got = par.get("optimizer") or data["workload"].get("optimizer")
        assert got == v, f"{key}: {k} is {got}, the test needs {v}: choose another workload"


def bare_smoke(bundle: Path, tmp: Path) -> str:
    """`./launch.sh --smoke` with no settings: only PATH (this Python's bin first) and HOME."""
    env = {"PATH": BIN + os.pathsep + "/usr/bin:/bin", "HOME": os.environ.get("HOME", str(tmp))}
    t0 = time.time()
    proc = subprocess.run(["bash", "launch.sh", "--smoke"], cwd=bundle, env=env, capture_output=True, text=True,
                          timeout=SMOKE_TIMEOUT_S)
    out = proc.stdout + proc.stderr
    assert proc.returncode == 0, out[-6000:]
    print(f"{bundle.name}: smoke {time.time() - t0:.1f} s")
    return out


@pytest.mark.parametrize("key", list(WORKLOADS))
def test_smoke_rehearses_the_planned_job(key, tmp_path):
    """The rehearsal runs the plan's launcher, micro-batch, global batch, checkpointing, optimizer and
    precision on CPU, in training mode, and resumes after a kill at a step above 0; train.py calls
    .train(); 8-bit plans name a bitsandbytes optimizer; Megatron launches carry a run length and the
    planned recompute granularity."""
    b, data = workload_bundle(key, tmp_path)
    check_plan(key, data)
    plan, par = data["plan"], data["plan"]["parallel"]
    dp = plan["gpus_total"] // (par["tp"] * par["pp"])
    optimizer = par.get("optimizer") or data["workload"]["optimizer"]
    ckpt = par["checkpointing"]
    assert "model.train()" in (b / "train.py").read_text()
    out = bare_smoke(b, tmp_path)
    assert (f"smoke: launcher {par['launcher']}, TP {par['tp']} x PP {par['pp']} x DP {dp}, micro-batch "
            f"{par['micro_batch']} x accumulation {par['gradient_accumulation']} x DP {dp} = global batch "
            f"{par['micro_batch'] * par['gradient_accumulation'] * dp}, checkpointing {ckpt}, optimizer "
            f"{optimizer}") in out
    assert "training mode on" in out
    assert re.search(rf"activation checkpointing {ckpt}: \d+ layer forwards recomputed", out)
    if ckpt != "none":
        assert not re.search(r"activation checkpointing \w+: 0 layer forwards", out)
    opt_class = {"adamw-8bit": "AdamW8bit"}.get(optimizer, "AdamW")
    assert re.search(rf"optimizer {opt_class} \(\S+\) for {optimizer}; master weights float32", out)
    m = re.search(r"resumed from \S+/checkpoint-(\d+) at step (\d+)", out)
    assert m and m.group(1) == m.group(2) and int(m.group(2)) > 0, out[-3000:]
    assert re.search(r"loss \d+\.\d+ -> \d+\.\d+ over 6 steps: down", out)
    assert f"smoke: OK ({par['launcher']}," in out
    # the bundle's own fetch-model.sh staged the weights from the local stand-in of the in-region source, with the
    # hubs unreachable; the run kept no more checkpoints than the plan's storage counts; SFT masked the prompt
    assert re.search(r"smoke: fetch-model.sh: \d+ MB in \d+ s into \S+/model \(\S+\)", out)
    assert "smoke: 2 checkpoint(s) kept (SAVE_TOTAL_LIMIT 2)" in out
    assert ("prompt masked" in out) == (data["workload"]["task"] != "pretrain")
    # the rehearsal ran the Python minor version of the node image (plan.json environment)
    assert f"versions: Python {data['environment']['python']}." in out
    if par["launcher"] == "megatron":
        words = launch_var(b, "MEGATRON_ARGS")
        assert int(arg(words, "--train_iters")) > 0
        assert arg(words, "--recompute_granularity") == ckpt
        # sequence parallelism: launched exactly when the estimate counted it (on for Megatron with TP > 1)
        assert ("--sequence_parallel" in words) == bool(data["estimate"]["parallel"]["sp"]) == (par["tp"] > 1)
        assert "Megatron-Core needs CUDA" in out
        if MS_SWIFT.is_dir():   # the job's whole command line, resume flags included, parsed by ms-swift itself
            assert "command line parsed by ms-swift 4.5.2's" in out
            assert f"micro_batch_size {par['micro_batch']}," in out and f"recompute_granularity {ckpt}," in out
    if plan["instance_count"] > 1:
        assert re.search(r"smoke: 2 local node\(s\)", out)
    if optimizer == "adamw-8bit":
        assert "bitsandbytes==" in (b / "requirements.txt").read_text()
        assert "AdamW8bit" in out
        if (b / "ds_config.json").exists():
            assert json.loads((b / "ds_config.json").read_text())["zero_allow_untested_optimizer"] is True


def test_smoke_fsdp(tmp_path):
    """A full fine-tune with FSDP FULL_SHARD from the workload: launcher fsdp, FSDP2 with bf16 compute over fp32
    master weights on 2 CPU ranks, kill and resume."""
    w = Workload.model_validate({"name": "llama8b-fsdp", "model": "meta-llama/Llama-3.1-8B", "task": "full",
                                 "hardware": {"instance_type": "ecs.gn7e-c16g1.32xlarge"},
                                 "parallel": {"fsdp": "full_shard"}, "dataset": {"tokens": 1.0e8}})
    from gpuplan.estimate.core import estimate
    from gpuplan.workload_defaults import resolve_defaults

    resolved, _ = resolve_defaults(w)
    est = estimate(resolved).to_dict()
    plan = dict(inputs("two_node")[0], instance_type="ecs.gn7e-c16g1.32xlarge", instance_count=1, gpus_total=8,
                parallel=est["parallel"])
    b = build_bundle(plan, resolved, est, tmp_path / "fsdp")
    assert launch_var(b, "PLAN_ARGS")[1::2][:2] == ["full", "fsdp"]
    assert not (b / "ds_config.json").exists()
    out = bare_smoke(b, tmp_path)
    assert "FSDP2 fully_shard, reshard_after_forward=True" in out and "master weights float32" in out
    assert re.search(r"resumed from \S+/checkpoint-(\d+) at step [1-9]", out)


MS_SWIFT = Path.home() / ".cache" / "gpuplan" / "ms-swift-4.5.2"


TRAIN_PY = ROOT / "src" / "gpuplan" / "render" / "templates" / "bundle" / "train.py"


def parse_megatron(words: list[str], cmd: str = "sft") -> subprocess.CompletedProcess:
    """`megatron sft|pt WORDS` parsed by ms-swift 4.5.2's own argument classes (train.py check-megatron-args)."""
    return subprocess.run([sys.executable, str(TRAIN_PY), "check-megatron-args", cmd, "4.5.2", *words],
                          capture_output=True, text=True, timeout=120,
                          env={"PATH": os.environ["PATH"], "HOME": os.environ.get("HOME", "/")})


def megatron_check(bundle: Path, cmd: str, extra: list[str]) -> subprocess.CompletedProcess:
    words = launch_var(bundle, "MEGATRON_ARGS") + ["--dataset", "data/train.jsonl", "--output_dir", "/x",
                                                   "--add_version", "false", "--save_steps", "100", *extra]
    return subprocess.run([sys.executable, "train.py", "check-megatron-args", cmd, "4.5.2", *words], cwd=bundle,
                          capture_output=True, text=True, timeout=120, env={"PATH": os.environ["PATH"],
                                                                            "HOME": os.environ.get("HOME", "/")})


@pytest.mark.skipif(not MS_SWIFT.is_dir(), reason="ms-swift 4.5.2 not in ~/.cache/gpuplan (scripts/install-test-tools.sh)")
def test_smoke_megatron_arguments_parse_with_ms_swift_itself(tmp_path):
    """ms-swift 4.5.2's own MegatronSftArguments and HfArgumentParser refuse an unknown flag (the 3.x
    `--train_type`) beside the bundle's flags, so the parse the rehearsal runs can fail (the rehearsal of this plan
    parses the job's whole command line, resume flags included: test_smoke_rehearses_the_planned_job); the
    parallel and recompute flags are the plan's."""
    b, data = workload_bundle("llama70b_full_megatron", tmp_path)
    par = data["plan"]["parallel"]
    bad = megatron_check(b, "sft", ["--train_type", "lora"])
    assert bad.returncode != 0 and "does not know ['--train_type', 'lora']" in bad.stderr
    words = launch_var(b, "MEGATRON_ARGS")
    assert (int(arg(words, "--tensor_model_parallel_size")), int(arg(words, "--pipeline_model_parallel_size"))) == \
        (par["tp"], par["pp"])
    assert arg(words, "--recompute_method") == "uniform" and arg(words, "--recompute_num_layers") == "1"


def test_smoke_megatron_resume_finds_ms_swift_versioned_folders(tmp_path):
    """The resume wrapper and launch.sh find the newest checkpoint-<iteration>/ with its tracker file, also
    under ms-swift's v<N>-<timestamp>/ run folders, and pass it back with --finetune false."""
    b, _ = workload_bundle("llama1b_pretrain_tp", tmp_path)
    ck = tmp_path / "ck"
    for rel, it in (("checkpoint-100", 100), ("v0-20260101-120000/checkpoint-300", 300),
                    ("v1-20260102-120000/checkpoint-200", 200), ("checkpoint-400", None)):
        (ck / rel).mkdir(parents=True)
        if it:
            (ck / rel / "latest_checkpointed_iteration.txt").write_text(f"{it}\n")
    script = (b / "run-with-resume.sh").read_text()
    body = script[script.index("latest_checkpoint() {"):script.index("pull_remote() {")]
    got = subprocess.run(["bash", "-c", f"CKPT_DIR={shlex.quote(str(ck))}\n{body}\nlatest_checkpoint"],
                         capture_output=True, text=True).stdout.strip()
    assert got == "v0-20260101-120000/checkpoint-300"
    stub = tmp_path / "bin"
    stub.mkdir()
    (stub / "megatron").write_text("#!/bin/sh\nprintf '%s\\n' \"$@\" > \"$ARGS_OUT\"\n")
    (stub / "megatron").chmod(0o755)
    model = tmp_path / "model"   # a local copy of the weights: launch.sh loads it as is (no fetch)
    model.mkdir()
    env = {"PATH": f"{stub}:/usr/bin:/bin", "OUTPUT_DIR": str(ck), "ARGS_OUT": str(tmp_path / "args"),
           "MODEL": str(model)}
    proc = subprocess.run(["bash", "launch.sh"], cwd=b, env=env, capture_output=True, text=True)
    assert proc.returncode == 0, proc.stderr
    words = (tmp_path / "args").read_text().split("\n")
    assert words[0] == "pt" and arg(words, "--mcore_model") == str(ck / "v0-20260101-120000/checkpoint-300")
    assert arg(words, "--finetune") == "false" and arg(words, "--model") == str(model)
    assert arg(words, "--save_total_limit") == "2" and "--use_hf" not in words


# --------------------------------------------------------------------------------- plans and bundles
TRAIN_EXAMPLES = sorted(p for p in EXAMPLES.glob("*.yaml")
                        if (yaml.safe_load(p.read_text()) or {}).get("task", "inference") != "inference")


@pytest.mark.parametrize("example", TRAIN_EXAMPLES, ids=lambda p: p.stem)
def test_smoke_every_pick_of_every_training_example_writes_a_consistent_bundle(example, tmp_path):
    """`gpuplan plan --pick N` for every plan of every training example: a bundle, no internal error; the
    launcher is the layout's, and ds_config.json, launch.sh and PLAN.md carry one global batch."""
    w = load_workload(example)
    from gpuplan.plan import recommend

    n = len(recommend(w, top=5).to_dict()["plans"])
    assert n >= 1
    for pick in range(1, n + 1):
        path, info = write_plan_bundle(w, tmp_path / f"pick{pick}", pick=pick)
        plan = json.loads((path / "plan.json").read_text())["plan"]
        par = plan["parallel"]
        assert par["launcher"] == launcher_for(par["tp"], par["pp"], par["zero"], par.get("fsdp") or "none",
                                               par["offload"], framework=w.framework)
        dp = plan["gpus_total"] // (par["tp"] * par["pp"])
        assert dp * par["tp"] * par["pp"] == plan["gpus_total"]
        global_batch = par["micro_batch"] * par["gradient_accumulation"] * dp
        args = launch_var(path, "PLAN_ARGS")
        assert int(arg(args, "--global_batch")) == global_batch
        assert int(arg(args, "--micro_batch")) == par["micro_batch"]
        assert f"| {global_batch} = micro-batch {par['micro_batch']} x accumulation" in (path / "PLAN.md").read_text()
        if par["launcher"] == "deepspeed":
            ds = json.loads((path / "ds_config.json").read_text())
            assert ds["train_batch_size"] == global_batch
            assert ds["train_batch_size"] == ds["train_micro_batch_size_per_gpu"] * \
                ds["gradient_accumulation_steps"] * dp
        if par["launcher"] == "megatron":
            megatron = launch_var(path, "MEGATRON_ARGS")
            assert int(arg(megatron, "--global_batch_size")) == global_batch
            # sequence parallelism: launched exactly when the estimate counted it
            est_sp = json.loads((path / "plan.json").read_text())["estimate"]["parallel"]["sp"]
            assert ("--sequence_parallel" in megatron) == bool(est_sp) == bool(par.get("sp"))
        model = arg(args, "--task") and re.search(r"^DEFAULT_MODEL=(\S+)$", (path / "launch.sh").read_text(),
                                                   re.M).group(1)
        assert "/" in model and ":" not in model      # a real repository id
        assert (path / "train.py").is_file() and (path / "data" / "train.jsonl").is_file()
        assert "torch==" in (path / "requirements.txt").read_text() or par["launcher"] == "megatron"


@pytest.mark.parametrize("model", ["llm-foundry:mpt-1b", {"params_b": 7}])
def test_smoke_synthetic_or_alias_model_is_refused_at_plan(model, tmp_path):
    w = Workload.model_validate({"name": "x", "model": model, "task": "pretrain", "dataset": {"tokens": 1e8},
                                 "constraints": {"max_gpus": 8}})
    with pytest.raises(GpuplanError) as err:
        write_plan_bundle(w, tmp_path / "b")
    assert "\n" not in str(err.value) and err.value.hint
    assert "repository id" in str(err.value) or "real model" in str(err.value)
    assert not (tmp_path / "b").exists()


def test_smoke_search_offers_only_launchable_layouts():
    """Llama-3-70B full fine-tuning across nodes: every plan's layout is runnable by its launcher
    (TP/PP only under Megatron, which has no ZeRO-2/3 and no offload)."""
    from gpuplan.plan import recommend

    w = Workload.model_validate({"name": "l70", "model": "meta-llama/Meta-Llama-3-70B", "task": "full",
                                 "dataset": {"tokens": 1e9}, "constraints": {"max_gpus": 32}})
    plans = recommend(w, top=10).to_dict()["plans"]
    assert plans
    for p in plans:
        par = p["parallel"]
        assert launchable("full", par["tp"], par["pp"], par["zero"], par["offload"])
        assert (par["launcher"] == "megatron") == (par["tp"] * par["pp"] > 1)
