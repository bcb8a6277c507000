#!/usr/bin/env bash
# Runs J and K (issue 16): this build against an older one (OLD_BUILD) and the kernel-mmap
# backend with MADV_RANDOM, interleaved rounds, each run in its own v1 cgroup of the budget +
# 32 MiB (graph_construct_bench's own). Labels: TAG-new-rN, TAG-old-rN, TAG-mmap-random-rN.
#   run J: OLD_BUILD = main at 7c46bd4 (fault workers in poll(): every worker woken per fault),
#          build/ = fault workers in epoll with EPOLLEXCLUSIVE; TAG=j, CSV construct-j.csv
#   run K: the same OLD_BUILD, build/ = also victims taking their neighbours (runs); TAG=k
# Usage: OLD_BUILD=DIR TAG=t bench/results/2026-11-26-worker-wakeups-and-runs/run.sh SCALE MODE ROUNDS DATASTORE_BYTES
set -euo pipefail
cd "$(dirname "$0")/../../.."
scale=$1 mode=$2 rounds=$3 ds=$4
out=bench/results/2026-11-26-worker-wakeups-and-runs/construct-$TAG.csv
A=(--scale "$scale" --threads 2 --page-sizes 4096 --modes "$mode" --timeout 300 --slack-mib 32
   --dir /tmp --datastore-bytes "$ds" --buffer auto --csv "$out")
for r in $(seq 1 "$rounds"); do
  build/bench/graph/graph_construct_bench "${A[@]}" --systems uffd --label "$TAG-new-r$r" | tail -1
  "$OLD_BUILD"/bench/graph/graph_construct_bench "${A[@]}" --systems uffd --label "$TAG-old-r$r" | tail -1
  build/bench/graph/graph_construct_bench "${A[@]}" --systems mmap-random --label "$TAG-mmap-random-r$r" | tail -1
done
