#!/usr/bin/env bash
# FSDP alternative for llama8b-full-2node: Hugging Face accelerate with accelerate-fsdp.yaml
# (sharding FULL_SHARD, bf16 mixed precision, activation checkpointing true).
# Multi-node: on every node, NODE_RANK=<0..1> MASTER_ADDR=<private IP of node 0> ./launch-fsdp.sh
# https://huggingface.co/docs/accelerate/usage_guides/fsdp
set -euo pipefail
cd "$(dirname "$0")"

MODEL=meta-llama/Llama-3.1-8B
NODE_RANK="${NODE_RANK:-0}"
MASTER_ADDR="${MASTER_ADDR:-127.0.0.1}"
MASTER_PORT="${MASTER_PORT:-29500}"
TRAIN_SCRIPT="${TRAIN_SCRIPT:-train.py}"
OUTPUT_DIR="${OUTPUT_DIR:-/mnt/shared/checkpoints/llama8b-full-2node}"
SAVE_STEPS="${SAVE_STEPS:-266}"
RESUME_FROM="${RESUME_FROM:-}"
export MAX_SEQ_LENGTH="${MAX_SEQ_LENGTH:-2048}"
if [ "$MASTER_ADDR" = "127.0.0.1" ]; then
  echo "launch-fsdp.sh: set MASTER_ADDR to the private IP of node 0 (and NODE_RANK on each node)" >&2
  exit 2
fi
if [ -f nccl.env ]; then
  set -a
  # shellcheck disable=SC1091
  . ./nccl.env
  set +a
fi
mkdir -p "$OUTPUT_DIR"
ARGS=(
  --model_name_or_path "$MODEL"
  --output_dir "$OUTPUT_DIR"
  --per_device_train_batch_size 2
  --gradient_accumulation_steps 4
  --bf16 true
  --save_strategy steps
  --save_steps "$SAVE_STEPS"
  --logging_steps 10
)
if [ -n "$RESUME_FROM" ]; then
  ARGS+=(--resume_from_checkpoint "$RESUME_FROM")
fi
exec accelerate launch --config_file accelerate-fsdp.yaml \
  --machine_rank "$NODE_RANK" --main_process_ip "$MASTER_ADDR" --main_process_port "$MASTER_PORT" \
  "$TRAIN_SCRIPT" "${ARGS[@]}" "$@"
