#!/usr/bin/env bash
# SGLang equivalent of serve.sh for qwen7b-chat-api (https://docs.sglang.ai/backend/server_arguments.html).
# In a container: docker run --gpus all --ipc=host -p 30000:30000 -v "$PWD":/bundle lmsysorg/sglang:v0.4.6.post1-cu124 bash /bundle/serve-sglang.sh
# ./serve-sglang.sh --dry-run prints the command without starting anything.
set -euo pipefail

DRY_RUN=0
if [ "${1:-}" = "--dry-run" ]; then DRY_RUN=1; shift; fi
DEFAULT_MODEL=Qwen/Qwen2.5-7B-Instruct
MODEL="${MODEL:-$DEFAULT_MODEL}"
SERVED_MODEL_NAME="${SERVED_MODEL_NAME:-qwen7b-chat-api}"
HOST="${HOST:-0.0.0.0}"
PORT="${PORT:-30000}"
# Where the weights come from: MODEL_DIR (a local copy fetch-model.sh makes once: OSS, ModelScope or Hugging Face)
# or, without it, the engine's own download from ModelScope (the default in mainland regions; MODEL_HUB=huggingface
# to use Hugging Face). HF_TOKEN is read from the environment, never written.
MODEL_HUB="${MODEL_HUB:-modelscope}"
if [ "$MODEL_HUB" = modelscope ]; then
  export VLLM_USE_MODELSCOPE=True SGLANG_USE_MODELSCOPE=true
fi
if [ "$DRY_RUN" = 0 ] && [ -n "${MODEL_DIR:-}" ] && [ ! -e "$MODEL" ]; then
  MODEL="$MODEL" MODEL_DIR="$MODEL_DIR" MODEL_HUB="$MODEL_HUB" "$(dirname "$0")/fetch-model.sh"
  MODEL="$MODEL_DIR"
fi
ARGS=(
  --model-path "$MODEL"
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
