"""bench/accuracy.py mapping rules added for issue 23: what a row that leaves a condition unstated ran.

- NeMo / Megatron-Core recompute nothing unless configured, and NeMo's optimizer is the distributed one (ZeRO-1).
- An inference row without a batch on a serving engine is an offline maximum-throughput run (the measurements
  README of ../shared/validation).
- A GB200 NVL72 rack is one NVLink domain of 72 GPUs (NVIDIA GB200 NVL72 product page).
"""

import importlib.util
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture(scope="module")
def rows(acc):
    return {r["id"]: r for r in acc.load([ROOT / "bench" / "data" / "measurements-dev2.csv",
                                           ROOT / "bench" / "data" / "measurements-nonllm.csv"])}


def test_unstated_recompute_zero_and_attention_follow_nemo(acc, rows):
    w, system, layout = acc.row_to_case(rows["H366-mbridge"])
    assert layout.checkpointing == "none" and w.flash_attention
    w, system, layout = acc.row_to_case(rows["H349-nemo"])
    assert layout.zero == 1


def test_engine_row_without_a_batch_is_a_max_throughput_run(acc, rows):
    assert acc.max_throughput_row(rows["H502-trtllm"])
    assert not acc.max_throughput_row(rows["H572-trt05l40s"])   # batch 64 stated


def test_stack_named_in_the_notes(acc, rows):
    assert acc.stack_name(rows["H528-tgisma10g"]) == "tgi"


def test_nvl72_is_one_nvlink_domain_and_ep_is_read(acc, rows):
    w, system, layout = acc.row_to_case(rows["H372-mbridge"])
    assert system.gpus_per_node == 64 and system.nodes == 1
    w, system, layout = acc.row_to_case(rows["H375-automodel"])
    assert layout.ep == 8


def test_non_llm_rows_carry_their_input_and_class(acc, rows):
    w, system, layout = acc.row_to_case(rows["N961-falsd"])
    assert w.input.image_size == 512 and w.input.steps == 50
    assert acc.classify(rows["N961-falsd"]) == "diffusion"
    assert acc.classify(rows["N901-dlern50"]) == "vision (CNN / ViT)"
    pred, fits, note = acc.predict(rows["N903-dlern50"])   # V100 AMP batch 128: 3,249 img/s
    assert pred == pytest.approx(3249, rel=0.2)


def test_import_leaves_duplicates_out_and_aliases_groups():
    spec = importlib.util.spec_from_file_location("bench_import", ROOT / "bench" / "import_measurements.py")
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    a = {"model": "m", "task": "inference", "quantization": "none", "gpu": "A100-80GB", "gpu_count": "1",
         "micro_batch": "1", "seq_len": "", "prompt_tokens": "1", "output_tokens": "2048",
         "metric": "output_tokens_per_s", "value": "50.0", "global_batch": ""}
    b = dict(a, metric="total_tokens_per_s", value=str(50.0 * 2049 / 2048))
    key, value = mod.comparable(a)
    assert mod.is_duplicate(b, {key: [value]})
    assert mod.GROUP_ALIASES["nemoft"] == "nemo2407"


def test_a_row_that_runs_liger_computes_its_loss_chunk_by_chunk(acc, rows):
    # ms-swift's --use_liger_kernel runs Liger's fused linear cross-entropy: the whole logits never exist, what the
    # workload's fused_loss says (memory.chunked_loss); a row that does not state it keeps the model's own loss
    row = dict(rows["H366-mbridge"])
    assert acc.row_to_case(row)[0].fused_loss is not True
    row["notes"] = row["notes"] + " | liger kernel on (--use_liger_kernel true)"
    assert acc.row_to_case(row)[0].fused_loss is True


def test_a_deepspeed_row_that_offloads_its_optimizer_runs_zero_offload(acc, rows):
    # the fsdp column's "full_shard+offload" names FSDP's CPU offload; a DeepSpeed row states its config instead
    row = dict(rows["H366-mbridge"])
    assert acc.row_to_case(row)[2].offload == "none"
    row.update(framework="deepspeed", zero_stage="3", tp="1", pp="1",
               notes=row["notes"] + " | ZeRO-3, offload_optimizer cpu and offload_param cpu")
    assert acc.row_to_case(row)[2].offload == "cpu"


def test_a_serving_row_that_runs_dp_attention_says_so(acc):
    rows = {r["id"]: r for r in acc.load([ROOT / "bench" / "data" / "measurements-serving.csv"])}
    row = dict(rows["S001-ixr1h200"])   # SGLang TP 8, no DP attention
    assert not acc.row_to_case(row)[2].dp_attention
    row["notes"] += " | sglang.launch_server --tp-size 8 --enable-dp-attention"
    assert acc.row_to_case(row)[2].dp_attention


def test_torchtitan_selective_without_a_layer_option_is_per_op(acc, rows):
    # torchtitan #2357 (2026-03-23) made per-op its only selective mode, and its presets before that set
    # selective_ac_option "op": a torchtitan row's "selective" is per-op unless it states a layer option
    row = dict(rows["H366-mbridge"], framework="fsdp", fsdp="full_shard", grad_ckpt="selective", tp="1", pp="1")
    assert acc.row_to_case(row)[2].checkpointing == "selective"          # Megatron's selective recomputation
    row["notes"] = row["notes"] + " | torchtitan @1690e0ae, activation checkpointing selective"
    assert acc.row_to_case(row)[2].checkpointing == "per-op"
    row["notes"] = row["notes"] + ", selective_ac_option '2'"
    assert acc.row_to_case(row)[2].checkpointing == "selective"


def test_a_row_that_states_loss_chunks_computes_its_loss_chunk_by_chunk(acc, rows):
    row = dict(rows["H366-mbridge"])
    row["notes"] = row["notes"] + " | Eight loss chunks; Compiled Transformer blocks and loss"
    assert acc.row_to_case(row)[0].fused_loss is True
