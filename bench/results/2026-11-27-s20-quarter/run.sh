#!/usr/bin/env bash
# Run O (issue 16): run M's protocol (bench/results/2026-11-27-graph-defaults/run.sh) at SCALE 20
# and 1/4 of the datastore, which no per-edge system finished in the 150 s of the 2026-11-26
# matrix: pheap with a graph datastore's defaults (no PHEAP_* variable set) against the
# kernel-mmap backend with MADV_RANDOM, interleaved rounds, each run in its own v1 cgroup of the
# budget + 32 MiB, 900 s per run. Labels: O-defaults-rN, O-mmap-random-rN.
# Usage: bench/results/2026-11-27-s20-quarter/run.sh SCALE MODE ROUNDS [DATASTORE_BYTES]
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
RUN_OUT="$here/construct.csv" RUN_LABEL=O RUN_TIMEOUT=${RUN_TIMEOUT:-900} \
  exec "$here/../2026-11-27-graph-defaults/run.sh" "$@"
