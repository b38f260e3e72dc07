#!/usr/bin/env bash
# GPU node check for qwen7b-chat-api: driver, CUDA, NCCL, GPU count and model, topology, erdma devices.
# Expected: 1 x L20-48GB per node (ecs.gn8is.4xlarge). Exit 1 when a check fails.
# Usage: ./gpu-check.sh            (prints a report; cloud-init runs it at first boot)
set -uo pipefail

EXPECTED_GPUS=1
EXPECTED_GPU=L20
MIN_DRIVER_MAJOR=570
CHECK_RDMA=0
failures=0

ok()   { printf 'ok    %s\n' "$*"; }
warn() { printf 'warn  %s\n' "$*"; }
fail() { printf 'FAIL  %s\n' "$*"; failures=$((failures + 1)); }

echo "== NVIDIA 驱动"
if ! command -v nvidia-smi >/dev/null 2>&1; then
  fail "未找到 nvidia-smi：请安装 GPU 驱动（选择预装驱动的镜像，或从 NVIDIA 官网安装）"
else
  driver="$(nvidia-smi --query-gpu=driver_version --format=csv,noheader 2>/dev/null | head -n 1)"
  if [ -z "$driver" ]; then
    fail "nvidia-smi 无法与驱动通信"
  elif [ "${driver%%.*}" -lt "$MIN_DRIVER_MAJOR" ]; then
    fail "驱动 $driver 低于 $MIN_DRIVER_MAJOR.x"
  else
    ok "驱动 $driver"
  fi
  cuda="$(nvidia-smi 2>/dev/null | sed -n 's/.*CUDA Version: *\([0-9.]*\).*/\1/p' | head -n 1)"
  if [ -n "$cuda" ]; then ok "驱动支持 CUDA $cuda"; else warn "驱动未报告 CUDA 版本"; fi

  echo "== GPUs"
  count="$(nvidia-smi --query-gpu=name --format=csv,noheader 2>/dev/null | wc -l)"
  name="$(nvidia-smi --query-gpu=name --format=csv,noheader 2>/dev/null | head -n 1)"
  if [ "$count" -eq "$EXPECTED_GPUS" ]; then ok "$count 张 GPU: $name"; else fail "$count 张 GPU，应为 $EXPECTED_GPUS 张"; fi
  case "$name" in
    *"$EXPECTED_GPU"*) ok "型号与计划的 $EXPECTED_GPU 一致" ;;
    *) warn "GPU 型号 '$name' 与计划的 $EXPECTED_GPU 不一致" ;;
  esac
  echo "== 拓扑（nvidia-smi topo -m）"
  nvidia-smi topo -m 2>/dev/null || warn "nvidia-smi topo -m 执行失败"
fi

echo "== CUDA 工具包"
if command -v nvcc >/dev/null 2>&1; then
  ok "$(nvcc --version | tail -n 1)"
else
  warn "未安装 nvcc（运行 PyTorch wheel 不需要它，wheel 自带 CUDA 运行时）"
fi

echo "== NCCL"
if command -v python3 >/dev/null 2>&1 && python3 -c 'import torch' >/dev/null 2>&1; then
  ok "PyTorch $(python3 -c 'import torch; print(torch.__version__, "NCCL", ".".join(map(str, torch.cuda.nccl.version())))' 2>/dev/null)"
elif ldconfig -p 2>/dev/null | grep -q libnccl; then
  ok "$(ldconfig -p | grep -m 1 libnccl)"
else
  warn "容器外未找到 NCCL（PyTorch wheel 和 NGC 镜像已自带）"
fi

if [ "$CHECK_RDMA" -eq 1 ]; then
  echo "== RDMA 设备（erdma）"
  if [ -d /sys/class/infiniband ] && [ -n "$(ls -A /sys/class/infiniband 2>/dev/null)" ]; then
    ok "RDMA devices: $(find /sys/class/infiniband -mindepth 1 -maxdepth 1 -printf '%f ')"
    if command -v ibv_devinfo >/dev/null 2>&1; then ibv_devinfo -l || true; fi
  else
    fail "/sys/class/infiniband 下没有 RDMA 设备：请为实例绑定弹性 RDMA 网卡（ERI）并安装 eRDMA 驱动（https://help.aliyun.com/zh/ecs/user-guide/on-the-gpu-instance-configuration-erdma）"
  fi
fi

echo
if [ "$failures" -gt 0 ]; then
  echo "gpu-check：$failures 项检查未通过"
  exit 1
fi
echo "gpu-check：全部检查通过"
