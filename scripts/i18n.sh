#!/usr/bin/env bash
# Message catalogs (Babel): extract every marked msgid, merge into the Chinese catalog, compile.
#   scripts/i18n.sh          extract + update + compile (after changing user-facing text)
#   scripts/i18n.sh compile  compile only (the build step; the test suite checks .mo == compiled .po)
set -euo pipefail
cd "$(dirname "$0")/.."
PY="${PYTHON:-python}"
command -v "$PY" >/dev/null 2>&1 || PY=.venv/bin/python
LOC=src/gpuplan/locale
export PYTHONPATH="$PWD/src${PYTHONPATH:+:$PYTHONPATH}"
if [ "${1:-}" != "compile" ]; then
  "$PY" -m babel.messages.frontend extract -F babel.cfg -k tr -k _ -k N_ --no-location --sort-output \
    --project gpuplan --copyright-holder "gpuplan developers" -o "$LOC/gpuplan.pot" src
  "$PY" -m babel.messages.frontend update -w 120 -i "$LOC/gpuplan.pot" -d "$LOC" -D gpuplan -l zh_CN --no-fuzzy-matching --ignore-obsolete
fi
"$PY" -m babel.messages.frontend compile -d "$LOC" -D gpuplan -l zh_CN --statistics
