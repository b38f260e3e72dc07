#!/usr/bin/env bash
# Optional cost guard for qwen14b-qlora-spot: power the node off when every GPU has been under
# IDLE_UTIL_PERCENT utilisation for IDLE_MINUTES in a row (the GpuIdle alert's condition, acted on
# locally: no cloud credentials needed). Off unless IDLE_STOP_ENABLED=1. A stopped pay-as-you-go
# instance in economical mode stops GPU billing:
# https://www.alibabacloud.com/help/en/elastic-compute-service/latest/economical-mode
# Run it from cron every minute:  * * * * * root IDLE_STOP_ENABLED=1 /opt/gpuplan/qwen14b-qlora-spot/idle-stop.sh
set -euo pipefail

IDLE_STOP_ENABLED="${IDLE_STOP_ENABLED:-0}"
IDLE_UTIL_PERCENT="${IDLE_UTIL_PERCENT:-10}"
IDLE_MINUTES="${IDLE_MINUTES:-30}"
STATE_FILE="${STATE_FILE:-/var/tmp/gpuplan-idle-minutes}"

[ "$IDLE_STOP_ENABLED" = "1" ] || exit 0
# While the unit starts (the image build, the weights' download, the model's load) the GPUs idle by design: that time
# is not counted, or a slow first start (a long image pull and download) would power the node off before the job runs.
if [ "$(systemctl is-active gpuplan-qwen14b-qlora-spot.service 2>/dev/null || true)" = "activating" ]; then
  echo 0 > "$STATE_FILE"
  exit 0
fi
busiest="$(nvidia-smi --query-gpu=utilization.gpu --format=csv,noheader,nounits | sort -n | tail -n 1)"
idle=0
[ -f "$STATE_FILE" ] && idle="$(cat "$STATE_FILE")"
if [ "${busiest:-100}" -lt "$IDLE_UTIL_PERCENT" ]; then idle=$((idle + 1)); else idle=0; fi
echo "$idle" > "$STATE_FILE"
if [ "$idle" -ge "$IDLE_MINUTES" ]; then
  logger -t gpuplan-idle-stop "GPUs idle for $idle minutes: powering off"
  rm -f "$STATE_FILE"
  systemctl poweroff
fi
