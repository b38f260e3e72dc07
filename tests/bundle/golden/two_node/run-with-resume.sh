#!/usr/bin/env bash
# Checkpoint/resume wrapper for llama8b-full-2node.
# Runs ./launch.sh, which saves a checkpoint every 270 steps (about every 60 minutes at the
# estimated 13.3 s per step) to CKPT_DIR; on a restart (crash, reboot or a new instance after a
# spot reclaim) it resumes from the newest checkpoint. With CKPT_REMOTE set (an oss:// prefix), each
# checkpoint is copied there with ossutil and fetched back on a fresh instance, with the instance's RAM role (below):
# no credentials are stored in this file.
# Spot notice: https://www.alibabacloud.com/help/en/ecs/user-guide/query-the-interruption-events-of-preemptible-instances
set -uo pipefail
cd "$(dirname "$0")" || exit 1

CKPT_DIR="${CKPT_DIR:-/mnt/shared/checkpoints/llama8b-full-2node}"
CKPT_REMOTE="${CKPT_REMOTE:-}"
MAX_RESTARTS="${MAX_RESTARTS:-20}"
RESTART_DELAY_S="${RESTART_DELAY_S:-30}"
METADATA_URL="${METADATA_URL:-http://100.100.100.200/latest/meta-data/instance/spot/termination-time}"
export OUTPUT_DIR="$CKPT_DIR"
export SAVE_STEPS="${SAVE_STEPS:-270}"
mkdir -p "$CKPT_DIR"

log() { printf '%s run-with-resume: %s\n' "$(date -u +%FT%TZ)" "$*" >&2; }

latest_checkpoint() {
  # train.py writes checkpoint-<step>/ (trainer_state.json last) and resumes from the newest by itself.
  find "$CKPT_DIR" -maxdepth 2 -name trainer_state.json -path '*/checkpoint-*' -printf '%h\n' 2>/dev/null \
    | xargs -r -n1 basename | sort -t- -k2 -n | tail -n 1
}

# OSS: ossutil 1.x reads no credentials or endpoint by itself. Every call names the region's VPC-internal endpoint and
# the instance's RAM role (STS credentials from the instance metadata, no key on the node): the Terraform
# attaches the role llama8b-full-2node-node to every node. OSS_ROLE names another role; an empty OSS_ROLE uses your ossutil
# config file (`ossutil config`) instead.
OSS_ENDPOINT="${OSS_ENDPOINT:-oss-cn-beijing-internal.aliyuncs.com}"
OSS_ROLE="${OSS_ROLE-llama8b-full-2node-node}"
oss() {
  if [ -n "$OSS_ROLE" ]; then
    ossutil "$@" -e "$OSS_ENDPOINT" --mode EcsRamRole --ecs-role-name "$OSS_ROLE"
  else
    ossutil "$@" -e "$OSS_ENDPOINT"
  fi
}

pull_remote() {
  # CKPT_DIR is on the shared file system: rank 0 fetches into it, the other nodes wait for its marker (30 minutes
  # at most) so that no node starts from scratch while rank 0 resumes
  if [ "${NODE_RANK:-0}" != "0" ]; then
    if [ -n "$CKPT_REMOTE" ] && [ -z "$(latest_checkpoint)" ]; then
      for _ in $(seq 1 360); do [ -e "$CKPT_DIR/.gpuplan-pulled" ] && break; sleep 5; done
    fi
    return 0
  fi
  if [ -n "$CKPT_REMOTE" ] && [ -z "$(latest_checkpoint)" ] && command -v ossutil >/dev/null 2>&1; then
    log "fetching checkpoints from $CKPT_REMOTE"
    oss cp -r -u "$CKPT_REMOTE/" "$CKPT_DIR/" || log "could not fetch checkpoints (continuing from scratch)"
  fi
  touch "$CKPT_DIR/.gpuplan-pulled"
}

push_remote() {
  local last
  # one copy to OSS: the shared checkpoint is the same on every node, rank 0 uploads it
  [ "${NODE_RANK:-0}" = "0" ] || return 0
  last="$(latest_checkpoint)"
  if [ -n "$CKPT_REMOTE" ] && [ -n "$last" ] && command -v ossutil >/dev/null 2>&1; then
    oss cp -r -u "$CKPT_DIR/$last/" "$CKPT_REMOTE/$last/" || log "could not upload $last"
  fi
}

watch_spot() {
  # Poll the instance metadata for a spot interruption notice; on notice, upload the newest checkpoint.
  local nap=""
  trap 'if [ -n "$nap" ]; then kill "$nap" 2>/dev/null; fi; exit 0' TERM
  while :; do
    sleep 5 &
    nap=$!
    wait "$nap"
    if curl -fs --max-time 2 "$METADATA_URL" >/dev/null 2>&1; then
      log "spot interruption notice received: uploading the newest checkpoint"
      push_remote
      return 0
    fi
  done
}

attempt=0
while :; do
  pull_remote
  last="$(latest_checkpoint)"
  if [ -n "$last" ]; then
    export RESUME_FROM="$CKPT_DIR/$last"
    log "resuming from $RESUME_FROM"
  else
    unset RESUME_FROM
  fi
  watch_spot &
  watcher=$!
  ./launch.sh "$@"
  rc=$?
  kill "$watcher" 2>/dev/null || true
  push_remote
  if [ "$rc" -eq 0 ]; then
    log "training finished"
    exit 0
  fi
  attempt=$((attempt + 1))
  if [ "$attempt" -gt "$MAX_RESTARTS" ]; then
    log "giving up after $MAX_RESTARTS restarts (last exit status $rc)"
    exit "$rc"
  fi
  log "launch.sh exited with $rc; restart $attempt of $MAX_RESTARTS in $RESTART_DELAY_S s"
  sleep "$RESTART_DELAY_S"
done
