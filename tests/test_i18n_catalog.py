"""The gettext catalog: the shipped .mo is the compiled .po, and translation follows the language."""

from __future__ import annotations

import gettext
from pathlib import Path

from babel.messages.pofile import read_po

from gpuplan import i18n

PO = i18n.LOCALE_DIR / "zh_CN" / "LC_MESSAGES" / "gpuplan.po"
MO = PO.with_suffix(".mo")


def test_shipped_mo_is_the_compiled_po():
    with PO.open("rb") as f:
        po = {m.id: m.string for m in read_po(f) if m.id and m.string}
    with MO.open("rb") as f:
        mo = {k: v for k, v in gettext.GNUTranslations(f)._catalog.items() if k}  # type: ignore[attr-defined]
    assert mo == po, "run scripts/i18n.sh compile after editing the .po"


def test_every_translation_keeps_its_placeholders():
    import string

    with PO.open("rb") as f:
        for m in read_po(f):
            if not (m.id and m.string):
                continue
            fields = lambda s: sorted(f for _, f, _, _ in string.Formatter().parse(s) if f is not None)  # noqa: E731
            assert fields(m.id) == fields(m.string), m.id


def test_tr_and_use_lang():
    assert i18n.tr("Instance type", "zh") == "实例规格"
    assert i18n.tr("Instance type", "en") == "Instance type"
    assert i18n.tr("a sentence nobody translated", "zh") == "a sentence nobody translated"
    with i18n.use_lang("zh"):
        assert i18n._("Budget in CNY ('none' for no limit)").startswith("预算")
    assert i18n._("Epochs") == "Epochs"


def test_package_data_ships_the_catalog():
    import tomllib

    data = tomllib.loads(Path(__file__).resolve().parents[1].joinpath("pyproject.toml").read_text())
    globs = data["tool"]["setuptools"]["package-data"]["gpuplan"]
    assert any(g.startswith("locale/") and g.endswith(".mo") for g in globs)
