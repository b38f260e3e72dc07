"""Samples shorter than the sequence length: what a micro-batch of unpacked samples really computes.

Fine-tuning stacks that do not pack (the Hugging Face Trainer with a padding collator, ms-swift, LLaMA-Factory
without ``packing``) pad each micro-batch to its longest sample, not to ``seq_len`` (max_length). With a dataset
whose samples are shorter than max_length, a step computes ``micro_batch`` rows of the batch's longest sample,
and a sample longer than max_length is cut to it (``truncate``, transformers' tokenizer truncation) or dropped
(``delete``, ms-swift's default truncation_strategy). Sample lengths are taken as log-normal with the dataset's
mean (``dataset.tokens_per_sample``) and standard deviation (``dataset.tokens_per_sample_sd``, else the
coefficient of variation ``sample_lengths.cv`` of efficiency.yaml). Memory is still sized at
``seq_len``: the peak is the longest batch, which reaches max_length whenever the dataset has samples that long.
"""

from __future__ import annotations

import functools
import math
from dataclasses import dataclass

from gpuplan.estimate.params import table

POLICIES = ("truncate", "delete")


@dataclass(frozen=True, eq=False)  # never compared: no generated __eq__/__hash__ to build
class SampleLengths:
    """The sample lengths a dataset trains (mean, padded row, share kept)."""

    mean_tokens: float      # mean tokens of a trained sample (after truncation, or of the samples kept)
    padded_tokens: float    # tokens of one row of a micro-batch: the expected longest of its samples
    kept_share: float       # share of the dataset's samples trained (below 1 only when long ones are dropped)
    policy: str             # truncate | delete | dataset (cut at the dataset's own longest sample)
    cv: float               # coefficient of variation of the sample lengths used


def _phi(z: float) -> float:
    return 0.5 * (1.0 + math.erf(z / math.sqrt(2.0)))


@functools.lru_cache(maxsize=4096)
def sample_lengths(mean: float, sd: float, max_len: int, batch: int, policy: str) -> SampleLengths:
    """Log-normal lengths with this mean and deviation, cut at ``max_len`` (``policy``), batched ``batch`` at a
    time: E[min(L, S)] or E[L | L <= S], and E[max of ``batch``] of them (the row length a padded batch runs)."""
    sigma2 = math.log(1.0 + (sd / mean) ** 2)
    sigma, mu = math.sqrt(sigma2), math.log(mean) - sigma2 / 2.0

    def cdf(x: float) -> float:
        return _phi((math.log(x) - mu) / sigma) if x > 0 else 0.0

    top = cdf(max_len)
    keep = top if policy == "delete" else 1.0
    n = 2000
    step = max_len / n
    mean_kept = padded = 0.0
    for i in range(n):   # E[X] = integral of (1 - G(x)); E[max of b] = integral of (1 - G(x)^b), x in [0, S]
        x = (i + 0.5) * step
        g = cdf(x) / top if policy == "delete" else cdf(x)
        mean_kept += (1.0 - g) * step
        padded += (1.0 - g ** batch) * step
    return SampleLengths(mean_tokens=mean_kept, padded_tokens=padded, kept_share=keep, policy=policy,
                         cv=sd / mean)


def dataset_lengths(dataset, seq_len: int, micro_batch: int, framework: str, packed: bool) -> SampleLengths | None:
    """The lengths a training run computes, or None when every row is ``seq_len`` tokens (packed data, no
    per-sample length given, or samples so long that nearly every row is cut at the sequence length)."""
    if packed or dataset is None or not dataset.tokens_per_sample:
        return None
    mean = float(dataset.tokens_per_sample)
    sd = float(dataset.tokens_per_sample_sd) if dataset.tokens_per_sample_sd else \
        mean * float(table("sample_lengths", "cv"))
    policies = table("sample_lengths", "long_sample_policy")
    policy = str(policies.get(framework, policies["default"]))
    longest = dataset.max_tokens_per_sample
    if longest and longest <= seq_len:
        # no sample is longer than the dataset's longest: lengths are the log-normal below it, nothing dropped
        got = sample_lengths(mean, sd, int(seq_len), max(1, int(micro_batch)), "delete")
        return SampleLengths(got.mean_tokens, got.padded_tokens, 1.0, "dataset", got.cv)
    got = sample_lengths(mean, sd, int(seq_len), max(1, int(micro_batch)), policy)
    return None if got.padded_tokens >= 0.99 * seq_len and got.kept_share >= 0.99 else got
