#!/usr/bin/env bash
# Download the model's weights once into MODEL_DIR, before the job starts, and say how long it took.
# Sources, first that is set: MODEL_OSS (oss://bucket/prefix with the model's files: the VPC-internal OSS endpoint,
# the fastest), then ModelScope (the default in mainland regions; falls back to Hugging Face).
# PLAN.md times this download at 100 Mbit/s: 20.3min for 15 GB.
# HF_TOKEN (gated repositories) is read from the environment by huggingface_hub; this script never prints it.
# Run again: a finished download ($MODEL_DIR/.gpuplan-complete) is not repeated; an interrupted one resumes.
set -euo pipefail

DEFAULT_MODEL=Qwen/Qwen2.5-7B-Instruct
MODEL="${MODEL:-$DEFAULT_MODEL}"
MODEL_DIR="${MODEL_DIR:-/mnt/data/models/qwen7b-chat-api}"
MODEL_HUB="${MODEL_HUB:-modelscope}"
MODEL_OSS="${MODEL_OSS:-}"
MARKER="$MODEL_DIR/.gpuplan-complete"

case "$MODEL" in
  /*|./*) echo "fetch-model.sh：MODEL 是本地路径 $MODEL ，无需下载"; exit 0;;
esac
if [ -f "$MARKER" ]; then
  echo "fetch-model.sh：$MODEL 已在 $MODEL_DIR 中"
  exit 0
fi
if [ -d "$MODEL_DIR" ] && [ ! -w "$MODEL_DIR" ] && { [ -f "$MODEL_DIR/config.json" ] || [ -f "$MODEL_DIR/model_index.json" ]; }; then
  echo "fetch-model.sh：使用 $MODEL_DIR 中的只读副本"
  exit 0
fi
mkdir -p "$MODEL_DIR"
start=$(date +%s)

pip_install() {
  # The VPC-internal PyPI mirror in Alibaba Cloud regions, PyPI elsewhere.
  python3 -m pip install -q "$@" 2>/dev/null || python3 -m pip install -q -i http://mirrors.cloud.aliyuncs.com/pypi/simple/ \
    --trusted-host mirrors.cloud.aliyuncs.com "$@"
}

from_oss() {
  command -v ossutil >/dev/null 2>&1 || { echo "fetch-model.sh：已设置 MODEL_OSS，但未安装 ossutil（https://www.alibabacloud.com/help/en/oss/developer-reference/ossutil）" >&2; return 1; }
  ossutil cp -r -f --jobs 16 "${MODEL_OSS%/}/" "$MODEL_DIR/"
}

from_modelscope() {
  command -v modelscope >/dev/null 2>&1 || pip_install modelscope==1.40.2
  modelscope download --model "$MODEL" --local_dir "$MODEL_DIR"
}

from_huggingface() {
  if command -v hf >/dev/null 2>&1; then
    hf download "$MODEL" --local-dir "$MODEL_DIR"
  elif command -v huggingface-cli >/dev/null 2>&1; then
    huggingface-cli download "$MODEL" --local-dir "$MODEL_DIR"
  else
    pip_install huggingface_hub && hf download "$MODEL" --local-dir "$MODEL_DIR"
  fi
}

if [ -n "$MODEL_OSS" ]; then
  from_oss
elif [ "$MODEL_HUB" = modelscope ]; then
  if ! from_modelscope; then
    echo "fetch-model.sh：ModelScope 上没有这个 ID 的 $MODEL ，或下载失败；改从 Hugging Face 下载。把 MODEL 设为 ModelScope 上的 ID，或设置 MODEL_OSS，可避开较慢的线路。" >&2
    from_huggingface
  fi
else
  from_huggingface
fi

touch "$MARKER"
seconds=$(( $(date +%s) - start ))
megabytes=$(( $(du -sk "$MODEL_DIR" | cut -f1) / 1024 ))
echo "fetch-model.sh：$megabytes MB，用时 $seconds 秒，保存在 $MODEL_DIR"
