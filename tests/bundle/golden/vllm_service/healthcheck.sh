#!/usr/bin/env bash
# Health check for the qwen7b-chat-api service: exit 0 when the server answers /health and lists the model.
# Use it from a load balancer, `systemctl`, cron or a Kubernetes exec probe.
set -euo pipefail

PORT="${PORT:-8000}"
SERVED_MODEL_NAME="${SERVED_MODEL_NAME:-qwen7b-chat-api}"
BASE="http://127.0.0.1:${PORT}"

if ! curl -fsS --max-time 5 "$BASE/health" >/dev/null; then
  echo "不健康：$BASE/health 无响应" >&2
  exit 1
fi
models() {
  if [ -n "${API_KEY:-}" ]; then
    # the key reaches curl on stdin (its config, -K -), not on its command line, where any user's ps would show it
    local key="${API_KEY//\\/\\\\}"
    key="${key//\"/\\\"}"
    printf 'header = "Authorization: Bearer %s"\n' "$key" | curl -fsS --max-time 5 -K - "$BASE/v1/models"
  else
    curl -fsS --max-time 5 "$BASE/v1/models"
  fi
}
if ! models | grep -q "\"$SERVED_MODEL_NAME\""; then
  echo "不健康：$BASE/v1/models 未列出 $SERVED_MODEL_NAME" >&2
  exit 1
fi
echo "健康：$SERVED_MODEL_NAME 在端口 $PORT 上正常服务"
