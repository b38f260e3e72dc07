"""The message catalog covers the code: Babel's extraction (as scripts/i18n.sh runs it) finds no msgid
without a Chinese translation, sees every literal `_()`/`tr()`/`N_()` call, and templates use named
placeholders. There is no hand-written dictionary beside the catalog."""

from __future__ import annotations

import ast
import re
import string
from pathlib import Path

from babel.messages.extract import extract_from_dir
from babel.messages.frontend import parse_mapping_cfg
from babel.messages.pofile import read_po

from gpuplan import i18n

ROOT = Path(__file__).resolve().parents[2]
SRC = ROOT / "src"
PO = i18n.LOCALE_DIR / "zh_CN" / "LC_MESSAGES" / "gpuplan.po"
KEYWORDS = {"tr": None, "_": None, "N_": None}   # scripts/i18n.sh: -k tr -k _ -k N_


def extracted() -> dict[str, list[str]]:
    """msgid -> files, exactly as `pybabel extract -F babel.cfg -k tr -k _ -k N_ src` sees them."""
    with (ROOT / "babel.cfg").open(encoding="utf-8") as f:
        method_map, options_map = parse_mapping_cfg(f)
    out: dict[str, list[str]] = {}
    for filename, _lineno, message, _comments, _context in extract_from_dir(
            str(SRC), method_map, options_map, keywords=KEYWORDS):
        msgid = message[0] if isinstance(message, tuple) else message
        if msgid:
            out.setdefault(msgid, []).append(filename)
    return out


def catalog() -> dict[str, str]:
    with PO.open("rb") as f:
        return {m.id: m.string for m in read_po(f) if m.id}


def test_every_extracted_msgid_has_a_chinese_translation():
    cat = catalog()
    missing = sorted(f"{m!r} ({', '.join(sorted(set(files)))})" for m, files in extracted().items() if not cat.get(m))
    assert missing == [], "run scripts/i18n.sh and translate in the .po:\n" + "\n".join(missing)


def test_translations_are_chinese():
    """A translation that only copies the English is a forgotten one (ids, units and commands aside)."""
    copied = [m for m, t in catalog().items()
              if t == m and len(re.findall(r"[A-Za-z]{3,}", m)) >= 3 and " " in m
              and not m.startswith(("pip ", "nvidia-smi", "gpuplan "))]
    assert copied == [], copied


def _literal_calls() -> set[tuple[str, str]]:
    """(file, text) of every `_("...")`, `tr("...")` and `N_("...")` with a literal first argument."""
    found = set()
    for path in (SRC / "gpuplan").rglob("*.py"):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if (isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id in KEYWORDS
                    and node.args and isinstance(node.args[0], ast.Constant) and isinstance(node.args[0].value, str)
                    and node.args[0].value):
                found.add((str(path.relative_to(SRC)), node.args[0].value))
    return found


def test_extraction_sees_every_marked_literal():
    """Babel's tokenizer loses its place on some constructs (`tr = table(...)`; `tr["key"]`): then the
    messages after it in the file are silently not extracted. Every literal call must reach the .pot."""
    ids = extracted()
    lost = sorted(f"{f}: {t!r}" for f, t in _literal_calls() if t not in ids)
    assert lost == [], "not extracted (rename a variable called tr/_ in that file):\n" + "\n".join(lost)


def test_templates_use_named_placeholders():
    positional = []
    for msgid in extracted():
        try:
            fields = [f for _, f, _, _ in string.Formatter().parse(msgid) if f is not None]
        except ValueError:   # not a format template (a literal brace in a web label)
            continue
        if any(f == "" or f.isdigit() for f in fields):
            positional.append(msgid)
    assert positional == [], positional


def test_no_hand_written_dictionary():
    assert not hasattr(i18n, "register") and not hasattr(i18n, "_ZH")
    for path in (SRC / "gpuplan").rglob("*.py"):
        text = path.read_text(encoding="utf-8")
        assert "register({" not in text, path
    from gpuplan.doctor import i18n as doctor_i18n

    assert all(isinstance(v, str) for v in doctor_i18n.TEXT.values())   # English msgids, Chinese in the .po


def test_web_hints_do_not_name_cli_commands():
    from gpuplan.catalog.models import resolve_model
    from gpuplan.errors import GpuplanError

    try:
        resolve_model("qwen-7")
    except GpuplanError as err:
        assert "gpuplan models" in err.hint_for("cli")
        assert "gpuplan" not in err.hint_for("web") and "page" in err.hint_for("web")
    stripped = GpuplanError("x", hint="Did you mean 'lora'? `gpuplan schema` lists every key.").hint_for("web")
    assert stripped == "Did you mean 'lora'?"
    with i18n.use_lang("zh"):
        try:
            resolve_model("qwen-7")
        except GpuplanError as err:
            assert err.message == "未知的模型 'qwen-7'。" and "页面" in err.hint_for("web")
