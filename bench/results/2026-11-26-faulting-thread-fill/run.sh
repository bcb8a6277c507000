#!/usr/bin/env bash
# Run L (issue 16): fills on the faulting thread (PHEAP_FAULT_FILL=faulting_thread) against the
# fault workers (the default) on the same build, and the kernel-mmap backend with MADV_RANDOM;
# interleaved rounds, each run in its own v1 cgroup of the budget + 32 MiB (graph_construct_bench's
# own). Labels: L-thread-rN, L-workers-rN, L-mmap-random-rN.
# Usage: bench/results/2026-11-26-faulting-thread-fill/run.sh SCALE MODE ROUNDS [DATASTORE_BYTES]
#   (DATASTORE_BYTES: the final datastore size that sets the budget; measured by the bench when
#   omitted)
set -euo pipefail
cd "$(dirname "$0")/../../.."
scale=$1 mode=$2 rounds=$3 ds=${4:-}
out=bench/results/2026-11-26-faulting-thread-fill/construct.csv
A=(--scale "$scale" --threads 2 --page-sizes 4096 --modes "$mode" --timeout 300 --slack-mib 32
   --dir /tmp --buffer auto --csv "$out")
[ -n "$ds" ] && A+=(--datastore-bytes "$ds")
bin=build/bench/graph/graph_construct_bench
for r in $(seq 1 "$rounds"); do
  PHEAP_FAULT_FILL=faulting_thread "$bin" "${A[@]}" --systems uffd --label "L-thread-r$r" | tail -1
  PHEAP_FAULT_FILL=workers "$bin" "${A[@]}" --systems uffd --label "L-workers-r$r" | tail -1
  [ "$mode" = incore ] || "$bin" "${A[@]}" --systems mmap-random --label "L-mmap-random-r$r" | tail -1
done
