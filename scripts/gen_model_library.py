"""Generate src/gpuplan/data/model_library.json from the config.json files in scripts/model-configs/.

Usage:
    python scripts/gen_model_library.py           # rewrite the library and docs/model-library.md
    python scripts/gen_model_library.py --check   # exit 1 when either file differs from what it would write

Each model folder scripts/model-configs/<org>/<name>/ holds the model's Hugging Face ``config.json``
(the architecture keys, copied unchanged from the source) - or, for a diffusers pipeline, its
``model_index.json`` and the components' ``<component>/config.json`` - and ``source.json``:

    {"repo": "<org>/<name>",             the Hugging Face id the config belongs to
     "config_url": "...",                where the config lives on the Hub
     "copied_from": "...",               the page or file the text was read from (a Hub blame page at a
                                         commit, or a public repository vendoring the file at a commit)
     "revision": "...",                  that commit (or "main" with the date it was read)
     "retrieved": "YYYY-MM-DD",
     "also": ["<org>/<id>", ...],        other checkpoints of the same architecture (base/instruct pairs,
                                         fine-tunes), optional
     "aliases": ["short-name", ...],     optional
     "unconfirmed": ["config key", ...], keys not read from the model's own config (optional)
     "notes": "..."}                     optional; says where unconfirmed values come from

Two tables are read besides the folders: ``ultralytics/yolo.json`` (the YOLO detectors' published parameters
and FLOPs, and MMYOLO's measured training memory) and ``timm/table.json`` + ``timm/ops.json`` (sourced in ``timm/sources.json``) (timm's
benchmark table per architecture and the ops one eager forward launches, counted on the meta device by
``scripts/count_timm_ops.py``); they become profile entries and the library's ``timm`` table.

The shape is parsed with gpuplan's own config reader (gpuplan.catalog.configs.hf_config.from_hf_config), so the
library holds exactly what a user would get by passing that config.json as the model. Models already in
the hand-curated src/gpuplan/data/models.yaml are skipped (that file wins); so are names another entry
already uses. The output is deterministic (sorted, no timestamps): re-running on the same folders gives
the same bytes, which tests/catalog/test_model_library.py checks.
"""

from __future__ import annotations

import argparse
import json
import re
import sys
from dataclasses import fields, replace
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
sys.path.insert(0, str(ROOT / "src"))

from gpuplan.catalog.nonllm.diffusers import load_pipeline_folder  # noqa: E402
from gpuplan.catalog.configs.hf_config import from_hf_config  # noqa: E402
from gpuplan.catalog.library import load_curated  # noqa: E402
from gpuplan.catalog.model_spec import ModelSpec, NonLLMProfile  # noqa: E402
from gpuplan.units import GIB  # noqa: E402

CONFIGS = HERE / "model-configs"
OUT = ROOT / "src" / "gpuplan" / "data" / "model_library.json"
DOC = ROOT / "docs" / "model-library.md"
SCHEMA_VERSION = 1
# Fields the library file leaves out: the loader fills them again (params from the shape). Profile entries
# (vision, speech, diffusion) keep their parameters and profile: they have no shape to count from.
_DROP = {"params_total", "params_active", "profile", "synthetic", "modelscope_id"}
_DROP_PROFILE = {"synthetic", "modelscope_id"}
_DEFAULTS = {f.name: f.default for f in fields(ModelSpec) if f.default is not f.default_factory}  # type: ignore[misc]


def _folders() -> list[Path]:
    return sorted(p.parent for p in CONFIGS.rglob("source.json"))


def _source_text(src: dict) -> str:
    where = src.get("copied_from") or src.get("config_url")
    text = f"{src['config_url']} (read from {where}; revision {src['revision']}; retrieved {src['retrieved']})"
    return text if where != src["config_url"] else f"{src['config_url']} (revision {src['revision']}; retrieved {src['retrieved']})"


def _short_alias(model_id: str) -> str:
    return model_id.split("/", 1)[-1].lower()


def _specs_for(folder: Path) -> list[ModelSpec]:
    src = json.loads((folder / "source.json").read_text(encoding="utf-8"))
    repo = src["repo"]
    if folder.relative_to(CONFIGS).as_posix() != repo:
        raise SystemExit(f"{folder}: source.json repo {repo!r} does not match the folder name")
    for key in ("config_url", "revision", "retrieved"):
        if not src.get(key):
            raise SystemExit(f"{folder}/source.json lacks {key!r}")
    if (folder / "config.json").is_file():
        spec = from_hf_config(json.loads((folder / "config.json").read_text(encoding="utf-8")), name=repo)
    elif (folder / "model_index.json").is_file():  # a diffusers pipeline: model_index.json + component configs
        spec = replace(load_pipeline_folder(folder), id=repo)
    else:
        return []
    notes = src.get("notes", "")
    spec = replace(spec, source=_source_text(src), notes=notes, unconfirmed=tuple(src.get("unconfirmed", ())),
                   aliases=tuple(a.lower() for a in src.get("aliases", ())))
    out = [spec]
    for other in src.get("also", ()):
        note = f"same architecture as {repo} (its config.json is the source)"
        out.append(replace(spec, id=other, aliases=(), notes=f"{note}; {notes}" if notes else note))
    return out


YOLO = CONFIGS / "ultralytics" / "yolo.json"
TIMM = CONFIGS / "timm"
# Training memory per parameter besides activations in MMYOLO's runs: fp32 weights, gradients and SGD momentum
# (4 + 4 + 4 bytes) and the fp16 weight copies autocast keeps during the forward (2 bytes).
YOLO_STATE_BYTES_PER_PARAM = 14.0
YOLO_BATCH = 16   # MMYOLO's 8xb16 configs: 16 images per GPU


def yolo_specs() -> list[ModelSpec]:
    """The YOLO detectors of ultralytics/yolo.json as vision profile entries (640 px)."""
    doc = json.loads(YOLO.read_text(encoding="utf-8"))
    rows = {r["id"]: r for r in doc["models"]}
    acts: dict[str, float] = {}
    for r in doc["models"]:
        if r.get("train_mem_gib"):
            acts[r["id"]] = (r["train_mem_gib"] * GIB - YOLO_STATE_BYTES_PER_PARAM * r["params_m"] * 1e6) / YOLO_BATCH
    out = []
    for r in doc["models"]:
        like = r.get("like")
        act = acts.get(r["id"])
        how = (f"training activations {act / 1e6:.0f} MB per 640 px image: MMYOLO's measured {r['train_mem_gib']} GiB at "
               f"batch {YOLO_BATCH} (AMP) less {YOLO_STATE_BYTES_PER_PARAM:g} bytes per parameter of weights, gradients "
               "and momentum, over the batch") if act else ""
        if act is None and like:
            ref = rows[like]
            act = acts[like] * (r["gflops"] / ref["gflops"]) ** 0.5
            how = (f"training activations {act / 1e6:.0f} MB per image: no published measurement; {like}'s measured "
                   f"{acts[like] / 1e6:.0f} MB scaled by the square root of the FLOPs ratio (activations grow with width, "
                   "FLOPs with width squared)")
        src = doc["sources"][r["source"]]
        arch = r["id"].split("/", 1)[1]
        profile = NonLLMProfile(
            reference_input={"image_size": 640}, forward_flops_per_sample=r["gflops"] * 1e9,
            activation_bytes_per_sample=float(round(act)),
            scaling={"input": "image_size", "reference": 640, "flops_exponent": 2, "activation_exponent": 2,
                     "rule": "a convolutional detector: FLOPs and activations grow with image_size^2"},
            sources=tuple(dict.fromkeys((src.split(" ")[0], doc["sources"]["memory"].split(" ")[0]))),
            kernels_per_forward=float(r["layers"]))
        unconfirmed = ["profile.kernels_per_forward"] + (["profile.activation_bytes_per_sample"]
                                                         if like or "train_mem_gib" in r.get("unconfirmed", ()) else [])
        out.append(ModelSpec(
            id=r["id"], family=r["family"], kind="vision", arch="yolo", params_total=r["params_m"] * 1e6,
            params_active=r["params_m"] * 1e6, source=f"{src} (retrieved {doc['retrieved']})", profile=profile,
            aliases=(arch, f"{arch}.pt"), unconfirmed=tuple(unconfirmed),
            notes=(f"{arch}: {r['params_m']} M parameters, {r['gflops']} GFLOPs per 640 px image (published); {how}; "
                   f"{r['layers']} eager ops per forward (the layer count Ultralytics prints)")))
    return out


def timm_table() -> dict:
    """The generated library's timm table: one row per architecture (timm/table.json + timm/ops.json)."""
    src = json.loads((TIMM / "sources.json").read_text(encoding="utf-8"))
    table = json.loads((TIMM / "table.json").read_text(encoding="utf-8"))
    ops = json.loads((TIMM / "ops.json").read_text(encoding="utf-8"))
    rows = [[name, *vals, ops.get(name) or 0] for name, vals in sorted(table["models"].items())]
    return {"source": src["table_url"], "ops": src["ops"], "retrieved": src["retrieved"],
            "columns": ["model", "image_size", "params_m", "gmacs", "macts_m", "kernels"], "rows": rows}


def _entry(spec: ModelSpec) -> dict:
    """The fields of one library entry that differ from ModelSpec's defaults (JSON types)."""
    full = spec.to_dict()
    entry: dict = {}
    drop = _DROP if spec.profile is None else _DROP_PROFILE
    for key, value in full.items():
        if key in drop:
            continue
        default = _DEFAULTS.get(key)
        if isinstance(default, tuple):
            default = list(default)
        if key != "id" and value == default:
            continue
        entry[key] = value
    return entry


def build() -> tuple[list[dict], list[str]]:
    """(library entries sorted by id, lines saying what was skipped and why)."""
    curated = load_curated()
    taken = {n.lower() for m in curated for n in (m.id, *m.aliases, *([m.modelscope_id] if m.modelscope_id else []))}
    skipped: list[str] = []
    entries: dict[str, ModelSpec] = {}
    for spec in [s for folder in _folders() for s in _specs_for(folder)] + yolo_specs():
        key = spec.id.lower()
        if key in taken:
            skipped.append(f"{spec.id}: already in models.yaml or the library")
            continue
        taken.add(key)
        entries[spec.id] = spec
    out: list[dict] = []
    for model_id in sorted(entries, key=str.lower):
        spec = entries[model_id]
        aliases = [a for a in dict.fromkeys((*spec.aliases, _short_alias(spec.id))) if a not in taken]
        taken.update(aliases)
        out.append(_entry(replace(spec, aliases=tuple(aliases))))
    return out, skipped


def render_json(entries: list[dict], timm: dict) -> str:
    doc = {"schema_version": SCHEMA_VERSION,
           "generated_by": "scripts/gen_model_library.py from scripts/model-configs/ (do not edit by hand)",
           "models": entries}
    text = json.dumps(doc, indent=1, sort_keys=False, ensure_ascii=False)
    assert text.endswith("\n}")
    # the timm table: one compact line per architecture (1,100 rows stay a few dozen KiB)
    meta = json.dumps({k: v for k, v in timm.items() if k != "rows"}, ensure_ascii=False)
    rows = ",\n  ".join(json.dumps(r, separators=(",", ":")) for r in timm["rows"])
    return text[:-2] + ',\n "timm": ' + meta[:-1] + ', "rows": [\n  ' + rows + "\n ]}\n}\n"


def render_doc(entries: list[dict], timm: dict) -> str:
    lines = ["# Generated model library", "",
             "Written by `scripts/gen_model_library.py` from the config.json files in `scripts/model-configs/`",
             "(see docs/models.md, \"The generated library\"). Do not edit by hand.", "",
             f"{len(entries)} models and {len(timm['rows'])} timm architectures. Language models' parameters are computed "
             "from each shape (docs/models.md, \"Parameter formulas\"); vision, speech and diffusion entries carry a "
             "profile (FLOPs and activation bytes per sample, computed from their configs or published tables).", "",
             "| id | kind | arch | params (B) | active (B) | attention | MoE | source |",
             "|---|---|---|---|---|---|---|---|"]
    from gpuplan.catalog.library import spec_from_entry

    for entry in entries:
        spec = spec_from_entry(entry)
        moe = f"{spec.moe.num_experts}e/top{spec.moe.experts_per_token}" if spec.moe else ""
        url = str(entry.get("source", "")).split(" ", 1)[0]
        attention = spec.attention if spec.is_llm else ""
        lines.append(f"| `{spec.id}` | {spec.kind} | {spec.arch} | {spec.params_total / 1e9:.3f} | "
                     f"{spec.params_active / 1e9:.3f} | {attention} | {moe} | {url} |")
    families: dict[str, list[str]] = {}
    for row in timm["rows"]:
        families.setdefault(re.match(r"[a-z]+", row[0]).group(0), []).append(row[0])  # type: ignore[union-attr]
    lines += ["", f"## timm architectures ({len(timm['rows'])})", "",
              f"Any of these names works as `model:` (also as `timm/<name>` and with a pretrained tag, "
              f"`timm/<name>.<tag>`). Source: {timm['source']}; ops per forward: {timm['ops']}.", ""]
    lines += [f"* **{fam}** ({len(names)}): " + ", ".join(f"`{n}`" for n in names) for fam, names in sorted(families.items())]
    return "\n".join(lines) + "\n"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--check", action="store_true", help="compare with the files instead of writing them")
    args = parser.parse_args(argv)
    entries, skipped = build()
    timm = timm_table()
    texts = {OUT: render_json(entries, timm), DOC: render_doc(entries, timm)}
    if args.check:
        stale = [str(p.relative_to(ROOT)) for p, text in texts.items()
                 if not p.is_file() or p.read_text(encoding="utf-8") != text]
        if stale:
            print("out of date (run scripts/gen_model_library.py): " + ", ".join(stale))
            return 1
        print(f"up to date: {len(entries)} models")
        return 0
    for path, text in texts.items():
        path.write_text(text, encoding="utf-8")
    print(f"wrote {len(entries)} models to {OUT.relative_to(ROOT)} and {DOC.relative_to(ROOT)}")
    for line in skipped:
        print("skipped " + line)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
