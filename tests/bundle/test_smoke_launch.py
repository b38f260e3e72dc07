"""The generated training launches run: `./launch.sh --smoke` on CPU (gloo, 2 processes or 2 "nodes",
a tiny random model of the plan's family, 6 steps, a checkpoint, SIGKILL, a resume) for single-GPU
LoRA, ZeRO-3 full fine-tuning, FSDP, a two-node emulation on localhost and a tensor-parallel plan;
the Megatron arguments carry the plan's TP, PP and batch; every pick of every training example
writes a bundle whose files agree on the batch arithmetic. `pytest -k smoke` selects these.
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
from gpuplan.plan.bundle import write_plan_bundle
from gpuplan.plan.candidates import launchable, launcher_for
from gpuplan.render.bundle import build_bundle
from gpuplan.workload import Workload, load_workload

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


def run_smoke(bundle: Path, tmp: Path, **extra: str) -> str:
    """Run ./launch.sh --smoke in the bundle and return its output (the test fails on a non-zero exit)."""
    env = smoke_env(tmp, SMOKE_DIR=str(tmp / "smoke"), MASTER_PORT=str(free_port()), **extra)
    t0 = time.time()
    proc = subprocess.run(["bash", "launch.sh", "--smoke"], cwd=bundle, env=env, capture_output=True, text=True,
                          timeout=SMOKE_TIMEOUT_S)
    out = proc.stdout + proc.stderr
    assert proc.returncode == 0, out[-4000:]
    print(f"{bundle.name}: smoke {time.time() - t0:.1f} s")
    return out


def check_resumed(smoke_dir: Path, out: str, launcher: str, world: int) -> None:
    assert f"smoke: OK ({launcher}, {world} processes, 6 steps, killed and resumed)" in out
    run1 = (smoke_dir / "run1-node0.log").read_text()
    run2 = (smoke_dir / "run2-node0.log").read_text()
    m = re.search(r"resumed from \S+/checkpoint-(\d+) at step (\d+)", run2)
    assert m and m.group(1) == m.group(2) and 2 <= int(m.group(1)) < 6, run2[-2000:]
    assert "step 6/6" not in run1, "run 1 was not killed before the end"   # the kill landed mid-run
    resumed = int(m.group(1))
    assert f"step {resumed + 1}/6" in run2 and f"step {resumed}/6" not in run2   # continues, no repeat
    state = json.loads((smoke_dir / "out" / "checkpoint-6" / "trainer_state.json").read_text())
    assert state["global_step"] == 6 and state["world_size"] == world


def scenario_bundle(name: str, tmp: Path) -> Path:
    plan, workload, est = inputs(name)
    return build_bundle(plan, workload, est, tmp / name)


def launch_var(bundle: Path, name: str) -> list[str]:
    """The words of a bash array assigned in launch.sh (as bash itself splits them)."""
    line = next(ln for ln in (bundle / "launch.sh").read_text().splitlines() if ln.startswith(f"{name}=("))
    return shlex.split(line[len(name) + 2: line.rindex(")")])


def arg(words: list[str], flag: str) -> str:
    return words[words.index(flag) + 1]


# --------------------------------------------------------------------------------- CPU smoke runs
def test_smoke_single_gpu_lora(tmp_path):
    """Scenario lora_single (1 x A10, LoRA, DDP launcher): 2 CPU ranks, tiny Qwen2 + peft LoRA."""
    b = scenario_bundle("lora_single", tmp_path)
    assert json.loads((b / "plan.json").read_text())["plan"]["parallel"].get("launcher", "torchrun") == "torchrun"
    out = run_smoke(b, tmp_path, SMOKE_NPROC="2")
    check_resumed(tmp_path / "smoke", out, "torchrun", 2)
    assert "qwen2" in (b / "launch.sh").read_text()
    assert (tmp_path / "smoke" / "out" / "final" / "adapter_config.json").is_file()   # the LoRA adapter


def test_smoke_zero3_full_finetune(tmp_path):
    """Scenario two_node (full fine-tune, ZeRO-3, DeepSpeed launcher), one node of 2 CPU ranks: ZeRO-3
    sharding as FSDP2 full sharding (DeepSpeed's CPU path hangs under gloo, see train.py)."""
    b = scenario_bundle("two_node", tmp_path)
    ds = json.loads((b / "ds_config.json").read_text())
    assert ds["zero_optimization"]["stage"] == 3
    out = run_smoke(b, tmp_path, NNODES="1", SMOKE_NPROC="2")
    check_resumed(tmp_path / "smoke", out, "deepspeed", 2)
    run1 = (tmp_path / "smoke" / "run1-node0.log").read_text()
    assert "reshard_after_forward=True (ZeRO-3 analogue)" in run1


def test_smoke_fsdp(tmp_path):
    """A full fine-tune with FSDP FULL_SHARD from the workload: launcher fsdp, FSDP2 on 2 CPU ranks."""
    w = Workload.model_validate({"name": "llama8b-fsdp", "model": "meta-llama/Llama-3.1-8B", "task": "full",
                                 "hardware": {"instance_type": "ecs.gn7e-c16g1.32xlarge"},
                                 "parallel": {"fsdp": "full_shard"}, "dataset": {"tokens": 1.0e8}})
    from gpuplan.estimate.core import estimate
    from gpuplan.workload import resolve_defaults

    resolved, _ = resolve_defaults(w)
    est = estimate(resolved).to_dict()
    plan = dict(inputs("two_node")[0], instance_type="ecs.gn7e-c16g1.32xlarge", instance_count=1, gpus_total=8,
                parallel=est["parallel"])
    b = build_bundle(plan, resolved, est, tmp_path / "fsdp")
    assert launch_var(b, "PLAN_ARGS")[1::2][:2] == ["full", "fsdp"]
    assert not (b / "ds_config.json").exists()
    out = run_smoke(b, tmp_path, SMOKE_NPROC="2")
    check_resumed(tmp_path / "smoke", out, "fsdp", 2)


def test_smoke_two_node_emulation(tmp_path):
    """Scenario two_node_tcp (2 nodes, ZeRO-2): two launch.sh --smoke on localhost, NODE_RANK 0 and 1,
    1 process each, static rendezvous on a local master; both are killed and both resume."""
    b = scenario_bundle("two_node_tcp", tmp_path)
    assert "NNODES=\"${NNODES:-2}\"" in (b / "launch.sh").read_text()
    port = str(free_port())
    procs = []
    t0 = time.time()
    for rank in (0, 1):
        env = smoke_env(tmp_path, SMOKE_DIR=str(tmp_path / "smoke"), MASTER_PORT=port, NODE_RANK=str(rank),
                        SMOKE_NPROC="1")
        procs.append(subprocess.Popen(["bash", "launch.sh", "--smoke"], cwd=b, env=env, stdout=subprocess.PIPE,
                                      stderr=subprocess.STDOUT, text=True))
    outs = [p.communicate(timeout=SMOKE_TIMEOUT_S)[0] for p in procs]
    print(f"two-node emulation: smoke {time.time() - t0:.1f} s")
    for p, out in zip(procs, outs):
        assert p.returncode == 0, out[-4000:]
    check_resumed(tmp_path / "smoke", outs[0], "deepspeed", 2)


def tp_plan_bundle(tmp: Path) -> tuple[Path, dict]:
    """The best tensor-parallel pick of the full fine-tuning example (a real recommender plan)."""
    w = load_workload(EXAMPLES / "qwen-7b-full-zero.yaml")
    for pick in range(1, 6):
        out = tmp / f"pick{pick}"
        path, _ = write_plan_bundle(w, out, pick=pick)
        plan = json.loads((path / "plan.json").read_text())["plan"]
        if plan["parallel"]["tp"] * plan["parallel"]["pp"] > 1 and plan["gpus_total"] <= 4:
            return path, plan
    pytest.fail("the example has no tensor-parallel pick any more: choose another TP plan for this test")


def test_smoke_tensor_parallel_plan(tmp_path):
    """A TP plan launches ms-swift Megatron with the plan's TP/PP/micro/global batch; --smoke runs the same
    TP x PP split with PyTorch-native tensor parallel (+ pipeline) on CPU/gloo, kill and resume."""
    b, plan = tp_plan_bundle(tmp_path)
    par = plan["parallel"]
    assert par["launcher"] == "megatron"
    words = launch_var(b, "MEGATRON_ARGS")
    dp = plan["gpus_total"] // (par["tp"] * par["pp"])
    assert int(arg(words, "--tensor_model_parallel_size")) == par["tp"]
    assert int(arg(words, "--pipeline_model_parallel_size")) == par["pp"]
    assert int(arg(words, "--micro_batch_size")) == par["micro_batch"]
    assert int(arg(words, "--global_batch_size")) == par["micro_batch"] * par["gradient_accumulation"] * dp
    assert "--virtual_pipeline_model_parallel_size" not in words     # the plan has one stage per rank
    assert "--train_type" not in words and arg(words, "--tuner_type") == "full"   # ms-swift 4.x names
    assert "exec megatron sft" in (b / "launch.sh").read_text()
    smoke = launch_var(b, "PLAN_ARGS")
    assert (arg(smoke, "--tp"), arg(smoke, "--pp"), arg(smoke, "--micro_batch")) == \
        (str(par["tp"]), str(par["pp"]), str(par["micro_batch"]))
    out = run_smoke(b, tmp_path)
    check_resumed(tmp_path / "smoke", out, "megatron", par["tp"] * par["pp"])
    assert f"TP {par['tp']} x PP {par['pp']}" in (tmp_path / "smoke" / "run1-node0.log").read_text()


def test_smoke_pipeline_parallel_layout(tmp_path):
    """A PP 2 layout (the two_node scenario with TP 1 x PP 2 and 2 micro-batches per step; the recommender
    puts PP across nodes): Megatron launcher, and --smoke runs 2 GPipe stages on CPU, kill and resume."""
    import dataclasses

    from gpuplan.render.bundle.context import build_context
    from gpuplan.render.bundle.training import files

    plan, workload, est = inputs("two_node")
    c = dataclasses.replace(build_context(plan, workload, est), tp=1, pp=2, grad_accum=2, launcher="megatron")
    b = tmp_path / "pp"
    for rel, text in files(c).items():
        (b / rel).parent.mkdir(parents=True, exist_ok=True)
        (b / rel).write_text(text)
    words = launch_var(b, "MEGATRON_ARGS")
    assert (arg(words, "--pipeline_model_parallel_size"), arg(words, "--micro_batch_size")) == ("2", "2")
    assert arg(words, "--global_batch_size") == str(2 * 2 * 8)      # micro 2 x 2 micro-batches x DP 16 / 2
    out = run_smoke(b, tmp_path, NNODES="1")
    check_resumed(tmp_path / "smoke", out, "megatron", 2)
    assert "TP 1 x PP 2" in (tmp_path / "smoke" / "run1-node0.log").read_text()


def ms_swift_parser():
    """An argparse parser with ms-swift 4.x's `megatron sft` argument set (field names and types read from
    its dataclasses, fixtures/ms-swift-megatron-args.tsv): unknown flags and ill-typed values fail."""
    import argparse

    def boolean(v: str) -> bool:
        if v.lower() not in ("true", "false"):
            raise ValueError(v)
        return v.lower() == "true"

    p = argparse.ArgumentParser(exit_on_error=False, allow_abbrev=False)
    for line in (Path(__file__).parent / "fixtures" / "ms-swift-megatron-args.tsv").read_text().splitlines():
        if line.startswith("#"):
            continue
        name, ann = line.split("\t")
        kw: dict = {}
        if ann.startswith(("List[", "Optional[List[")):
            kw["nargs"] = "+"
        elif "Literal[" in ann:
            kw["choices"] = re.findall(r"'([^']*)'", ann)
        elif ann in ("int", "Optional[int]"):
            kw["type"] = int
        elif ann in ("float", "Optional[float]"):
            kw["type"] = float
        elif ann in ("bool", "Optional[bool]"):
            kw["type"] = boolean
        p.add_argument(f"--{name}", **kw)
    return p


def test_smoke_megatron_arguments_parse_with_the_ms_swift_argument_set(tmp_path):
    """Every `megatron sft` flag launch.sh emits exists in ms-swift 4.x with a value of the right type, and
    the parsed TP, PP, virtual stages, micro and global batch equal the plan's."""
    w = load_workload(EXAMPLES / "qwen-7b-full-zero.yaml")
    for pick in range(1, 6):
        path, _ = write_plan_bundle(w, tmp_path / f"p{pick}", pick=pick)
        plan = json.loads((path / "plan.json").read_text())["plan"]
        par = plan["parallel"]
        if par["launcher"] != "megatron":
            continue
        words = launch_var(path, "MEGATRON_ARGS") + ["--dataset", "data/train.jsonl", "--output_dir", "/x",
                                                     "--add_version", "false", "--save_steps", "100",
                                                     "--mcore_model", "/x", "--finetune", "false"]
        ns = ms_swift_parser().parse_args(words)
        dp = plan["gpus_total"] // (par["tp"] * par["pp"])
        assert (ns.tensor_model_parallel_size, ns.pipeline_model_parallel_size) == (par["tp"], par["pp"])
        assert ns.virtual_pipeline_model_parallel_size in (None, par.get("virtual_pp"))
        assert ns.micro_batch_size == par["micro_batch"]
        assert ns.global_batch_size == par["micro_batch"] * par["gradient_accumulation"] * dp
        assert ns.use_distributed_optimizer == (par["zero"] >= 1) and ns.tuner_type == "full"
        break
    else:
        pytest.fail("no Megatron pick in the example any more: use another TP/PP workload")
    with pytest.raises(SystemExit):
        ms_swift_parser().parse_args(["--train_type", "lora"])   # the 3.x name is gone in 4.x


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
                                               par["offload"])
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
            assert int(arg(launch_var(path, "MEGATRON_ARGS"), "--global_batch_size")) == global_batch
        model = arg(args, "--task") and re.search(r"^MODEL=(\S+)$", (path / "launch.sh").read_text(), re.M).group(1)
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
