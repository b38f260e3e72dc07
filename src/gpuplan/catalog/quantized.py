"""Published quantized checkpoints named by their repo id: ``Qwen/Qwen2.5-7B-Instruct-GPTQ-Int4``,
``...-AWQ``, ``...-FP8``, ``unsloth/...-bnb-4bit``, ``TheBloke/...-GPTQ``, GGUF repos and files
(``...-GGUF:Q4_K_M``, ``.../Model-Q4_K_M.gguf``).

:func:`parse_quantized_id` reads the quantization from the name and says which base model the
checkpoint was made from (the name without its quantization suffix, or the row of
data/quantized_checkpoints.yaml that lists the repo). It does not look the base up: the library does
(gpuplan.catalog.library.quantized_base), so this module imports nothing from the catalog.

The suffix conventions are those of the publishers: Qwen's ``-GPTQ-Int4`` / ``-GPTQ-Int8`` / ``-AWQ``
/ ``-FP8`` repos (https://qwen.readthedocs.io/en/latest/quantization/), TheBloke's ``-GPTQ`` / ``-AWQ``
/ ``-GGUF`` repos, hugging-quants' ``-AWQ-INT4`` / ``-GPTQ-INT4``, Neural Magic / Red Hat
``-quantized.w4a16`` / ``-quantized.w8a8`` / ``-FP8-dynamic`` (llm-compressor), unsloth's ``-bnb-4bit``,
and llama.cpp's GGUF level names (``Q4_K_M``, ``Q8_0``; https://github.com/ggml-org/llama.cpp,
tools/quantize/README.md).
"""

from __future__ import annotations

import functools
import importlib.resources
import re
from dataclasses import dataclass

from gpuplan.files.datafiles import load_data
from gpuplan.i18n import N_


@dataclass(frozen=True)
class QuantizedId:
    """What a quantized checkpoint's id says: the workload quantization it implies and its base."""

    checkpoint: str  # the id as given
    base_names: tuple[str, ...]  # names to look the base model up by, most specific first
    quantization: str  # workload quantization value (gptq-int4, awq, fp8, bnb-nf4, int4, int8, ...)
    label: str  # N_() words for the scheme, e.g. "GPTQ 4-bit"
    note: str = ""  # N_() template ({level}, {quantization}) when the scheme is approximated, else ""
    level: str = ""  # the GGUF level (Q4_K_M, ...) for GGUF checkpoints


# (pattern on the end of the repo's name, workload quantization, label). First match wins; the base
# model's name is what comes before the match. A marker in the middle of a name is not a quantization.
_SUFFIXES: tuple[tuple[str, str, str], ...] = (
    (r"[-_.](?:gptq[-_]?int8|gptq[-_]8[-_]?bits?|8[-_]?bits?[-_]gptq)", "gptq-int8", N_("GPTQ 8-bit")),
    (r"[-_.](?:gptq(?:[-_]?int4|[-_]4[-_]?bits?)?|4[-_]?bits?[-_]gptq)", "gptq-int4", N_("GPTQ 4-bit")),
    (r"[-_.](?:awq(?:[-_]?int4|[-_]4[-_]?bits?)?|4[-_]?bits?[-_]awq)", "awq", N_("AWQ 4-bit")),
    (r"[-_.](?:quantized\.)?w4a16", "int4", N_("W4A16 (4-bit weights)")),
    (r"[-_.](?:quantized\.)?w8a16", "int8", N_("W8A16 (8-bit weights)")),
    (r"[-_.](?:quantized\.)?w8a8", "int8", N_("W8A8 INT8")),
    (r"[-_.]fp8(?:[-_.](?:dynamic|static|block|e4m3))?", "fp8", N_("FP8")),
    (r"[-_.](?:unsloth[-_])?bnb[-_]4[-_]?bits?", "bnb-nf4", N_("bitsandbytes NF4")),
    (r"[-_.]bnb[-_]8[-_]?bits?", "bnb-int8", N_("bitsandbytes 8-bit")),
    (r"[-_.]int4", "int4", N_("INT4")),
    (r"[-_.]int8", "int8", N_("INT8")),
)
_SUFFIX_RE = tuple((re.compile(p + "$", re.IGNORECASE), q, label) for p, q, label in _SUFFIXES)

# llama.cpp GGUF levels -> the nearest workload quantization at or above their bits per weight.
_GGUF_LEVELS: tuple[tuple[str, str], ...] = (
    (r"i?q[1-4](?:_[a-z0-9]+)*", "int4"),  # Q2_K .. Q4_K_M, IQ4_XS: at most ~4.9 bits per weight
    (r"i?q[5-8](?:_[a-z0-9]+)*", "int8"),  # Q5_K_M, Q6_K, Q8_0: 5.5 to 8.5 bits per weight
    (r"b?f16|f32", "none"),
)
_GGUF_RE = re.compile(r"[-_.]gguf(?=$|[-_.])", re.IGNORECASE)
_LEVEL = r"i?q\d(?:_[a-z0-9]+)*|b?f16|f32"
_TRAILING_LEVEL_RE = re.compile(r"[-_.](" + _LEVEL + r")$", re.IGNORECASE)
DEFAULT_GGUF_LEVEL = "Q4_K_M"  # the level GGUF repos recommend first (TheBloke, bartowski model cards)
# "org/name", optionally ":LEVEL" or "/file.gguf" (a file inside a GGUF repo)
_ID = re.compile(r"^([A-Za-z0-9][\w.-]{0,95})/([\w.-]{1,96})(?::([\w.]{1,40})|/([\w.-]{1,200}\.gguf))?$")


@functools.cache
def _table() -> dict[str, str]:
    """Lower-cased quantized repo -> base repo, from data/quantized_checkpoints.yaml."""
    rows = load_data(importlib.resources.files("gpuplan") / "data" / "quantized_checkpoints.yaml").get("checkpoints") or []
    return {row["repo"].lower(): row["base"] for row in rows if row["repo"].lower() != row["base"].lower()}


def _trailing_level(text: str) -> str | None:
    m = _TRAILING_LEVEL_RE.search(text)
    return m.group(1).upper() if m else None


def _gguf(checkpoint: str, org: str, part: str, level: str | None, file: str | None) -> QuantizedId | None:
    """A GGUF repo (``...-GGUF``), a level (``REPO:Q4_K_M``) or a file (``REPO/x-Q4_K_M.gguf``)."""
    marker = _GGUF_RE.search(part)
    if marker is None and level is None and file is None:
        return None
    if level is not None and not re.fullmatch(_LEVEL, level, re.IGNORECASE):
        return None
    stem = part[:marker.start()] if marker else part
    named = level.upper() if level else (_trailing_level(file[:-5]) if file else _trailing_level(stem))
    if named and not level and not file:
        stem = stem[:-len(named) - 1]  # ggml-org style: Model-Q4_K_M-GGUF
    lvl = named or DEFAULT_GGUF_LEVEL
    quant = next(q for pattern, q in _GGUF_LEVELS if re.fullmatch(pattern, lvl, re.IGNORECASE))
    note = (N_("GGUF {level} is estimated as {quantization}: llama.cpp's block formats are not modelled one by one")
            if named else
            N_("no GGUF level named: assumed {level}, estimated as {quantization} (name one as REPO:LEVEL, e.g. :Q8_0)"))
    return QuantizedId(checkpoint, _bases(org, stem), quant, N_("GGUF"), note, lvl)


def _bases(org: str, stem: str) -> tuple[str, ...]:
    stem = stem.rstrip("-_.")
    return tuple(dict.fromkeys((f"{org}/{stem}", stem)))


def parse_quantized_id(name: str) -> QuantizedId | None:
    """The quantization a published checkpoint's id names, or None when it names none."""
    m = _ID.match(name.strip())
    if not m or ".." in name:
        return None
    org, part, level, file = m.group(1), m.group(2), m.group(3), m.group(4)
    checkpoint = name.strip()
    gguf = _gguf(checkpoint, org, part, level, file)
    if gguf is not None:
        return gguf
    if level or file:
        return None
    for regex, quant, label in _SUFFIX_RE:
        hit = regex.search(part)
        if hit is not None:
            listed = _table().get(f"{org}/{part}".lower())
            bases = ((listed,) if listed else ()) + _bases(org, part[:hit.start()])
            note = N_("W8A8 also quantizes activations; estimated as int8 weights") if "w8a8" in hit.group(0).lower() else ""
            return QuantizedId(checkpoint, tuple(dict.fromkeys(bases)), quant, label, note)
    return None
