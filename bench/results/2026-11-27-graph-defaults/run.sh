#!/usr/bin/env bash
# Run M (issue 16): pheap with a graph datastore's defaults (pheap::graph::datastore_options:
# fills on the faulting thread, fault_fill automatic; no PHEAP_* variable set) against the
# kernel-mmap backend with MADV_RANDOM, interleaved rounds, each run in its own v1 cgroup of the
# budget + 32 MiB (graph_construct_bench's own). Labels: M-defaults-rN, M-mmap-random-rN.
# Usage: bench/results/2026-11-27-graph-defaults/run.sh SCALE MODE ROUNDS [DATASTORE_BYTES]
# (RUN_OUT and RUN_LABEL, when set, replace this run's CSV and its label letter: later runs that
# repeat run M's protocol on another build, e.g. run N, call this script with them; RUN_TIMEOUT
# replaces the 400 s per run, e.g. run O's SCALE 20 at 1/4.)
set -euo pipefail
cd "$(dirname "$0")/../../.."
scale=$1 mode=$2 rounds=$3 ds=${4:-}
out=${RUN_OUT:-bench/results/2026-11-27-graph-defaults/construct.csv} L=${RUN_LABEL:-M}
A=(--scale "$scale" --threads 2 --page-sizes 4096 --modes "$mode" --timeout "${RUN_TIMEOUT:-400}" --slack-mib 32
   --dir /tmp --buffer auto --csv "$out")
[ -n "$ds" ] && A+=(--datastore-bytes "$ds")
bin=build/bench/graph/graph_construct_bench
unset PHEAP_FAULT_FILL
for r in $(seq 1 "$rounds"); do
  "$bin" "${A[@]}" --systems uffd --label "$L-defaults-r$r" | tail -1
  [ "$mode" = incore ] || "$bin" "${A[@]}" --systems mmap-random --label "$L-mmap-random-r$r" | tail -1
done
