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
from collections.abc import Iterator
from contextvars import ContextVar
from functools import lru_cache
from pathlib import Path

LOCALE_DIR = Path(__file__).parent / "locale"
DOMAIN = "gpuplan"
_current: ContextVar[str] = ContextVar("gpuplan_lang", default="en")
# Transitional: modules not yet moved to the catalog register msgid -> Chinese here. The catalog wins.
_ZH: dict[str, str] = {}


def register(translations: dict[str, str]) -> None:
    _ZH.update(translations)


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


def tr(text: str, lang: str | None = None) -> str:
    lang = lang or _current.get()
    if lang != "zh":
        return text
    out = _catalog("zh").gettext(text)
    if out == text:
        return _ZH.get(text, text)
    return out


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


register({
    "GPU": "GPU", "GPUs": "GPU", "Instance type": "实例规格", "Family": "规格族", "vCPU": "vCPU",
    "Memory": "内存", "Memory (GiB)": "内存 (GiB)", "GPU memory": "显存", "GPU memory (GiB)": "显存 (GiB)",
    "Network (Gbit/s)": "网络 (Gbit/s)", "RDMA": "RDMA", "Interconnect": "互联", "Status": "状态",
    "Sources": "来源", "Source": "来源", "Architecture": "架构", "Bandwidth (GB/s)": "带宽 (GB/s)",
    "BF16 dense TFLOPS": "BF16 稠密 TFLOPS", "FP16 dense TFLOPS": "FP16 稠密 TFLOPS",
    "FP8 dense TFLOPS": "FP8 稠密 TFLOPS", "INT8 dense TOPS": "INT8 稠密 TOPS", "TF32 dense TFLOPS": "TF32 稠密 TFLOPS",
    "FP32 TFLOPS": "FP32 TFLOPS", "NVLink (GB/s)": "NVLink (GB/s)", "MIG": "MIG", "yes": "是", "no": "否",
    "none": "无", "unconfirmed": "未确认", "Model": "模型", "Parameters": "参数量", "Layers": "层数",
    "Hidden": "隐藏维度", "Heads": "注意力头", "KV heads": "KV 头", "Vocab": "词表", "Attention": "注意力",
    "Max positions": "最大长度", "Kind": "类型", "Price": "价格", "no price known": "无已知价格",
    "Error": "错误", "Hint": "提示", "Assumptions": "假设", "Warnings": "警告", "Suggestions": "建议",
    "Memory per GPU": "每卡显存", "Component": "组成", "Bytes": "字节", "Share": "占比",
    "fits": "可以放下", "does not fit": "放不下", "Performance": "性能", "Value": "数值",
    "weights": "权重", "gradients": "梯度", "optimizer": "优化器状态", "activations": "激活",
    "kv_cache": "KV 缓存", "adapters": "适配器 (LoRA)", "logits": "logits", "overhead": "框架/CUDA 开销",
    "capacity": "容量", "Total": "合计", "Step time": "单步时间", "Tokens/s": "Tokens/s",
    "Tokens/s per GPU": "每卡 Tokens/s", "Samples/s": "样本/秒", "MFU": "MFU", "TFLOP/s per GPU": "每卡 TFLOP/s",
    "Communication share": "通信占比", "Total time": "总时长", "GPU-hours": "GPU 小时", "TTFT": "首字延迟",
    "TPOT": "每 token 延迟", "Output tokens/s": "输出 tokens/s", "Max concurrency": "最大并发",
    "Max requests/s": "最大请求/秒", "Host RAM": "主机内存", "Peak allocated": "峰值已分配",
    "Peak reserved": "峰值已预留", "Engine reserved": "引擎预留", "Layout": "并行方式",
})
