"""English/Chinese text for headers and messages (`--lang zh|en`). JSON keys never change.

Strings are keyed by their English text; each module registers its Chinese translations with
:func:`register`. A missing translation falls back to English.
"""

from __future__ import annotations

import locale
import os

_ZH: dict[str, str] = {}


def register(translations: dict[str, str]) -> None:
    _ZH.update(translations)


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


def tr(text: str, lang: str = "en") -> str:
    if lang == "zh":
        return _ZH.get(text, text)
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
