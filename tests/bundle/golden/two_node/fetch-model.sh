#!/usr/bin/env bash
# Download the model's weights once into MODEL_DIR, before the job starts, and say how long it took.
# Sources, first that is set: MODEL_OSS (oss://bucket/prefix with the model's files: the VPC-internal OSS endpoint,
# the fastest), then ModelScope (the default in mainland regions; falls back to Hugging Face).
# PLAN.md times this download at 100 Mbit/s: 21.4min for 16 GB.
# HF_TOKEN (gated repositories) is read from the environment by huggingface_hub; this script never prints it.
# Run again: a finished download ($MODEL_DIR/.gpuplan-complete) is not repeated; an interrupted one resumes.
set -euo pipefail

DEFAULT_MODEL=meta-llama/Llama-3.1-8B
MODEL="${MODEL:-$DEFAULT_MODEL}"
MODEL_DIR="${MODEL_DIR:-/mnt/data/models/llama8b-full-2node}"
MODEL_HUB="${MODEL_HUB:-modelscope}"
MODEL_OSS="${MODEL_OSS:-}"
MARKER="$MODEL_DIR/.gpuplan-complete"

case "$MODEL" in
  /*|./*) echo "fetch-model.sh: MODEL is a local path ($MODEL): nothing to download"; exit 0;;
esac
if [ -f "$MARKER" ]; then
  echo "fetch-model.sh: $MODEL is already in $MODEL_DIR"
  exit 0
fi
if [ -d "$MODEL_DIR" ] && [ ! -w "$MODEL_DIR" ] && { [ -f "$MODEL_DIR/config.json" ] || [ -f "$MODEL_DIR/model_index.json" ]; }; then
  echo "fetch-model.sh: using the read-only copy in $MODEL_DIR"
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
  command -v ossutil >/dev/null 2>&1 || { echo "fetch-model.sh: MODEL_OSS is set but ossutil is not installed (https://www.alibabacloud.com/help/en/oss/developer-reference/ossutil)" >&2; return 1; }
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
    echo "fetch-model.sh: $MODEL is not on ModelScope under this id (or the download failed); trying Hugging Face. Set MODEL to the ModelScope id, or MODEL_OSS, to avoid the slower route." >&2
    from_huggingface
  fi
else
  from_huggingface
fi

touch "$MARKER"
seconds=$(( $(date +%s) - start ))
megabytes=$(( $(du -sk "$MODEL_DIR" | cut -f1) / 1024 ))
echo "fetch-model.sh: $megabytes MB in $seconds s into $MODEL_DIR"
