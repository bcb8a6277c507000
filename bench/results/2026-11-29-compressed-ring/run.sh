#!/usr/bin/env bash
# Run AG (issue 16): a compressed victim ring (rejected). BUILD_DIR: the build of a tree at
# 51a5c08 (the run's; the patch applies to later commits too) with compressed-ring.patch applied
# (git apply compressed-ring.patch; cmake -S . -B build -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo;
# ninja -C build bench/graph/graph_construct_bench). PHEAP_EXP_PACKED is the ring's share of the automatic
# buffer in thousandths (unset or 0: no ring, the pager as committed), PHEAP_EXP_PACKED_LEVEL
# zstd's level. S18 at 1/4 per edge, this pager only, interleaved, each run in its own v1
# cgroup of the budget + 32 MiB (graph_construct_bench's own).
# Usage: bench/results/2026-11-29-compressed-ring/run.sh BUILD_DIR ROUNDS OUT.csv [PERMILLE...]
set -euo pipefail
build=$1 rounds=$2 out=$3; shift 3
A=(--scale 18 --threads 2 --page-sizes 4096 --modes quarter --timeout 400 --slack-mib 32
   --dir /tmp --buffer auto --csv "$out" --datastore-bytes 135847936 --systems uffd)
unset PHEAP_FAULT_FILL PHEAP_EXP_PACKED PHEAP_EXP_PACKED_LEVEL
for r in $(seq 1 "$rounds"); do
  for pm in 0 "$@"; do
    PHEAP_EXP_PACKED=$pm PHEAP_EXP_PACKED_LEVEL=-1 "$build/bench/graph/graph_construct_bench" "${A[@]}" \
      --label "AG-ring$pm-r$r" | tail -1
  done
done
