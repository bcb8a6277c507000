#!/usr/bin/env bash
# Run AG, first part: how S18's time and store reads fall with memory just above a quarter.
# Run M's protocol (pheap with its defaults, then mmap-random, each in its own v1 cgroup of the
# budget + 32 MiB) at "quarter" of a datastore_bytes raised 1.2x and 1.4x, so the budget is
# 1.2x and 1.4x S18's quarter (40.8 and 47.5 MB instead of 34.0 MB).
set -euo pipefail
cd "$(dirname "$0")/../../.."
for f in 1.4 1.2; do
  ds=$(python3 -c "print(int(135847936*$f))")
  RUN_OUT=bench/results/2026-11-29-compressed-ring/budget-steps.csv RUN_LABEL=EST$f RUN_TIMEOUT=400 \
    bench/results/2026-11-27-graph-defaults/run.sh 18 quarter 1 "$ds"
done
