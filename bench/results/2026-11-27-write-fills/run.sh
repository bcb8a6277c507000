#!/usr/bin/env bash
# Run Q (issue 16): run M's protocol (bench/results/2026-11-27-graph-defaults/run.sh) on a build
# where a faulting-thread fill for a write is mapped writable (the signal frame's page fault
# error code says it was a write) instead of write-protected and then write-protect-faulted:
# pheap with a graph datastore's defaults (no PHEAP_* variable set) against the kernel-mmap
# backend with MADV_RANDOM, interleaved rounds, each run in its own v1 cgroup of the budget +
# 32 MiB. Labels: Q-defaults-rN, Q-mmap-random-rN.
# Usage: bench/results/2026-11-27-write-fills/run.sh SCALE MODE ROUNDS [DATASTORE_BYTES]
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
RUN_OUT="$here/construct.csv" RUN_LABEL=Q exec "$here/../2026-11-27-graph-defaults/run.sh" "$@"
