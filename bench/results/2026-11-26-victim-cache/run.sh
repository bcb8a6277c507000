#!/usr/bin/env bash
# Run H (issue 16): the victim cache on (the pager's default under a memory cgroup) against
# PHEAP_VICTIM_CACHE=off and the kernel-mmap backend with MADV_RANDOM, interleaved rounds,
# each run in its own v1 cgroup of the budget + 32 MiB (graph_construct_bench's own).
# Usage: bench/results/2026-11-26-victim-cache/run.sh SCALE MODE ROUNDS DATASTORE_BYTES
set -euo pipefail
cd "$(dirname "$0")/../../.."
scale=$1 mode=$2 rounds=$3 ds=$4
out=bench/results/2026-11-26-victim-cache/construct.csv
B=(build/bench/graph/graph_construct_bench --scale "$scale" --threads 2 --page-sizes 4096
   --modes "$mode" --timeout 240 --slack-mib 32 --dir /tmp --datastore-bytes "$ds" --buffer auto --csv "$out")
for r in $(seq 1 "$rounds"); do
  "${B[@]}" --systems uffd --label "h-vc-on-r$r" | tail -1
  PHEAP_VICTIM_CACHE=off "${B[@]}" --systems uffd --label "h-vc-off-r$r" | tail -1
  "${B[@]}" --systems mmap-random --label "h-mmap-random-r$r" | tail -1
done
