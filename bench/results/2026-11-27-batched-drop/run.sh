#!/usr/bin/env bash
# Run P (issue 16): run M's protocol (bench/results/2026-11-27-graph-defaults/run.sh) on a build
# where the copies a fill takes from the victim cache are dropped by the evictor, all of a
# batch's with one process_madvise, instead of by the faulting thread with a madvise each:
# pheap with a graph datastore's defaults (no PHEAP_* variable set) against the kernel-mmap
# backend with MADV_RANDOM, interleaved rounds, each run in its own v1 cgroup of the budget +
# 32 MiB. Labels: P-defaults-rN, P-mmap-random-rN.
# Usage: bench/results/2026-11-27-batched-drop/run.sh SCALE MODE ROUNDS [DATASTORE_BYTES]
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
RUN_OUT="$here/construct.csv" RUN_LABEL=P exec "$here/../2026-11-27-graph-defaults/run.sh" "$@"
