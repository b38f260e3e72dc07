#!/usr/bin/env bash
# vLLM OpenAI-compatible server for qwen7b-chat-api on 1 x L20-48GB (ecs.gn8is.4xlarge).
# Every engine setting below is the one the estimate used (https://docs.vllm.ai/en/latest/configuration/engine_args.html).
# In a container: docker run --gpus all --ipc=host -p 8000:8000 --entrypoint bash -v "$PWD":/bundle vllm/vllm-openai:v0.8.5 /bundle/serve.sh
# ./serve.sh --dry-run prints the command (and checks MODEL) without starting anything.
set -euo pipefail

DRY_RUN=0
if [ "${1:-}" = "--dry-run" ]; then DRY_RUN=1; shift; fi
DEFAULT_MODEL=Qwen/Qwen2.5-7B-Instruct
MODEL="${MODEL:-$DEFAULT_MODEL}"
SERVED_MODEL_NAME="${SERVED_MODEL_NAME:-qwen7b-chat-api}"
HOST="${HOST:-0.0.0.0}"
PORT="${PORT:-8000}"
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
  --served-model-name "$SERVED_MODEL_NAME"
  --host "$HOST"
  --port "$PORT"
  --tensor-parallel-size 1
  --pipeline-parallel-size 1
  --max-model-len 1536
  --gpu-memory-utilization 0.9
  --max-num-seqs 604
  --dtype bfloat16
  --kv-cache-dtype fp8
)
if [ "$DRY_RUN" = 1 ]; then
  printf '%q ' vllm serve "$MODEL" "${ARGS[@]}" "$@"; echo
  exit 0
fi
# API_KEY (optional): vLLM then answers only requests with "Authorization: Bearer $API_KEY".
if [ -n "${API_KEY:-}" ]; then export VLLM_API_KEY="$API_KEY"; fi
exec vllm serve "$MODEL" "${ARGS[@]}" "$@"
