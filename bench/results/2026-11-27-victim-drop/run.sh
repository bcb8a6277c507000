#!/usr/bin/env bash
# Run N (issue 16): run M's protocol (bench/results/2026-11-27-graph-defaults/run.sh) on a build
# of fe23054, where a fill that takes a page's kept copy from the victim cache drops it: pheap
# with a graph datastore's defaults (no PHEAP_* variable set) against the kernel-mmap backend
# with MADV_RANDOM, interleaved rounds, each run in its own v1 cgroup of the budget + 32 MiB
# (graph_construct_bench's own). Labels: N-defaults-rN, N-mmap-random-rN.
# Usage: bench/results/2026-11-27-victim-drop/run.sh SCALE MODE ROUNDS [DATASTORE_BYTES]
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
RUN_OUT="$here/construct.csv" RUN_LABEL=N exec "$here/../2026-11-27-graph-defaults/run.sh" "$@"
