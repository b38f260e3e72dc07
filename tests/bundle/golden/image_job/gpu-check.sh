#!/usr/bin/env bash
# GPU node check for flux-schnell-images: driver, CUDA, NCCL, GPU count and model, topology.
# Expected: 1 x A100-SXM4-80GB per node (ecs.gn7e-c16g1.4xlarge). Exit 1 when a check fails.
# Usage: ./gpu-check.sh            (prints a report; cloud-init runs it at first boot)
set -uo pipefail

EXPECTED_GPUS=1
EXPECTED_GPU=A100
MIN_DRIVER_MAJOR=570
failures=0

ok()   { printf 'ok    %s\n' "$*"; }
warn() { printf 'warn  %s\n' "$*"; }
fail() { printf 'FAIL  %s\n' "$*"; failures=$((failures + 1)); }

echo "== NVIDIA driver"
if ! command -v nvidia-smi >/dev/null 2>&1; then
  fail "nvidia-smi not found: install the GPU driver (choose an image with the driver, or install it from NVIDIA)"
else
  driver="$(nvidia-smi --query-gpu=driver_version --format=csv,noheader 2>/dev/null | head -n 1)"
  if [ -z "$driver" ]; then
    fail "nvidia-smi cannot talk to the driver"
  elif [ "${driver%%.*}" -lt "$MIN_DRIVER_MAJOR" ]; then
    fail "driver $driver is older than $MIN_DRIVER_MAJOR.x"
  else
    ok "driver $driver"
  fi
  cuda="$(nvidia-smi 2>/dev/null | sed -n 's/.*CUDA Version: *\([0-9.]*\).*/\1/p' | head -n 1)"
  if [ -n "$cuda" ]; then ok "driver supports CUDA $cuda"; else warn "CUDA version not reported"; fi

  echo "== GPUs"
  count="$(nvidia-smi --query-gpu=name --format=csv,noheader 2>/dev/null | wc -l)"
  name="$(nvidia-smi --query-gpu=name --format=csv,noheader 2>/dev/null | head -n 1)"
  if [ "$count" -eq "$EXPECTED_GPUS" ]; then ok "$count GPU(s): $name"; else fail "$count GPU(s), expected $EXPECTED_GPUS"; fi
  case "$name" in
    *"$EXPECTED_GPU"*) ok "model matches $EXPECTED_GPU" ;;
    *) warn "GPU model '$name' differs from the planned $EXPECTED_GPU" ;;
  esac
  echo "== Topology (nvidia-smi topo -m)"
  nvidia-smi topo -m 2>/dev/null || warn "nvidia-smi topo -m failed"
fi

echo "== CUDA toolkit"
if command -v nvcc >/dev/null 2>&1; then
  ok "$(nvcc --version | tail -n 1)"
else
  warn "nvcc not installed (not needed to run PyTorch wheels, which bundle the CUDA runtime)"
fi

echo "== NCCL"
if command -v python3 >/dev/null 2>&1 && python3 -c 'import torch' >/dev/null 2>&1; then
  ok "PyTorch $(python3 -c 'import torch; print(torch.__version__, "NCCL", ".".join(map(str, torch.cuda.nccl.version())))' 2>/dev/null)"
elif ldconfig -p 2>/dev/null | grep -q libnccl; then
  ok "$(ldconfig -p | grep -m 1 libnccl)"
else
  warn "no NCCL found outside containers (PyTorch wheels and NGC images bundle it)"
fi


echo
if [ "$failures" -gt 0 ]; then
  echo "gpu-check: $failures check(s) failed"
  exit 1
fi
echo "gpu-check: all checks passed"
