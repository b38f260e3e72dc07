#!/usr/bin/env bash
# Health check for the qwen7b-chat-api service: exit 0 when the server answers /health and lists the model.
# Use it from a load balancer, `systemctl`, cron or a Kubernetes exec probe.
set -euo pipefail

PORT="${PORT:-8000}"
SERVED_MODEL_NAME="${SERVED_MODEL_NAME:-qwen7b-chat-api}"
BASE="http://127.0.0.1:${PORT}"

if ! curl -fsS --max-time 5 "$BASE/health" >/dev/null; then
  echo "unhealthy: $BASE/health did not answer" >&2
  exit 1
fi
if ! curl -fsS --max-time 5 "$BASE/v1/models" | grep -q "\"$SERVED_MODEL_NAME\""; then
  echo "unhealthy: $BASE/v1/models does not list $SERVED_MODEL_NAME" >&2
  exit 1
fi
echo "healthy: $SERVED_MODEL_NAME on port $PORT"
