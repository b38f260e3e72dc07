#!/usr/bin/env bash
# Install what the tests need (pip extras, Debian packages) when it is missing, then run ruff, and mypy beside
# the tests on every core. Used as-is by .ci/run and by the README's second set-up command.
#   bash scripts/test.sh                     everything (ruff, mypy, pytest -n auto)
#   bash scripts/test.sh tests/cli -k ask    pytest arguments are passed on (the checks still run first)
#   GPUPLAN_TEST_WORKERS=1 bash scripts/test.sh   one process (pytest-xdist's -n; default: auto = one per core)
set -euo pipefail
cd "$(dirname "$0")/.."

if [ -z "${VIRTUAL_ENV:-}" ]; then
  [ -x .venv/bin/python ] || python3 -m venv .venv
  # shellcheck disable=SC1091
  . .venv/bin/activate
fi
EXTRAS="dev,test,trace,aliyun,doctor,web"
# torch first, pinned to the CPU build this machine keeps on disk: an unpinned `torch` would pull a
# multi-GB CUDA build. Without it the exact-mode (--trace) and benchmark-path tests are skipped.
TORCH="torch==2.13.0"
# Nothing is installed twice: pip (which asks the package index about every requirement, ~20 s even when all are
# there) runs only when scripts/deps_ok.py finds something missing or out of date.
if ! python scripts/deps_ok.py ${EXTRAS//,/ } --req "$TORCH" 2>/dev/null; then
  # an editable install of a pyproject.toml project needs pip >= 21.3
  python - <<'EOF' || python -m pip install -q --upgrade "pip>=21.3"
import sys
from importlib.metadata import version
sys.exit(0 if tuple(int(p) for p in version("pip").split(".")[:2]) >= (21, 3) else 1)
EOF
  # torch and the extras in one pip run (one resolution, one pass over the indexes); without the pinned torch, the
  # extras alone and a warning
  if python -c "import torch, sys; sys.exit(0 if torch.__version__.split('+')[0] == '${TORCH#torch==}' else 1)" 2>/dev/null; then
    python -m pip install -q --no-compile -e ".[$EXTRAS]"
  elif ! python -m pip install -q --no-compile "$TORCH" -e ".[$EXTRAS]"; then
    echo "warning: $TORCH not installable here; trace tests will be skipped"
    python -m pip install -q --no-compile -e ".[$EXTRAS]"
  fi
fi
# --no-compile above: pip byte-compiles every file it installs, one at a time (~50 s for torch and the extras on two
# cores), while the tests import a small part of them. Python compiles what is imported, once, and caches it, unless
# PYTHONDONTWRITEBYTECODE is set (as on this project's machines): unset it here so the cache is written (~10 s).
unset PYTHONDONTWRITEBYTECODE
bash scripts/install-test-tools.sh "$(command -v python)"
# Static checks first (configured in pyproject.toml; see docs/architecture.md, "Checks").
python -m ruff check src tests bench scripts
# gpuplan's own modules byte-compiled once, on every core, before the test processes start (otherwise each worker
# and the first CLI and API processes would compile them at the same time; an editable install is not compiled).
python -m compileall -q -j 0 -x '/render/templates/' src >/dev/null
# mypy (~40 s of CPU on a clean checkout) runs beside the tests, on the CPU the rehearsal smokes leave idle while
# they wait on their processes; its verdict is printed after them and fails the command all the same.
MYPY_LOG="$(mktemp)"
python -m mypy >"$MYPY_LOG" 2>&1 &
MYPY_PID=$!
# One worker per core; worksteal hands the long tests (the rehearsal smokes, minutes each) to idle workers
# instead of leaving them queued behind one busy worker.
WORKERS="${GPUPLAN_TEST_WORKERS:-auto}"
rc=0
python -m pytest -q -p no:cacheprovider -n "$WORKERS" --dist worksteal "$@" || rc=$?
mypy_rc=0
wait "$MYPY_PID" || mypy_rc=$?
cat "$MYPY_LOG"
rm -f "$MYPY_LOG"
if [ "$mypy_rc" != 0 ]; then echo "mypy failed (exit $mypy_rc)" >&2; [ "$rc" != 0 ] || rc=$mypy_rc; fi
exit "$rc"
