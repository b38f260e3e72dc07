#!/usr/bin/env bash
# ms-swift alternative for the QLORA job qwen14b-qlora-spot (https://github.com/modelscope/ms-swift).
# Reads data/train.jsonl (set DATA to another JSONL file or a ModelScope/Hugging Face dataset id).
# ms-swift 4.x flag names (`--tuner_type`; 3.x called it `--train_type`).
# Multi-node: on every node, NODE_RANK=<0..0> MASTER_ADDR=<private IP of node 0> ./swift-sft.sh
set -euo pipefail
cd "$(dirname "$0")"

DEFAULT_MODEL=Qwen/Qwen2.5-14B-Instruct
MODEL="${MODEL:-$DEFAULT_MODEL}"
MODEL_DIR="${MODEL_DIR:-/mnt/data/models/qwen14b-qlora-spot}"
DATASET="${DATA:-data/train.jsonl}"
OUTPUT_DIR="${OUTPUT_DIR:-/mnt/data/checkpoints/qwen14b-qlora-spot}"
SAVE_STEPS="${SAVE_STEPS:-456}"
SAVE_TOTAL_LIMIT="${SAVE_TOTAL_LIMIT:-2}"
MAX_STEPS="${MAX_STEPS:-24415}"   # the planned run
RESUME_FROM="${RESUME_FROM:-}"
export NNODES="${NNODES:-1}"
export NODE_RANK="${NODE_RANK:-0}"
export MASTER_ADDR="${MASTER_ADDR:-127.0.0.1}"
export MASTER_PORT="${MASTER_PORT:-29500}"
export NPROC_PER_NODE="${NPROC_PER_NODE:-1}"
# The weights once, in the region (fetch-model.sh), then the local copy.
case "$MODEL" in
  /*|./*) ;;
  *) MODEL="$MODEL" MODEL_DIR="$MODEL_DIR" ./fetch-model.sh; MODEL="$MODEL_DIR";;
esac
export HF_HUB_OFFLINE=1 TRANSFORMERS_OFFLINE=1
ARGS=(
  --model "$MODEL"
  --tuner_type lora
  --lora_rank 8
  --lora_alpha 16
  --lora_dropout 0.05
  --lora_dtype float32
  --target_modules all-linear
  --torch_dtype bfloat16
  --per_device_train_batch_size 1
  --gradient_accumulation_steps 1
  --max_length 2048
  --gradient_checkpointing true
  --optim adamw_torch
  --dataset "$DATASET"
  --output_dir "$OUTPUT_DIR"
  --save_steps "$SAVE_STEPS"
  --save_total_limit "$SAVE_TOTAL_LIMIT"
  --num_train_epochs 1
  --max_steps "$MAX_STEPS"
  --quant_method bnb
  --quant_bits 4
)
if [ -n "$RESUME_FROM" ]; then
  ARGS+=(--resume_from_checkpoint "$RESUME_FROM")
fi
exec swift sft "${ARGS[@]}" "$@"
