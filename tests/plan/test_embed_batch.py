"""An embeddings batch job is timed, searched and launched by one model (issue 29 items 4 and 7; plan review of
examples/guide-needs/n5-embed-50m.yaml, bge-m3 over 50M documents of 512 tokens in three days).

Before: `recommend` timed bge-m3 as vLLM at batch 1 (532 texts/s per A100), `estimate` of the same machine as eager
transformers at batch 1 (159/s), the job search skipped encoders (counted as LLMs), and the bundle launched
`vllm serve --max-num-seqs 1` for an offline job. Now one rule (estimate/engine_defaults.py) gives both entry points
the stack the bundle runs: embed.py (sentence-transformers, eager PyTorch) for a job, whose batch per forward the
search climbs like Whisper's; vLLM's pooling runner for a service."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from gpuplan.estimate.core import estimate
from gpuplan.plan import recommend
from gpuplan.workload_loading import load_workload
from gpuplan.units import fmt_rate

ROOT = Path(__file__).resolve().parents[2]
N5 = ROOT / "examples/guide-needs/n5-embed-50m.yaml"


@pytest.fixture(scope="module")
def n5():
    return recommend(str(N5))


def test_the_embedding_job_searches_its_batch_by_the_function_estimate_runs(n5):
    p = n5.best
    b = p.cost.job["batch"]
    assert b > 1 and b == p.parallel["micro_batch"]
    assert p.parallel["framework"] == "transformers"          # embed.py: sentence-transformers, what the bundle runs
    assert not any(a == "assumed batch_size 1" for a in n5.assumptions)
    line = [w for w in p.advice.why if w.startswith(f"batch {b} per forward:")]
    assert line and f"batch {2 * b} adds less than 2%" in line[0]
    # estimate of the plan's machine at the plan's batch gives the plan's figures (one function, two entry points)
    at_b = estimate(str(N5), hardware={"instance_type": p.instance_type}, batch_size=b)
    assert at_b.workload.framework == "transformers"
    per_copy = at_b.performance["max_requests_per_s"]
    assert per_copy == pytest.approx(p.performance["max_requests_per_s"])
    assert p.cost.job["items_per_s"] == pytest.approx(per_copy * p.parallel["dp"] * p.cost.job["replicas"], rel=1e-3)
    assert at_b.memory.per_gpu_bytes == pytest.approx(p.memory.per_gpu_bytes)
    # the batch pays: eager launches dominate one 512-token forward of a 0.57B encoder, so batch 1 runs at well under
    # half the plan's rate, and the climb stops where the GEMMs are full (twice the batch adds under 2 %)
    at_1 = estimate(str(N5), hardware={"instance_type": p.instance_type}, batch_size=1)
    at_2b = estimate(str(N5), hardware={"instance_type": p.instance_type}, batch_size=2 * b)
    assert at_1.performance["max_requests_per_s"] < 0.5 * per_copy
    assert at_2b.performance["max_requests_per_s"] < 1.02 * per_copy


def test_estimate_and_recommend_pick_the_same_stack_for_an_encoder():
    """A job runs embed.py (transformers), a service vLLM's pooling runner: both entry points, one rule."""
    job = load_workload(str(N5))
    service = job.with_updates(dataset=None, constraints={"regions": ["cn-shanghai"], "billing": ["payg"]},
                               serving={"requests_per_s": 200})
    for w, engine in ((job, "transformers"), (service, "vllm")):
        e = estimate(w.with_updates(hardware={"gpu": "A10", "count": 1}))
        assert e.workload.framework == engine
        rec = recommend(w.with_updates(hardware={"gpu": "A10"}))
        assert rec.best.parallel["framework"] == engine
        assert rec.best.performance["max_requests_per_s"] == pytest.approx(
            estimate(w.with_updates(hardware={"instance_type": rec.best.instance_type},
                                    batch_size=rec.best.parallel["micro_batch"])).performance["max_requests_per_s"])


def test_the_bundle_embeds_at_the_planned_batch_on_every_gpu(n5, tmp_path):
    from gpuplan.write_bundle import write_plan_bundle

    out, _ = write_plan_bundle(load_workload(str(N5)), tmp_path / "b")
    p = n5.best
    b = p.cost.job["batch"]
    assert not (out / "serve.sh").exists()            # no server for an offline job
    script = (out / "embed.py").read_text()
    assert f'"--batch-size", type=int, default={b},' in script
    assert '"--max-length", type=int, default=512,' in script
    assert "CUDA_VISIBLE_DEVICES" in script             # one process per GPU: the plan's data-parallel copies
    assert "COPY embed.py fetch-model.sh /opt/gpuplan/" in (out / "Dockerfile").read_text()
    assert "sentence-transformers==" in (out / "requirements-serve.txt").read_text()
    plan_md = (out / "PLAN.md").read_text()
    assert f"| Batch per forward | {b} |" in plan_md
    assert f"| Items/s of the job | {fmt_rate(p.cost.job['items_per_s'])} |" in plan_md   # 531 (three figures)
    assert re.search(r"docker run -d --name gpuplan-\S+-job --restart on-failure:3 --gpus all -v /mnt/data:/mnt/data \S+ "
                     r"python3 /opt/gpuplan/embed.py", plan_md)
    assert "docker logs -f gpuplan-" in plan_md       # detached: an SSH drop does not stop the job


def test_embed_py_checks_its_arguments_without_a_gpu(n5, tmp_path):
    import subprocess
    import sys

    from gpuplan.write_bundle import write_plan_bundle

    out, _ = write_plan_bundle(load_workload(str(N5)), tmp_path / "b")
    docs = tmp_path / "d.jsonl"
    docs.write_text('{"id": "a", "text": "hello"}\n', encoding="utf-8")
    script = str(out / "embed.py")
    dry = subprocess.run([sys.executable, script, "--dry-run", str(docs)], capture_output=True, text=True, timeout=60)
    assert dry.returncode == 0 and dry.stdout.startswith("1 file(s)")
    missing = subprocess.run([sys.executable, script, str(tmp_path / "nope.jsonl")], capture_output=True, text=True,
                             timeout=60)
    assert missing.returncode == 2 and "no such input file" in missing.stderr
    real = subprocess.run([sys.executable, script, "--gpus", "1", "--out", str(tmp_path / "e"), str(docs)],
                          capture_output=True, text=True, timeout=120, env={"PATH": "/usr/bin:/bin"})
    assert real.returncode != 0 and "Traceback" not in real.stderr and "embed.py:" in real.stderr


def test_an_embedding_service_launches_vllm_pooling():
    from gpuplan.render.bundle import render_bundle
    from gpuplan.plan.bundle import bundle_inputs

    w = load_workload({"name": "bge-svc", "model": "BAAI/bge-m3", "task": "inference", "prompt_tokens": 512,
                       "serving": {"requests_per_s": 200}, "hardware": {"gpu": "A10"},
                       "constraints": {"regions": ["cn-shanghai"], "billing": ["payg"]}})
    rec = recommend(w)
    resolved, est = bundle_inputs(rec.best, rec.workload)
    files = render_bundle(rec.best.to_dict(), resolved, est)
    assert "embed.py" not in files
    assert "--runner pooling" in files["serve.sh"]      # vLLM >= 0.10 (docs.vllm.ai v0.16 pooling_models)


def test_the_jobs_stated_text_length_is_its_prompt_length():
    """A review of 2026-12-05: bge-m3 over 20 M texts stated at 256 tokens (dataset.tokens_per_sample) was sized for the
    generic 1,024-token prompt - batch 4, 22.2 h, a 240 GiB disk, released 50 h after apply. An inference job's items are
    its prompts: their stated length sizes it, and the plan says so."""
    job = {"model": "BAAI/bge-m3", "task": "inference", "dataset": {"items": 20_000_000, "tokens_per_sample": 256},
           "constraints": {"regions": ["cn-beijing"]}}
    rec = recommend(job)
    assert rec.workload.prompt_tokens == 256
    assert "assumed prompt_tokens 256 (the dataset's tokens_per_sample)" in rec.assumptions
    stated = recommend({**job, "prompt_tokens": 256})
    assert rec.best.to_dict()["time_s"] == pytest.approx(stated.best.to_dict()["time_s"])
    longer = recommend({**job, "dataset": {"items": 20_000_000, "tokens_per_sample": 1024}})
    assert rec.best.to_dict()["time_s"] < 0.5 * longer.best.to_dict()["time_s"]


def test_an_llm_generation_jobs_stated_text_length_is_its_prompt_length_at_both_doors():
    """The same rule for a decoder's offline generation job (vLLM over a dataset of prompts): the stated item length
    is the prompt, in `recommend` and in `estimate` of the plan's machine, and a stated prompt_tokens wins."""
    from gpuplan.estimate.core import estimate

    job = {"model": "Qwen/Qwen2.5-7B-Instruct", "task": "inference", "output_tokens": 128,
           "dataset": {"items": 200_000, "tokens_per_sample": 300}, "constraints": {"regions": ["cn-beijing"]}}
    rec = recommend(job)
    assert rec.workload.prompt_tokens == 300
    assert "assumed prompt_tokens 300 (the dataset's tokens_per_sample)" in rec.assumptions
    est = estimate({**job, "hardware": {"gpu": "A10", "count": 1}})
    assert est.workload.prompt_tokens == 300
    assert any("tokens_per_sample" in a for a in est.assumptions)
    stated = estimate({**job, "prompt_tokens": 2000, "hardware": {"gpu": "A10", "count": 1}})
    assert stated.workload.prompt_tokens == 2000
    assert not any("tokens_per_sample" in a for a in stated.assumptions)
