#!/usr/bin/env bash
# Run W's per-page-size points (issue 16: "plots: arcs/s per page size"): pheap (graph
# datastore defaults, buffer sized from the cgroup) at 4, 16 and 64 KiB pages, in core and at
# 1/2 and 1/4 of the S18 datastore (run M's 135847936 bytes, so the budgets are run M's), and
# the kernel-mmap backend with MADV_RANDOM (4 KiB) at the same budgets, one round, one cgroup
# of the budget + 32 MiB per run (graph_construct_bench's own), 300 s per run.
# Usage: bench/results/2026-11-28-pagesize/run.sh [BUILD]
set -euo pipefail
cd "$(dirname "$0")/../../.."
b=${1:-build}/bench/graph/graph_construct_bench
out=bench/results/2026-11-28-pagesize/pagesize.csv
A=(--scale 18 --threads 2 --timeout 300 --slack-mib 32 --dir /tmp --buffer auto
   --datastore-bytes 135847936 --csv "$out")
unset PHEAP_FAULT_FILL
"$b" "${A[@]}" --systems uffd --page-sizes 4096,16384,65536 --modes incore,half,quarter --label W-pagesize
"$b" "${A[@]}" --systems mmap-random --page-sizes 4096 --modes half,quarter --label W-pagesize
