#!/usr/bin/env bash
# Needs a build whose kCameBackTurns is read from PHEAP_EXP_HOT (an experiment, not committed: command.txt).
# A/B of the experimental hot counter: PHEAP_EXP_HOT=0 (today) vs N, S18 1/4, per edge.
set -euo pipefail
cd /work/main
out=$1; rounds=$2; shift 2
A=(--scale 18 --threads 2 --page-sizes 4096 --modes quarter --timeout 400 --slack-mib 32
   --dir /tmp --buffer auto --csv "$out" --datastore-bytes 135847936)
bin=build/bench/graph/graph_construct_bench
for r in $(seq 1 "$rounds"); do
  for h in "$@"; do
    PHEAP_EXP_HOT=$h "$bin" "${A[@]}" --systems uffd --label "H$h-r$r" | tail -1 | cut -c1-200
  done
  [ -n "${NO_MMR:-}" ] || "$bin" "${A[@]}" --systems mmap-random --label "mmr-r$r" | tail -1 | cut -c1-200
done
