#!/usr/bin/env bash
# FSDP alternative for qwen14b-qlora-spot: Hugging Face accelerate with accelerate-fsdp.yaml
# (sharding FULL_SHARD, bf16 mixed precision, activation checkpointing true).
# Multi-node: on every node, NODE_RANK=<0..0> MASTER_ADDR=<private IP of node 0> ./launch-fsdp.sh
# https://huggingface.co/docs/accelerate/usage_guides/fsdp
set -euo pipefail
cd "$(dirname "$0")"

MODEL=Qwen/Qwen2.5-14B-Instruct
NODE_RANK="${NODE_RANK:-0}"
MASTER_ADDR="${MASTER_ADDR:-127.0.0.1}"
MASTER_PORT="${MASTER_PORT:-29500}"
TRAIN_SCRIPT="${TRAIN_SCRIPT:-train.py}"
OUTPUT_DIR="${OUTPUT_DIR:-/mnt/data/checkpoints/qwen14b-qlora-spot}"
SAVE_STEPS="${SAVE_STEPS:-311}"
RESUME_FROM="${RESUME_FROM:-}"
export MAX_SEQ_LENGTH="${MAX_SEQ_LENGTH:-2048}"
mkdir -p "$OUTPUT_DIR"
ARGS=(
  --model_name_or_path "$MODEL"
  --output_dir "$OUTPUT_DIR"
  --per_device_train_batch_size 1
  --gradient_accumulation_steps 1
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
