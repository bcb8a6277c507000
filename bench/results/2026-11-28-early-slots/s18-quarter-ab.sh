#!/usr/bin/env bash
# Run U at S18 1/4 (issue 16): run M's protocol (bench/results/2026-11-27-graph-defaults/run.sh),
# with the build before the change (OLD_BUILD, 3de7dfd) run first in each round, at the same
# arguments: labels UN-old, then UN-defaults-r1 and UN-mmap-random-r1 from run.sh (N the round).
#   s18-quarter-ab.sh OLD_BUILD ROUNDS
set -euo pipefail
cd "$(dirname "$0")/../../.."
old=$1 rounds=$2
out=bench/results/2026-11-28-early-slots/s18-quarter.csv
for r in $(seq 1 "$rounds"); do
  "$old/bench/graph/graph_construct_bench" --scale 18 --threads 2 --page-sizes 4096 --modes quarter \
    --timeout 400 --slack-mib 32 --dir /tmp --buffer auto --csv "$out" --datastore-bytes 135847936 \
    --systems uffd --label "U$r-old" | tail -1
  RUN_OUT=$out RUN_LABEL=U$r RUN_TIMEOUT=400 bench/results/2026-11-27-graph-defaults/run.sh 18 quarter 1 135847936
done
