#!/usr/bin/env bash
# Node bootstrap for flux-schnell-images (ecs.gn7e-c16g1.4xlarge), run once by cloud-init on first boot.
# Installs, at the versions pinned in gpuplan's data/ops.yaml (node_bootstrap):
#   container runtime (docker.io), NVIDIA Container Toolkit 1.17.8-1,
#   NVIDIA driver 570.133.20 + CUDA 12.8.1 + cuDNN 9.8.0.87 with Alibaba Cloud's
#   auto-install script (it reboots the node when done; gpuplan-node-ready.service then runs gpu-check.sh).
# Log: /var/log/gpuplan-bootstrap.log. Safe to run again: each step is skipped when already done.
set -euo pipefail
exec >>/var/log/gpuplan-bootstrap.log 2>&1
echo "== gpuplan bootstrap $(date -u +%FT%TZ)"

DRIVER_VERSION=570.133.20
CUDA_VERSION=12.8.1
CUDNN_VERSION=9.8.0.87
NCT_VERSION=1.17.8-1

if command -v apt-get >/dev/null 2>&1; then PM=apt; else PM=dnf; fi

# 1. Container runtime + NVIDIA Container Toolkit (NVIDIA's install guide, pinned version).
if ! command -v docker >/dev/null 2>&1; then
  if [ "$PM" = apt ]; then apt-get update -q && DEBIAN_FRONTEND=noninteractive apt-get install -y -q docker.io
  else dnf install -y docker; fi
  systemctl enable --now docker
fi
# Images and containers on the data disk, not the system disk: the bundle's image (FROM the node environment's base,
# tens of GB) is counted in the data disk's scratch space.
if mountpoint -q /mnt/data && [ ! -f /etc/docker/daemon.json ]; then
  mkdir -p /mnt/data/docker /etc/docker
  printf '{"data-root": "%s"}\n' /mnt/data/docker > /etc/docker/daemon.json
  systemctl restart docker
fi
if ! command -v nvidia-ctk >/dev/null 2>&1; then
  # The NVIDIA Container Toolkit repository for this region (data/environments.yaml nvidia_container_toolkit_repo:
  # Alibaba's mirror of NVIDIA's repository in mainland regions, NVIDIA's own elsewhere).
  NCT_REPO=https://mirrors.aliyun.com/libnvidia-container
  if [ "$PM" = apt ]; then
    curl -fsSL "$NCT_REPO/gpgkey" | gpg --dearmor --yes -o /usr/share/keyrings/nvidia-container-toolkit-keyring.gpg
    # NVIDIA's list file, written here: apt expands $(ARCH).
    echo "deb [signed-by=/usr/share/keyrings/nvidia-container-toolkit-keyring.gpg] $NCT_REPO/stable/deb/\$(ARCH) /" \
      > /etc/apt/sources.list.d/nvidia-container-toolkit.list
    apt-get update -q
    DEBIAN_FRONTEND=noninteractive apt-get install -y -q "nvidia-container-toolkit=$NCT_VERSION" "nvidia-container-toolkit-base=$NCT_VERSION" "libnvidia-container-tools=$NCT_VERSION" "libnvidia-container1=$NCT_VERSION"
  else
    # NVIDIA's .repo file, written here: dnf expands $basearch (kept literal on purpose).
    # shellcheck disable=SC2016
    printf '[nvidia-container-toolkit]\nname=nvidia-container-toolkit\nbaseurl=%s/stable/rpm/$basearch\nrepo_gpgcheck=1\ngpgcheck=0\nenabled=1\ngpgkey=%s/gpgkey\n' \
      "$NCT_REPO" "$NCT_REPO" > /etc/yum.repos.d/nvidia-container-toolkit.repo
    dnf install -y "nvidia-container-toolkit-${NCT_VERSION}" "nvidia-container-toolkit-base-${NCT_VERSION}" "libnvidia-container-tools-${NCT_VERSION}" "libnvidia-container1-${NCT_VERSION}"
  fi
  nvidia-ctk runtime configure --runtime=docker
  systemctl restart docker
fi

# 3. NVIDIA driver, CUDA and cuDNN: Alibaba Cloud's auto-install script from the region's internal source.
if nvidia-smi >/dev/null 2>&1; then
  echo "driver present: $(nvidia-smi --query-gpu=driver_version --format=csv,noheader | head -n 1)"
  exit 0
fi
INSTALL_DIR=/root/auto_install
mkdir -p "$INSTALL_DIR" && cd "$INSTALL_DIR"
SOURCE=$(curl -fsS http://100.100.100.200/latest/meta-data/source-address | head -n 1)
if ! wget -q -t 10 --timeout=10 "$SOURCE/opsx/ecs/linux/binary/script/auto_install_v4.0.sh" -O auto_install_v4.0.sh; then
  echo "gpuplan: could not download auto_install_v4.0.sh from $SOURCE; install driver $DRIVER_VERSION by hand (PLAN.md)"
  exit 1
fi
# Arguments: driver, CUDA, cuDNN, IS_INSTALL_RDMA, IS_INSTALL_eRDMA. The script reboots the node when done.
bash auto_install_v4.0.sh "$DRIVER_VERSION" "$CUDA_VERSION" "$CUDNN_VERSION" FALSE FALSE
