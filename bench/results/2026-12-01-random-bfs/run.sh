#!/usr/bin/env bash
# inflight-*-r1.csv: the first round's 2 ms samples of /sys/block/DEV/inflight (rounds 2-3 not kept).
# A fault-driven cold BFS: the SCALE-20 graph (513 MiB of pages with data) read through a
# 128 MiB buffer, so manager::prefetch_all covers only the start of the heap and the walk
# faults for the rest (random: R-MAT lists in BFS order). Page cache dropped before each run,
# O_DIRECT (the pager before the cold-read work always read so; the tree now with
# PHEAP_READ_ONLY_CACHE=off, and with its default buffered read-only open as a third row).
# The pager before (671f42c) and this tree alternate, ROUNDS times. /sys/block/DEV/inflight is
# sampled every 2 ms during each run. Output beside this script (or in $OUT): bfs.csv, inflight-*.csv.
#   run.sh OLD_TOOL NEW_TOOL DATASTORE SOURCE [ROUNDS]
set -euo pipefail
old=$1 new=$2 ds=$3 src=$4 rounds=${5:-3}
out=${OUT:-$(cd "$(dirname "$0")" && pwd)}  # OUT: another results folder
dev=$(basename "$(df --output=source "$ds" | tail -1)")
[ -e "/sys/block/$dev/stat" ] || dev=$(basename "$(readlink -f "/sys/class/block/$dev/..")")
echo "round,system,wall_s,faults,pages_read,evictions,device_reads,device_mb,avg_inflight,max_inflight" >"$out/bfs.csv"
run() {  # run ROUND NAME ENV... -- TOOL
  local r=$1 name=$2; shift 2
  local envs=()
  while [ "$1" != "--" ]; do envs+=("$1"); shift; done
  shift
  local tool=$1
  sync; echo 3 >/proc/sys/vm/drop_caches
  local s0; s0=$(cat /sys/block/$dev/stat)
  local samples=$out/inflight-$name-r$r.csv
  ( while :; do echo "$(date +%s.%N),$(awk '{print $1}' /sys/block/$dev/inflight)"; sleep 0.002; done ) >"$samples" &
  local sp=$!
  local t0; t0=$(date +%s.%N)
  env "${envs[@]}" PHEAP_DEBUG=1 "$tool" bfs --datastore "$ds" --source "$src" --buffer-size 128M >/dev/null 2>"$out/pager-$name-r$r.log"
  local t1; t1=$(date +%s.%N)
  kill $sp; wait $sp 2>/dev/null || true
  local s1; s1=$(cat /sys/block/$dev/stat)
  local reads mb
  reads=$(( $(echo "$s1" | awk '{print $1}') - $(echo "$s0" | awk '{print $1}') ))
  mb=$(awk -v a="$(echo "$s0" | awk '{print $3}')" -v b="$(echo "$s1" | awk '{print $3}')" 'BEGIN{printf "%.1f", (b-a)*512/1e6}')
  local faults pages ev
  faults=$(grep -o 'faults: read [0-9]*' "$out/pager-$name-r$r.log" | grep -o '[0-9]*$' || true)
  pages=$(grep -o 'store [0-9]*' "$out/pager-$name-r$r.log" | head -1 | grep -o '[0-9]*$' || true)
  ev=$(grep -o 'evictions [0-9]*' "$out/pager-$name-r$r.log" | head -1 | grep -o '[0-9]*$' || true)
  local avg mx
  read -r avg mx < <(awk -F, '{s+=$2; n++; if ($2>m) m=$2} END {printf "%.2f %d\n", (n? s/n : 0), m}' "$samples")
  echo "$r,$name,$(awk -v a="$t0" -v b="$t1" 'BEGIN{printf "%.3f", b-a}'),$faults,$pages,$ev,$reads,$mb,$avg,$mx" | tee -a "$out/bfs.csv"
}
for r in $(seq 1 "$rounds"); do
  run "$r" before PHEAP_X=1 -- "$old"
  run "$r" now-direct PHEAP_READ_ONLY_CACHE=off -- "$new"
  run "$r" now PHEAP_X=1 -- "$new"
done
