#!/usr/bin/env bash
# SGLang equivalent of serve.sh for qwen7b-chat-api (https://docs.sglang.ai/backend/server_arguments.html).
# It needs SGLang (not in this bundle's image, which serves vLLM: install the sglang pin of data/environments.yaml in a virtual environment):
#   docker run --gpus all --ipc=host --network host -v /mnt/data:/mnt/data <image> bash /opt/gpuplan/serve-sglang.sh
# ./serve-sglang.sh --dry-run prints the command without starting anything.
set -euo pipefail

DRY_RUN=0
if [ "${1:-}" = "--dry-run" ]; then DRY_RUN=1; shift; fi
DEFAULT_MODEL=Qwen/Qwen2.5-7B-Instruct
MODEL="${MODEL:-$DEFAULT_MODEL}"
SERVED_MODEL_NAME="${SERVED_MODEL_NAME:-qwen7b-chat-api}"
HOST="${HOST:-0.0.0.0}"
PORT="${PORT:-30000}"
# Where the weights come from: fetch-model.sh copies them once into MODEL_DIR, inside the region (a staged mirror, your
# OSS copy (MODEL_OSS), or ModelScope: cn-hangzhou is a mainland region); the engine loads that local
# copy with the hubs offline. HF_TOKEN is read from the environment, never written.
MODEL_DIR="${MODEL_DIR:-/mnt/data/models/qwen7b-chat-api}"
MODEL_HUB="${MODEL_HUB:-modelscope}"
case "$MODEL" in
  /*|./*) SERVE_PATH="$MODEL";;
  *)
    SERVE_PATH="$MODEL_DIR"
    if [ "$DRY_RUN" = 1 ]; then
      echo "# fetch-model.sh: $MODEL -> $MODEL_DIR ($MODEL_HUB)" >&2
    else
      MODEL="$MODEL" MODEL_DIR="$MODEL_DIR" MODEL_HUB="$MODEL_HUB" "$(dirname "$0")/fetch-model.sh"
    fi;;
esac
export HF_HUB_OFFLINE=1 TRANSFORMERS_OFFLINE=1
ARGS=(
  --model-path "$SERVE_PATH"
  --served-model-name "$SERVED_MODEL_NAME"
  --host "$HOST"
  --port "$PORT"
  --tp-size 1
  --context-length 1536
  --mem-fraction-static 0.9
  --max-running-requests 604
  --dtype bfloat16
  --kv-cache-dtype fp8_e4m3
  --enable-metrics
)
if [ "$DRY_RUN" = 1 ]; then
  printf '%q ' python3 -m sglang.launch_server "${ARGS[@]}" "$@"; echo
  exit 0
fi
# API_KEY (optional): SGLang then answers only requests with "Authorization: Bearer $API_KEY".
if [ -n "${API_KEY:-}" ]; then ARGS+=(--api-key "$API_KEY"); fi
exec python3 -m sglang.launch_server "${ARGS[@]}" "$@"
