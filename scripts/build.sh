#!/usr/bin/env bash
# Configures and builds one build tree.
# Usage: scripts/build.sh DIR [--target TARGET] [extra cmake args...]
# (everything without --target; with it, TARGET and what it depends on).
set -euo pipefail
cd "$(dirname "$0")/.."
dir=$1; shift
target=()
if [ "${1:-}" = --target ]; then target=(--target "$2"); shift 2; fi
cmake -S . -B "$dir" -G Ninja "$@" >/dev/null
cmake --build "$dir" -j"$(nproc)" "${target[@]}"
