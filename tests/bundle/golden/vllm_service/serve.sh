#!/usr/bin/env bash
# vLLM OpenAI-compatible server for qwen7b-chat-api on 1 x L20-48GB (ecs.gn8is.4xlarge).
# Every engine setting below is the one the estimate used (https://docs.vllm.ai/en/latest/configuration/engine_args.html).
# It runs in the bundle's image (Dockerfile; vLLM from requirements-serve.txt over modelscope:ubuntu22.04-cuda12.8.1-py311-torch2.10.0-vllm0.17.1-modelscope1.34.0-swift4.0.3):
#   docker run --gpus all --ipc=host --network host -v /mnt/data:/mnt/data <image> bash /opt/gpuplan/serve.sh
# ./serve.sh --dry-run prints the command (and checks MODEL) without starting anything.
set -euo pipefail

DRY_RUN=0
if [ "${1:-}" = "--dry-run" ]; then DRY_RUN=1; shift; fi
DEFAULT_MODEL=Qwen/Qwen2.5-7B-Instruct
MODEL="${MODEL:-$DEFAULT_MODEL}"
SERVED_MODEL_NAME="${SERVED_MODEL_NAME:-qwen7b-chat-api}"
HOST="${HOST:-0.0.0.0}"
PORT="${PORT:-8000}"
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
  printf '%q ' vllm serve "$SERVE_PATH" "${ARGS[@]}" "$@"; echo
  exit 0
fi
# API_KEY (optional): vLLM then answers only requests with "Authorization: Bearer $API_KEY".
if [ -n "${API_KEY:-}" ]; then export VLLM_API_KEY="$API_KEY"; fi
exec vllm serve "$SERVE_PATH" "${ARGS[@]}" "$@"
