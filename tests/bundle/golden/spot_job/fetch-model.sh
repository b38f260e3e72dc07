#!/usr/bin/env bash
# Download the model's weights once into MODEL_DIR, inside the region, before anything loads them; say how long it took.
# Every launcher and server of this bundle then loads MODEL_DIR (a local path), never a hub.
# Sources, first that is set:
#   MODEL_MIRROR  a directory holding <id>/ copies of models (ModelScope id, else Hugging Face id): weights staged
#                 once on NAS/CPFS, or the rehearsal's stand-in for ModelScope (./launch.sh --smoke)
#   MODEL_OSS     oss://bucket/prefix holding the model's files (ossutil over the VPC-internal OSS endpoint: the fastest)
#   ModelScope    MODELSCOPE_ID (default Qwen/Qwen2.5-14B-Instruct: ms-swift's model registry)
#
# cn-hangzhou is a mainland region: no Hugging Face here (it is not reliably reachable from mainland nodes).
# PLAN.md times this download at 100 Mbit/s: 39.4min for 30 GB.
# Run again: a finished download ($MODEL_DIR/.gpuplan-complete) is not repeated. Several nodes or pods sharing MODEL_DIR
# (NAS/CPFS): one downloads (lock $MODEL_DIR.lock, refreshed every 30 s while it runs), the others wait for it; a lock
# left by a download that was killed or rebooted (not refreshed for FETCH_STALE_S s) is taken over.
# ./fetch-model.sh --source-id prints the id it downloads.
set -euo pipefail

DEFAULT_MODEL=Qwen/Qwen2.5-14B-Instruct
MODEL="${MODEL:-$DEFAULT_MODEL}"
MODELSCOPE_ID="${MODELSCOPE_ID:-Qwen/Qwen2.5-14B-Instruct}"
MODEL_DIR="${MODEL_DIR:-/mnt/data/models/qwen14b-qlora-spot}"
MODEL_HUB="${MODEL_HUB:-modelscope}"
MODEL_OSS="${MODEL_OSS:-}"
MODEL_MIRROR="${MODEL_MIRROR:-}"
WAIT_S="${FETCH_WAIT_S:-5326}"
STALE_S="${FETCH_STALE_S:-300}"
MARKER="$MODEL_DIR/.gpuplan-complete"
PARTIAL="$MODEL_DIR/.gpuplan-partial"   # a download under way, or one that stopped before its end

source_id() {
  if [ "$MODEL_HUB" = modelscope ]; then echo "$MODELSCOPE_ID"; else echo "$MODEL"; fi
}
if [ "${1:-}" = "--source-id" ]; then source_id; exit 0; fi

case "$MODEL" in
  /*|./*) echo "fetch-model.sh: MODEL is a local path ($MODEL): nothing to download"; exit 0;;
esac
if [ -f "$MARKER" ]; then
  echo "fetch-model.sh: $MODEL is already in $MODEL_DIR"
  exit 0
fi
if [ -d "$MODEL_DIR" ] && [ ! -w "$MODEL_DIR" ] && { [ -f "$MODEL_DIR/config.json" ] || [ -f "$MODEL_DIR/model_index.json" ]; }; then
  echo "fetch-model.sh: using the read-only copy in $MODEL_DIR"
  exit 0
fi
if [ -d "$MODEL_DIR" ] && [ ! -e "$PARTIAL" ] && [ ! -d "$MODEL_DIR.lock" ] \
    && { [ -f "$MODEL_DIR/config.json" ] || [ -f "$MODEL_DIR/model_index.json" ]; }; then
  echo "fetch-model.sh: using the copy already in $MODEL_DIR (placed there by hand: no download of this script left it)"
  exit 0
fi
if [ "$MODEL_HUB" != modelscope ] && [ -z "$MODEL_OSS$MODEL_MIRROR" ]; then
  echo "fetch-model.sh: cn-hangzhou is a mainland region: weights come from ModelScope (MODEL_HUB=modelscope) or your OSS bucket (MODEL_OSS), not $MODEL_HUB" >&2
  exit 2
fi
if [ -z "$MODEL_OSS$MODEL_MIRROR" ] && [ "$MODEL_HUB" = modelscope ] && [ -z "$MODELSCOPE_ID" ]; then
  echo "fetch-model.sh: no ModelScope id is known for $MODEL; set MODELSCOPE_ID=<its ModelScope id>, or MODEL_OSS=oss://<bucket>/<prefix> with your copy of the weights" >&2
  exit 2
fi

# One download per MODEL_DIR: the first to create the lock downloads, the others wait for its marker. mkdir is atomic
# on NFS too (NAS mounts with nolock: no flock across nodes); the owner refreshes the lock's time while it runs.
mkdir -p "$(dirname "$MODEL_DIR")"
waited=0
until mkdir "$MODEL_DIR.lock" 2>/dev/null; do
  if [ -f "$MARKER" ]; then echo "fetch-model.sh: $MODEL is already in $MODEL_DIR"; exit 0; fi
  age=$(( $(date +%s) - $(stat -c %Y "$MODEL_DIR.lock" 2>/dev/null || date +%s) ))
  if [ "$age" -ge "$STALE_S" ]; then
    echo "fetch-model.sh: $MODEL_DIR.lock was not refreshed for $age s (its download was killed or its node restarted): taking it over" >&2
    rm -rf "$MODEL_DIR.lock"
    continue
  fi
  if [ "$waited" -ge "$WAIT_S" ]; then
    echo "fetch-model.sh: $MODEL_DIR.lock held for $WAIT_S s; remove it if no other node or pod is downloading" >&2
    exit 1
  fi
  sleep 10
  waited=$((waited + 10))
done
# refresh the lock while this script lives (the loop ends with it, even when it is killed)
( parent=$$; while kill -0 "$parent" 2>/dev/null; do touch "$MODEL_DIR.lock" 2>/dev/null || exit 0; sleep 30; done ) </dev/null >/dev/null 2>&1 &
heartbeat=$!
trap 'kill "$heartbeat" 2>/dev/null || true; rm -rf "$MODEL_DIR.lock" 2>/dev/null || true' EXIT
if [ -f "$MARKER" ]; then   # another node or pod finished while this one waited
  echo "fetch-model.sh: $MODEL is already in $MODEL_DIR"
  exit 0
fi
mkdir -p "$MODEL_DIR"
touch "$PARTIAL"
start=$(date +%s)

pip_install() {
  python3 -m pip install -q -i https://mirrors.aliyun.com/pypi/simple/ --trusted-host mirrors.aliyun.com "$@"
}

from_mirror() {
  local id
  for id in "$MODELSCOPE_ID" "$MODEL"; do
    if [ -n "$id" ] && [ -d "$MODEL_MIRROR/$id" ]; then
      cp -a "$MODEL_MIRROR/$id/." "$MODEL_DIR/"
      return 0
    fi
  done
  echo "fetch-model.sh: $MODEL_MIRROR holds neither $MODELSCOPE_ID nor $MODEL" >&2
  return 1
}

# OSS: ossutil 1.x reads no credentials or endpoint by itself. Every call names the region's VPC-internal endpoint and
# the instance's RAM role (STS credentials from the instance metadata, no key on the node): the Terraform
# attaches the role qwen14b-qlora-spot-node to every node. OSS_ROLE names another role; an empty OSS_ROLE uses your ossutil
# config file (`ossutil config`) instead.
OSS_ENDPOINT="${OSS_ENDPOINT:-oss-cn-hangzhou-internal.aliyuncs.com}"
OSS_ROLE="${OSS_ROLE-qwen14b-qlora-spot-node}"
oss() {
  if [ -n "$OSS_ROLE" ]; then
    ossutil "$@" -e "$OSS_ENDPOINT" --mode EcsRamRole --ecs-role-name "$OSS_ROLE"
  else
    ossutil "$@" -e "$OSS_ENDPOINT"
  fi
}

from_oss() {
  command -v ossutil >/dev/null 2>&1 || { echo "fetch-model.sh: MODEL_OSS is set but ossutil is not installed (https://www.alibabacloud.com/help/en/oss/developer-reference/ossutil)" >&2; return 1; }
  oss cp -r -f --jobs 16 "${MODEL_OSS%/}/" "$MODEL_DIR/"
}

# Formats no engine here loads, which some repos ship beside the weights (Meta's original/consolidated.*.pth: a second
# copy of a Llama checkpoint; GGUF, ONNX, OpenVINO, TensorFlow and Flax exports): left out of the download.
SKIP=('original/*' '*.gguf' 'onnx/*' '*.onnx' '*.onnx_data' 'openvino/*' '*.h5' '*.msgpack')

from_modelscope() {
  command -v modelscope >/dev/null 2>&1 || pip_install modelscope==1.34.0
  modelscope download --model "$MODELSCOPE_ID" --local_dir "$MODEL_DIR" --exclude "${SKIP[@]}"
}

if [ -n "$MODEL_MIRROR" ]; then
  from_mirror
elif [ -n "$MODEL_OSS" ]; then
  from_oss
else
  from_modelscope
fi
rm -f "$PARTIAL"   # the download returned (a failure stops the script above and leaves the partial marker)
if [ -z "$(ls -A "$MODEL_DIR")" ]; then
  echo "fetch-model.sh: nothing was downloaded into $MODEL_DIR" >&2
  exit 1
fi

touch "$MARKER"
seconds=$(( $(date +%s) - start ))
megabytes=$(( $(du -sk "$MODEL_DIR" | cut -f1) / 1024 ))
echo "fetch-model.sh: $megabytes MB in $seconds s into $MODEL_DIR"
