"""Generate src/gpuplan/data/model_library.json from the config.json files in scripts/model-configs/.

Usage:
    python scripts/gen_model_library.py           # rewrite the library and docs/model-library.md
    python scripts/gen_model_library.py --check   # exit 1 when either file differs from what it would write

Each model folder scripts/model-configs/<org>/<name>/ holds the model's Hugging Face ``config.json``
(the architecture keys, copied unchanged from the source) and ``source.json``:

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

The shape is parsed with gpuplan's own config reader (gpuplan.catalog.hf_config.from_hf_config), so the
library holds exactly what a user would get by passing that config.json as the model. Models already in
the hand-curated src/gpuplan/data/models.yaml are skipped (that file wins); so are names another entry
already uses. The output is deterministic (sorted, no timestamps): re-running on the same folders gives
the same bytes, which tests/catalog/test_model_library.py checks.
"""

from __future__ import annotations

import argparse
import json
import sys
from dataclasses import fields, replace
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
sys.path.insert(0, str(ROOT / "src"))

from gpuplan.catalog.hf_config import from_hf_config  # noqa: E402
from gpuplan.catalog.library import load_curated  # noqa: E402
from gpuplan.catalog.model_spec import ModelSpec  # noqa: E402

CONFIGS = HERE / "model-configs"
OUT = ROOT / "src" / "gpuplan" / "data" / "model_library.json"
DOC = ROOT / "docs" / "model-library.md"
SCHEMA_VERSION = 1
# Fields the library file leaves out: the loader fills them again (params from the shape).
_DROP = {"params_total", "params_active", "profile", "synthetic", "modelscope_id"}
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
    cfg = json.loads((folder / "config.json").read_text(encoding="utf-8"))
    repo = src["repo"]
    if folder.relative_to(CONFIGS).as_posix() != repo:
        raise SystemExit(f"{folder}: source.json repo {repo!r} does not match the folder name")
    for key in ("config_url", "revision", "retrieved"):
        if not src.get(key):
            raise SystemExit(f"{folder}/source.json lacks {key!r}")
    spec = from_hf_config(cfg, name=repo)
    notes = src.get("notes", "")
    spec = replace(spec, source=_source_text(src), notes=notes, unconfirmed=tuple(src.get("unconfirmed", ())),
                   aliases=tuple(a.lower() for a in src.get("aliases", ())))
    out = [spec]
    for other in src.get("also", ()):
        note = f"same architecture as {repo} (its config.json is the source)"
        out.append(replace(spec, id=other, aliases=(), notes=f"{note}; {notes}" if notes else note))
    return out


def _entry(spec: ModelSpec) -> dict:
    """The fields of one library entry that differ from ModelSpec's defaults (JSON types)."""
    full = spec.to_dict()
    entry: dict = {}
    for key, value in full.items():
        if key in _DROP:
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
    for folder in _folders():
        for spec in _specs_for(folder):
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


def render_json(entries: list[dict]) -> str:
    doc = {"schema_version": SCHEMA_VERSION,
           "generated_by": "scripts/gen_model_library.py from scripts/model-configs/ (do not edit by hand)",
           "models": entries}
    return json.dumps(doc, indent=1, sort_keys=False, ensure_ascii=False) + "\n"


def render_doc(entries: list[dict]) -> str:
    lines = ["# Generated model library", "",
             "Written by `scripts/gen_model_library.py` from the config.json files in `scripts/model-configs/`",
             "(see docs/models.md, \"The generated library\"). Do not edit by hand.", "",
             f"{len(entries)} models. Parameters are computed from each shape (docs/models.md, \"Parameter formulas\").", "",
             "| id | kind | arch | params (B) | active (B) | attention | MoE | source |",
             "|---|---|---|---|---|---|---|---|"]
    from gpuplan.catalog.library import spec_from_entry

    for entry in entries:
        spec = spec_from_entry(entry)
        moe = f"{spec.moe.num_experts}e/top{spec.moe.experts_per_token}" if spec.moe else ""
        url = str(entry.get("source", "")).split(" ", 1)[0]
        lines.append(f"| `{spec.id}` | {spec.kind} | {spec.arch} | {spec.params_total / 1e9:.3f} | "
                     f"{spec.params_active / 1e9:.3f} | {spec.attention} | {moe} | {url} |")
    return "\n".join(lines) + "\n"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--check", action="store_true", help="compare with the files instead of writing them")
    args = parser.parse_args(argv)
    entries, skipped = build()
    texts = {OUT: render_json(entries), DOC: render_doc(entries)}
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
