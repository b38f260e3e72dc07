"""English/Chinese human text (`--lang zh|en`) from gettext catalogs. JSON keys never change.

Messages are English msgids; the Chinese text lives in ``locale/zh_CN/LC_MESSAGES/gpuplan.po``,
managed with Babel (``scripts/i18n.sh`` extracts, updates and compiles; the compiled ``.mo`` ships
in the package and a test checks it is in step with the ``.po``). Mark text with:

- ``tr(text, lang)`` — translate now into ``lang`` (or the current language when ``lang`` is None);
- ``_(text)`` — translate into the current language (set by the CLI / API with :func:`use_lang`);
- ``N_(text)`` — mark a msgid chosen at run time (table headers, enum labels) for extraction only.

Sentences are templates with named placeholders, formatted after translation:
``tr("Wrote {n} files to {path}.", lang).format(n=n, path=path)``.
A msgid missing from the catalog falls back to English.
"""

from __future__ import annotations

import contextlib
import gettext
import locale
import os
import re
from collections.abc import Iterator
from contextvars import ContextVar
from functools import lru_cache
from pathlib import Path

LOCALE_DIR = Path(__file__).parent / "locale"
DOMAIN = "gpuplan"
_current: ContextVar[str] = ContextVar("gpuplan_lang", default="en")
_surface: ContextVar[str] = ContextVar("gpuplan_surface", default="python")


@lru_cache(maxsize=None)
def _catalog(lang: str) -> gettext.NullTranslations:
    return gettext.translation(DOMAIN, LOCALE_DIR, languages=["zh_CN"] if lang == "zh" else [lang], fallback=True)


def default_lang() -> str:
    """'zh' when the locale (LANG/LC_ALL/LC_MESSAGES or GPUPLAN_LANG) is Chinese, else 'en'."""
    for var in ("GPUPLAN_LANG", "LC_ALL", "LC_MESSAGES", "LANG"):
        val = os.environ.get(var)
        if val:
            return "zh" if val.lower().startswith("zh") else "en"
    try:
        loc = locale.getlocale()[0] or ""
    except ValueError:  # pragma: no cover
        loc = ""
    return "zh" if loc.lower().startswith("zh") else "en"


def current_lang() -> str:
    return _current.get()


@contextlib.contextmanager
def use_lang(lang: str) -> Iterator[None]:
    """Translate `_()` calls into `lang` inside the block (the CLI and the API wrap each request)."""
    token = _current.set(lang)
    try:
        yield
    finally:
        _current.reset(token)


def current_surface() -> str:
    """Where the text is shown: 'cli', 'web' or 'python' (hints differ: the page cannot run commands)."""
    return _surface.get()


@contextlib.contextmanager
def use_surface(surface: str) -> Iterator[None]:
    token = _surface.set(surface)
    try:
        yield
    finally:
        _surface.reset(token)


def lang_from_request(query_lang: str | None, accept_language: str | None) -> str:
    """The web request's language: ``?lang=zh|en`` wins, else the first language of Accept-Language."""
    for raw in (query_lang, (accept_language or "").split(",", 1)[0]):
        low = (raw or "").strip().lower()
        if low.startswith("zh"):
            return "zh"
        if low.startswith("en"):
            return "en"
    return "en"


def tr(text: str, lang: str | None = None) -> str:
    lang = lang or _current.get()
    if lang != "zh":
        return text
    return _catalog("zh").gettext(text)


def catalog_messages(lang: str) -> dict[str, str]:
    """Every msgid -> translation of one language (empty for English): the web page's labels."""
    if lang != "zh":
        return {}
    cat = _catalog("zh")
    return {k: v for k, v in getattr(cat, "_catalog", {}).items() if isinstance(k, str) and k}


def _(text: str) -> str:
    return tr(text)


def N_(text: str) -> str:  # noqa: N802 - the gettext convention
    return text


# Table headers and labels chosen at run time (render/text.py looks them up with tr(label, lang)).
TABLE_LABELS = (
    N_("GPU"), N_("GPUs"), N_("Instance type"), N_("Family"), N_("vCPU"), N_("Memory"), N_("Memory (GiB)"),
    N_("GPU memory"), N_("GPU memory (GiB)"), N_("Network (Gbit/s)"), N_("RDMA"), N_("Interconnect"), N_("Status"),
    N_("Sources"), N_("Source"), N_("Architecture"), N_("Bandwidth (GB/s)"), N_("BF16 dense TFLOPS"),
    N_("FP16 dense TFLOPS"), N_("FP8 dense TFLOPS"), N_("INT8 dense TOPS"), N_("TF32 dense TFLOPS"),
    N_("FP32 TFLOPS"), N_("NVLink (GB/s)"), N_("MIG"), N_("yes"), N_("no"), N_("none"), N_("unconfirmed"),
    N_("Model"), N_("Parameters"), N_("Layers"), N_("Hidden"), N_("Heads"), N_("KV heads"), N_("Vocab"),
    N_("Attention"), N_("Max positions"), N_("Kind"), N_("Price"), N_("no price known"), N_("Error"), N_("Hint"),
    N_("Assumptions"), N_("Warnings"), N_("Suggestions"), N_("Memory per GPU"), N_("Component"), N_("Bytes"),
    N_("Share"), N_("fits"), N_("does not fit"), N_("Performance"), N_("Value"), N_("weights"), N_("gradients"),
    N_("optimizer"), N_("activations"), N_("kv_cache"), N_("adapters"), N_("logits"), N_("overhead"),
    N_("capacity"), N_("Total"), N_("Step time"), N_("Tokens/s"), N_("Tokens/s per GPU"), N_("Samples/s"),
    N_("MFU"), N_("TFLOP/s per GPU"), N_("Communication share"), N_("Total time"), N_("GPU-hours"), N_("TTFT"),
    N_("TPOT"), N_("Output tokens/s"), N_("Max concurrency"), N_("Max requests/s"), N_("Host RAM"),
    N_("Peak allocated"), N_("Peak reserved"), N_("Engine reserved"), N_("Layout"),
    N_("Latency"), N_("Sequences/s"), N_("Input tokens/s"), N_("Images/s"), N_("Denoising steps/s"),
)


# --- display-time translation of English text made from catalog templates -------------------------------
#
# Plans and estimates are computed in English (their JSON never changes with the language) and keep their
# sentences as plain strings: "cheapest feasible plan: 1 x ecs.gn7i-c8g1.2xlarge ...". To show such a
# sentence in Chinese, :func:`localize` finds the msgid template it was formatted from, reads the
# placeholder values back out of the English text, and formats the template's translation with them
# (values that are themselves catalog sentences are translated the same way).

_FIELD = re.compile(r"\{\{|\}\}|\{([A-Za-z_]\w*)(?:![rsa])?(?::[^{}]*)?\}")


class _Template:
    __slots__ = ("msgid", "msgstr", "regexes", "names", "literals", "weight", "wordy")

    def __init__(self, msgid: str, msgstr: str) -> None:
        self.msgid, self.msgstr = msgid, msgstr
        lazy: list[str] = []
        greedy: list[str] = []
        literals: list[str] = []
        names: list[str] = []
        pos, lit = 0, ""
        for m in _FIELD.finditer(msgid):
            lit += msgid[pos:m.start()]
            pos = m.end()
            if m.group(0) in ("{{", "}}"):
                lit += m.group(0)[0]
                continue
            for parts in (lazy, greedy):
                parts.append(re.escape(lit))
            literals.append(lit)
            lit = ""
            name = m.group(1)
            lazy.append(f"(?P={name})" if name in names else f"(?P<{name}>.*?)")
            greedy.append(f"(?P={name})" if name in names else f"(?P<{name}>.*)")
            names.append(name)
        lit += msgid[pos:]
        literals.append(lit)
        self.regexes = [re.compile("".join(lazy) + re.escape(lit), re.DOTALL),
                        re.compile("".join(greedy) + re.escape(lit), re.DOTALL)]
        self.names = names
        self.literals = [s for s in literals if s.strip()]
        self.weight = sum(len(s) for s in literals)
        self.wordy = bool(re.search(r"[A-Za-z]", "".join(literals)))

    def fill(self, values: dict[str, str]) -> str:
        def sub(m: re.Match) -> str:
            if m.group(0) in ("{{", "}}"):
                return m.group(0)[0]
            return values.get(m.group(1), m.group(0))

        return _FIELD.sub(sub, self.msgstr)


_LABELLED = re.compile(r"\{([A-Za-z_]\w*)\}: ")


@lru_cache(maxsize=None)
def _templates(lang: str) -> tuple[_Template, ...]:
    out = []
    for k, v in catalog_messages(lang).items():
        if not _FIELD.search(k.replace("{{", "")):
            continue
        out.append(_Template(k, v))
        # "{label}: reason" is also shown without its label (the reason alone, after the colon)
        m = _LABELLED.match(k)
        if m:
            for colon in ("：", ": "):
                head = "{" + m.group(1) + "}" + colon
                if v.startswith(head):
                    out.append(_Template(k[m.end():], v[len(head):]))
                    break
    # a template of placeholders alone, or of placeholders and separators, ("{a} {b}") would match anything
    # (lists "{a}, {b}" are split on their separator instead)
    out = [t for t in out if t.names and "".join(t.literals).strip(" ,;")]
    return tuple(sorted(out, key=lambda t: -t.weight))


_IDENT = re.compile(r"[\w.:/@+-]*[\d./_:@][\w.:/@+-]*")   # ids, numbers, paths: never translated
_ENGLISH = re.compile(r"(?<![\w./-])[A-Za-z]{2,}(?![\w./-])")
_CJK = re.compile(r"[\u3000-\u303f\u4e00-\u9fff\uff00-\uffef]")
_GENERIC = 4          # templates with fewer literal characters than this are tried on parts of a sentence only
_SEPARATORS = ("; ", ", ")


def localize(text: str, lang: str | None = None) -> str:
    """`text`, an English sentence made by formatting catalog msgids, in `lang` (unchanged when it was not made
    from the catalog, or the language is English). Where the English could be read back in several ways the
    reading that leaves the fewest English words wins."""
    lang = lang or _current.get()
    if lang == "en" or not text or not isinstance(text, str):
        return text
    return _localize(text, lang, 0)


def _english_left(text: str) -> int:
    return len(_ENGLISH.findall(text))


@lru_cache(maxsize=8192)
def _localize(text: str, lang: str, depth: int) -> str:
    if not text:
        return text     # (the catalog's "" is its header)
    exact = getattr(_catalog(lang), "_catalog", {}).get(text)
    if exact:
        return exact
    stripped = text.strip()
    if (depth > 5 or not stripped or _IDENT.fullmatch(stripped) or not re.search(r"[A-Za-z]{2}", stripped)
            or _CJK.search(text)):     # (text already in Chinese: nothing to read back)
        return text
    if stripped != text:
        lead, trail = text[:len(text) - len(text.lstrip())], text[len(text.rstrip()):]
        return lead + _localize(stripped, lang, depth) + trail
    best: tuple[int, str] | None = None
    for t in _templates(lang):
        if (depth == 0 and t.weight < _GENERIC) or not all(s in text for s in t.literals):
            continue
        if best is not None and best[0] == 0:
            break
        for regex in t.regexes:
            m = regex.fullmatch(text)
            if m is None:
                continue
            raw = m.groupdict()
            values = {k: _localize(v, lang, depth + 1) for k, v in raw.items()}
            if not t.wordy and values == raw:      # "({items})" alone is no reading of the text
                continue
            out = t.fill(values)
            score = _english_left(out)
            if best is None or score < best[0]:
                best = (score, out)
    if best is None or best[0] > 0:
        for sep in _SEPARATORS:     # a list of sentences or phrases joined by a separator (itself a msgid)
            if sep in text:
                parts = text.split(sep)
                done = [_localize(p, lang, depth + 1) for p in parts]
                if done != parts:
                    out = tr(sep, lang).join(done)
                    if best is None or _english_left(out) < best[0]:
                        best = (_english_left(out), out)
                    break
    return best[1] if best is not None else text
