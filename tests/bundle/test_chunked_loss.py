"""The chunked fused linear cross-entropy of the bundle's train.py (--loss chunked): the loss and the gradients of the
hidden states, the LM head (tied to the embedding or not, with a bias or not) equal F.cross_entropy over the whole
logits, labels -100 ignored, over accumulated micro-batches; installed in a transformers model it gives the model's own
loss and gradients; the models whose forward rewrites the logits keep their own loss (as the estimator plans); and
its peak memory, measured, is the estimator's figure and far below the whole logits'."""

from __future__ import annotations

import copy
import importlib.util
import json
import subprocess
import sys
from pathlib import Path

import pytest

torch = pytest.importorskip("torch")
F = torch.nn.functional

from gpuplan.catalog.models import resolve_model  # noqa: E402
from gpuplan.estimate.memory.loss import chunked_loss_applies, chunked_loss_bytes  # noqa: E402
from gpuplan.estimate.params import table  # noqa: E402

TRAIN_PY = Path(__file__).resolve().parents[2] / "src/gpuplan/render/templates/bundle/train.py"


def _train_module():
    spec = importlib.util.spec_from_file_location("bundle_train", TRAIN_PY)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


T = _train_module()


def _reference(h, weight, bias, labels):
    logits = F.linear(h, weight, bias).float()
    return F.cross_entropy(logits[:, :-1].reshape(-1, logits.shape[-1]), labels[:, 1:].reshape(-1), ignore_index=-100)


def _case(tied: bool, with_bias: bool, seed: int = 0):
    g = torch.Generator().manual_seed(seed)
    vocab, hidden = 53, 12
    weight = torch.randn(vocab, hidden, generator=g, requires_grad=True)
    bias = torch.randn(vocab, generator=g, requires_grad=True) if with_bias else None
    proj = torch.randn(hidden, hidden, generator=g, requires_grad=True)
    batches = []
    for _ in range(2):   # two micro-batches, accumulated
        ids = torch.randint(0, vocab, (3, 29), generator=g)
        labels = ids.clone()
        labels[:, :7] = -100          # a masked prompt
        labels[1, 15:18] = -100
        batches.append((ids, labels))
    emb = weight if tied else torch.randn(vocab, hidden, generator=g, requires_grad=True)

    def hidden_states(ids):
        return torch.tanh(F.embedding(ids, emb) @ proj)

    leaves = [weight, proj] + ([bias] if bias is not None else []) + ([] if tied else [emb])
    return batches, hidden_states, weight, bias, leaves


@pytest.mark.parametrize("tied", [True, False])
@pytest.mark.parametrize("with_bias", [False, True])
def test_chunked_loss_equals_cross_entropy_with_accumulation(tied, with_bias):
    grads = []
    for chunked in (False, True):
        batches, hidden_states, weight, bias, leaves = _case(tied, with_bias)
        losses = []
        for ids, labels in batches:
            h = hidden_states(ids)
            h.retain_grad()
            loss = T.chunked_loss(h, weight, bias, labels, chunk=8) if chunked else _reference(h, weight, bias, labels)
            (loss / len(batches)).backward()
            losses.append(float(loss.detach()))
        grads.append((losses, [p.grad.clone() for p in leaves], h.grad.clone()))
    (ref_losses, ref_grads, ref_h), (got_losses, got_grads, got_h) = grads
    assert got_losses == pytest.approx(ref_losses, rel=1e-5)
    torch.testing.assert_close(got_h, ref_h, rtol=1e-5, atol=1e-6)
    for got, ref in zip(got_grads, ref_grads, strict=True):
        torch.testing.assert_close(got, ref, rtol=1e-5, atol=1e-6)
    assert any(float(g.abs().sum()) > 0 for g in ref_grads)


def test_chunked_loss_of_only_ignored_labels_is_zero():
    h = torch.randn(1, 5, 4, requires_grad=True)
    w = torch.randn(9, 4, requires_grad=True)
    loss = T.chunked_loss(h, w, None, torch.full((1, 5), -100), chunk=2)
    loss.backward()
    assert float(loss.detach()) == 0.0 and float(h.grad.abs().sum()) == 0.0 and float(w.grad.abs().sum()) == 0.0


def _tiny(model_type: str, **extra):
    from transformers import AutoConfig, AutoModelForCausalLM

    cfg = AutoConfig.for_model(model_type, num_hidden_layers=2, max_position_embeddings=64,
                               **{**T.TINY, "tie_word_embeddings": True, **extra})
    torch.manual_seed(0)
    return AutoModelForCausalLM.from_config(cfg).float().train()


def test_installed_in_a_tied_llama_it_gives_the_models_own_loss_and_gradients():
    model = _tiny("llama")
    assert model.get_output_embeddings().weight is model.get_input_embeddings().weight   # tied, as Llama-3.2-1B
    ids = torch.randint(0, 256, (2, 40), generator=torch.Generator().manual_seed(1))
    labels = ids.clone()
    labels[:, :10] = -100
    fused = copy.deepcopy(model)
    assert T.use_chunked_loss(fused) is None
    out = []
    for m in (model, fused):
        loss = m(input_ids=ids, labels=labels).loss
        (loss / 2).backward()
        out.append((float(loss.detach()), {n: p.grad.clone() for n, p in m.named_parameters()}))
    assert out[1][0] == pytest.approx(out[0][0], rel=1e-5)
    assert out[0][1].keys() == out[1][1].keys()
    for name, ref in out[0][1].items():
        torch.testing.assert_close(out[1][1][name], ref, rtol=1e-4, atol=1e-6, msg=name)
    assert fused.get_output_embeddings().chunked_calls == 1
    # without labels the head is the plain head again (generation, evaluation)
    with torch.no_grad():
        assert fused(input_ids=ids).logits.shape == (2, 40, 256)


@pytest.mark.parametrize("model_type,family,key", [("gemma2", "gemma", "final_logit_softcapping"),
                                                   ("cohere", "cohere", "logit_scale"),
                                                   ("granite", "granite", "logits_scaling")])
def test_models_that_rewrite_logits_keep_their_own_loss_as_planned(model_type, family, key):
    """train.py refuses the chunked loss where the forward rewrites the logits; the estimator plans those families with
    the model's own loss (memory.chunked_loss.model_loss_families), so a plan never asks train.py for what it refuses."""
    extra = {"logits_scaling": 2.0} if model_type == "granite" else {}
    why = T.use_chunked_loss(_tiny(model_type, **extra))
    assert why is not None and key in why
    assert family in table("memory", "chunked_loss")["model_loss_families"]
    assert T.use_chunked_loss(_tiny("qwen2")) is None and T.use_chunked_loss(_tiny("mistral")) is None


def test_the_estimator_plans_the_chunked_loss_where_train_py_runs_it():
    assert chunked_loss_applies(resolve_model("meta-llama/Llama-3.2-1B-Instruct"))
    assert chunked_loss_applies(resolve_model("Qwen/Qwen2.5-7B-Instruct"))
    for name in ("google/gemma-2-9b-it", "CohereForAI/c4ai-command-r-v01", "Qwen/Qwen-7B-Chat", "THUDM/chatglm3-6b"):
        assert not chunked_loss_applies(resolve_model(name)), name


def test_chunk_size_is_the_estimators():
    assert T.LOSS_CHUNK_TOKENS == table("memory", "chunked_loss")["chunk_tokens"]


# ------------------------------------------------------------------------------------------- measured memory
# Peak resident memory of one loss forward + backward in a fresh process: Linux's high-water mark (VmHWM), reset to
# the current resident set just before (echo 5 > /proc/self/clear_refs), minus that resident set. The large tensors
# are mmap'd by the allocator, so freeing them lowers the resident set and the high-water mark is the loss's peak.
_PROBE = r"""
import importlib.util, json, sys, torch
import torch.nn.functional as F
spec = importlib.util.spec_from_file_location("t", sys.argv[1]); t = importlib.util.module_from_spec(spec)
spec.loader.exec_module(t)
torch.set_num_threads(1)
V, H, N, C = 32768, 64, 2048, int(sys.argv[3])
g = torch.Generator().manual_seed(0)
h = torch.randn(1, N, H, generator=g, requires_grad=True)
w = (torch.randn(V, H, generator=g) * 0.02).requires_grad_()
y = torch.randint(0, V, (1, N), generator=g)
h.grad = torch.zeros_like(h); w.grad = torch.zeros_like(w)   # the gradients' own buffers exist before
def status(key):
    return next(int(ln.split()[1]) for ln in open("/proc/self/status") if ln.startswith(key + ":")) * 1024
open("/proc/self/clear_refs", "w").write("5")
before = status("VmRSS")
if sys.argv[2] == "chunked":
    loss = t.chunked_loss(h, w, None, y, chunk=C)
else:
    logits = h @ w.t()
    loss = F.cross_entropy(logits[:, :-1].reshape(-1, V), y[:, 1:].reshape(-1))
    del logits
loss.backward()
print(json.dumps({"peak_bytes": status("VmHWM") - before}))
"""


def _peak(kind: str, chunk: int, tmp_path: Path) -> float:
    probe = tmp_path / "probe.py"
    probe.write_text(_PROBE)
    out = subprocess.run([sys.executable, str(probe), str(TRAIN_PY), kind, str(chunk)], capture_output=True, text=True,
                         timeout=300, check=True)
    return float(json.loads(out.stdout.strip().splitlines()[-1])["peak_bytes"])


@pytest.mark.skipif(not Path("/proc/self/clear_refs").exists(), reason="needs Linux's /proc/self/clear_refs")
def test_chunked_loss_peak_memory_is_the_estimators_and_far_below_the_whole_logits(tmp_path):
    vocab, hidden, tokens, chunk = 32768, 64, 2048, T.LOSS_CHUNK_TOKENS
    whole = _peak("model", chunk, tmp_path)
    chunked = _peak("chunked", chunk, tmp_path)

    class S:   # the estimator's shape of this head
        pass
    s = S()
    s.vocab, s.hidden = vocab, hidden
    planned = chunked_loss_bytes(s, tokens, "fp32", trainable_head=True)   # fp32: 4 + 4 bytes per entry of a chunk
    logits_fp32 = tokens * vocab * 4.0
    print(f"\npeak: whole logits {whole / 2**20:.0f} MiB (fp32 logits {logits_fp32 / 2**20:.0f} MiB), chunked "
          f"{chunked / 2**20:.0f} MiB, estimator {planned / 2**20:.0f} MiB")
    assert whole >= 2.0 * logits_fp32            # logits + their log-softmax (+ its gradient): the unfused peak
    assert chunked < whole / 4
    assert 0.75 * planned <= chunked <= 1.25 * planned
