"""Find English sentences left in Chinese output (`--lang zh`).

Identifiers, units, numbers, model and instance ids, paths, URLs, flags and code in backticks are
not sentences and are ignored; what remains is checked for runs of two or more English words,
which a translated sentence does not contain (two words already make a phrase: "Unknown model").
"""

from __future__ import annotations

import re

# Spans that are never prose: code, URLs, paths and ids, flags, key=value, quoted identifiers.
_NOT_PROSE = [
    r"`[^`]*`", r"https?://\S+", r"\S+/\S+", r"--?[A-Za-z][\w-]*", r"\b\w+=\S+", r"'[^'\s]*'", r'"[^"\s]*"',
    r"\b[\w.-]*\d[\w.-]*\b",          # anything with a digit: ecs.gn7i-c8g1.2xlarge, A100-SXM4-80GB, 2e9, v1
    r"\b[A-Z][A-Z0-9]{1,}s?\b",        # acronyms: GPU, TP, MFU, CNY, KV, ZeRO parts, GPUs
    r"\b\w+(?:[_.]\w+)+\b",            # snake_case and dotted names: seq_len, plan.json
    r"\b[a-z]+(?:-[a-z0-9]+)+\b",       # hyphenated ids: cn-shanghai, all-linear, full_shard codes
]
_NOT_PROSE_RE = re.compile("|".join(_NOT_PROSE))
# Words that stay English in Chinese technical writing (product and technique names, units).
ALLOWED = {
    "lora", "qlora", "token", "tokens", "spot", "logits", "batch", "prompt", "epoch", "epochs", "zero", "deepspeed",
    "megatron", "vllm", "sglang", "pytorch", "torchrun", "terraform", "prometheus", "grafana", "kubernetes",
    "docker", "ray", "nccl", "rdma", "erdma", "nvlink", "pcie", "cuda", "flash", "attention", "fsdp", "swift",
    "llama", "factory", "gib", "mib", "gb", "tb", "ms", "min", "h", "s", "x", "per", "the", "and", "of",
    "hugging", "face", "modelscope", "serverless", "devs", "fastapi", "diffusers",
}
_WORD = re.compile(r"[A-Za-z]+(?:'[a-z]+)?")


def english_sentences(text: str, min_words: int = 2) -> list[str]:
    """Runs of `min_words` or more English words, two of them not allowed terms, in each line of `text`."""
    found: list[str] = []
    for line in text.splitlines():
        prose = _NOT_PROSE_RE.sub(" | ", line)
        for chunk in re.split(r"[^A-Za-z' ,;:()-]+", prose):
            words = _WORD.findall(chunk)
            real = [w for w in words if w.lower() not in ALLOWED]
            if len(words) >= min_words and len(real) >= 2:
                found.append(chunk.strip())
    return found
