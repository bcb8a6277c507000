#!/usr/bin/env bash
# A fault-driven cold BFS (issue 47): the SCALE-20 graph (472 MiB of pages with data) read through
# a 128 MiB buffer, so manager::prefetch_all covers only the start of the heap and the walk reads
# the rest as it goes (random: R-MAT lists in BFS order). Page cache dropped before each run.
# Every process runs in one memory cgroup v1 limited to LIMIT (the buffer plus what the
# process holds besides: the index, levels, parents), so the kernel-mmap rows get the same
# memory as the pager's buffer. Forms, alternating in each round:
#   before      the pager before the cold-read work (OLD_TOOL, 671f42c), O_DIRECT, on OLD_DS: the
#               same graph ingested by OLD_TOOL (it reads format 3 only; the others read DATASTORE,
#               format 4, ingested by NEW_TOOL)
#   look-ahead  LA_TOOL (d09d09c): 4 threads look up the next 256 frontier vertices, O_DIRECT
#   now-direct  NEW_TOOL, PHEAP_READ_ONLY_CACHE=off (O_DIRECT): the walk reads each list where
#               the index found it and asks for the next 1024 lists itself
#   now         NEW_TOOL, default read-only open (through the page cache)
#   mmap        NEW_TOOL, PHEAP_BACKEND=mmap on MMAP_DS (default advice), in the cgroup
#   mmap-random the same with PHEAP_MMAP_ADVICE=random
# /sys/block/DEV/inflight is sampled every 2 ms. Output beside this script (or in $OUT): bfs.csv,
# inflight-*-r1.csv (first round), pager-*.log (PHEAP_DEBUG's counters).
#   run.sh OLD_TOOL OLD_DS LA_TOOL NEW_TOOL DATASTORE MMAP_DS SOURCE LIMIT_MIB [ROUNDS]
set -euo pipefail
old=$1 ods=$2 la=$3 new=$4 ds=$5 mds=$6 src=$7 limit=$8 rounds=${9:-3}
out=${OUT:-$(cd "$(dirname "$0")" && pwd)}
[ "$(id -u)" = 0 ] || { echo "run.sh: needs root (drop_caches, memory cgroup)" >&2; exit 2; }
dev=$(basename "$(df --output=source "$ds" | tail -1)")
[ -e "/sys/block/$dev/stat" ] || dev=$(basename "$(readlink -f "/sys/class/block/$dev/..")")
cg=/sys/fs/cgroup/memory/pheap-random-bfs-$$
mkdir "$cg"
cleanup() { echo $$ >/sys/fs/cgroup/memory/cgroup.procs 2>/dev/null || true; rmdir "$cg" 2>/dev/null || true; }
trap cleanup EXIT
echo $((limit << 20)) >"$cg/memory.limit_in_bytes"
echo $$ >"$cg/cgroup.procs"
echo "round,system,wall_s,faults,pages_read,evictions,device_reads,device_mb,avg_inflight,max_inflight,cgroup_max_mib" >"$out/bfs.csv"
run() {  # run ROUND NAME DATASTORE TOOL [ENV...]
  local r=$1 name=$2 d=$3 tool=$4; shift 4
  sync; echo 3 >/proc/sys/vm/drop_caches
  echo 0 >"$cg/memory.max_usage_in_bytes"
  local s0; s0=$(cat /sys/block/$dev/stat)
  local samples=$out/inflight-$name-r$r.csv
  ( while :; do echo "$(date +%s.%N),$(awk '{print $1}' /sys/block/$dev/inflight)"; sleep 0.002; done ) >"$samples" &
  local sp=$!
  local t0; t0=$(date +%s.%N)
  env "$@" PHEAP_DEBUG=1 "$tool" bfs --datastore "$d" --source "$src" --buffer-size 128M >/dev/null 2>"$out/pager-$name-r$r.log"
  local t1; t1=$(date +%s.%N)
  kill $sp; wait $sp 2>/dev/null || true
  local s1; s1=$(cat /sys/block/$dev/stat)
  local reads mb faults pages ev avg mx peak
  reads=$(( $(echo "$s1" | awk '{print $1}') - $(echo "$s0" | awk '{print $1}') ))
  mb=$(awk -v a="$(echo "$s0" | awk '{print $3}')" -v b="$(echo "$s1" | awk '{print $3}')" 'BEGIN{printf "%.1f", (b-a)*512/1e6}')
  faults=$(grep -o 'faults: read [0-9]*' "$out/pager-$name-r$r.log" | grep -o '[0-9]*$' || true)
  pages=$(grep -o 'store [0-9]*' "$out/pager-$name-r$r.log" | head -1 | grep -o '[0-9]*$' || true)
  ev=$(grep -o 'evictions [0-9]*' "$out/pager-$name-r$r.log" | head -1 | grep -o '[0-9]*$' || true)
  read -r avg mx < <(awk -F, '{s+=$2; n++; if ($2>m) m=$2} END {printf "%.2f %d\n", (n? s/n : 0), m}' "$samples")
  peak=$(( $(cat "$cg/memory.max_usage_in_bytes") >> 20 ))
  [ "$r" = 1 ] || rm -f "$samples"
  echo "$r,$name,$(awk -v a="$t0" -v b="$t1" 'BEGIN{printf "%.3f", b-a}'),$faults,$pages,$ev,$reads,$mb,$avg,$mx,$peak" | tee -a "$out/bfs.csv"
}
for r in $(seq 1 "$rounds"); do
  run "$r" before "$ods" "$old" PHEAP_X=1
  run "$r" look-ahead "$ds" "$la" PHEAP_READ_ONLY_CACHE=off
  run "$r" now-direct "$ds" "$new" PHEAP_READ_ONLY_CACHE=off
  run "$r" now "$ds" "$new" PHEAP_X=1
  run "$r" mmap "$mds" "$new" PHEAP_BACKEND=mmap
  run "$r" mmap-random "$mds" "$new" PHEAP_BACKEND=mmap PHEAP_MMAP_ADVICE=random
done
