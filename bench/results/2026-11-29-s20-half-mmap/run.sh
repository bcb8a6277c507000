#!/usr/bin/env bash
# Run AD (issue 16, the "≥ 5x default-advice mmap" target at SCALE 20, 1/2): pheap with a graph
# datastore's defaults per edge, then the kernel-mmap backend with default advice (Metall's way),
# each in its own v1 cgroup of the budget + 32 MiB (graph_construct_bench's own), one round.
# The mmap run gets a time limit of 700 s, over 5x pheap's time at this point in runs M and AA,
# so that "did not finish" is itself a lower bound of over 5x.
# Usage: bench/results/2026-11-29-s20-half-mmap/run.sh [ROUNDS] [MMAP_TIMEOUT_S]
set -euo pipefail
cd "$(dirname "$0")/../../.."
rounds=${1:-1} mt=${2:-700}
out=bench/results/2026-11-29-s20-half-mmap/construct.csv
A=(--scale 20 --threads 2 --page-sizes 4096 --modes half --slack-mib 32 --dir /tmp --buffer auto
   --datastore-bytes 460390400 --csv "$out")
bin=build/bench/graph/graph_construct_bench
unset PHEAP_FAULT_FILL
for r in $(seq 1 "$rounds"); do
  "$bin" "${A[@]}" --timeout 400 --systems uffd --label "AD-defaults-r$r" | tail -1
  "$bin" "${A[@]}" --timeout "$mt" --systems mmap --label "AD-mmap-r$r" | tail -1
done
