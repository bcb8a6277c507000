#!/usr/bin/env bash
# bench/graph/cold_read.sh — reopen + full scan of a persistent graph, cold (page cache dropped)
# and warm (the next job, nothing dropped), pheap against the kernel's mmap path, in one run.
#
#   bench/graph/cold_read.sh [BUILD] [SCALES] [ROUNDS]      (defaults: build "18 20" 3)
#
# Per SCALE: an R-MAT edge list (pheap-graph generate --scramble, untimed), ingested undirected
# twice: by pheap (uffd backend, its defaults) and by the kernel-mmap backend (PHEAP_BACKEND=
# mmap, which leaves the datastore laid out at fixed offsets so that mmap can reopen it). Then,
# per round, per command (stats, bfs from the first edge's source, cc, export to /dev/null):
#   pheap         pheap-graph CMD, uffd backend, defaults (read-only open: scan prefetch,
#                 fault read-ahead, reads through the page cache)
#   pheap-direct  the same with PHEAP_READ_ONLY_CACHE=off (O_DIRECT: every reopen is cold)
#   mmap          PHEAP_BACKEND=mmap: the segment files mapped MAP_SHARED, default advice —
#                 Metall's way (Metall maps its block files the same way; Metall itself is not
#                 installable here, its figures in the issue come from a copy fetched before)
#   mmap-random   the same with PHEAP_MMAP_ADVICE=random (MADV_RANDOM: no fault read-around)
# each cold (sync; echo 3 > drop_caches before it) and warm (run again at once); and per round
# the disk itself: `cat` of a dense file of as many bytes as pheap's datastore holds (pages with
# data), cold, and `dd iflag=direct bs=1M` of it (sequential bandwidth).
# Every process runs in one memory cgroup v1 made for the run (no limit: in core; the same for
# every system), removed at the end. Device bytes and reads are the deltas of
# /sys/block/DEV/stat around each command; during one cold bfs per scale and system,
# /sys/block/DEV/inflight is sampled every 2 ms (reads in flight over time).
#
# Output in bench/results/<date>-cold-read/ (OUT overrides): scan.csv (one row per run),
# summary.csv (medians per scale, command, system, state; ratios to mmap and to cat),
# inflight-<system>-s<SCALE>.csv, pager-s<SCALE>.log (pheap's statistics at close,
# PHEAP_DEBUG=1, cold runs), plots cold-scan.png and inflight-s<SCALE>.png, machine.txt, run.log.
# Needs root (drop_caches, the cgroup). Datastores under BENCH_DIR (default /tmp).
set -euo pipefail

here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../.." && pwd)
build=${1:-$root/build}
scales=${2:-"18 20"}
rounds=${3:-3}
dir=${BENCH_DIR:-/tmp}/pheap-cold-read-$$
out=${OUT:-$root/bench/results/$(date +%Y-%m-%d)-cold-read}
mkdir -p "$out" "$dir"
log() { echo "[$(date +%H:%M:%S)] $*" | tee -a "$out/run.log"; }
. "$root/bench/common.sh"

[ "$(id -u)" = 0 ] || { echo "cold_read.sh: needs root (drop_caches, memory cgroup)" >&2; exit 2; }
tool=$build/bin/pheap-graph
[ -x "$tool" ] || { echo "cold_read.sh: $tool not built (cmake --build $build --target pheap-graph)" >&2; exit 2; }
ensure_gnuplot
machine_info cold-read "$dir"

# The block device under $dir (a partition's parent disk for the stat files).
dev=$(basename "$(df --output=source "$dir" | tail -1)")
[ -e "/sys/block/$dev/stat" ] || dev=$(basename "$(readlink -f "/sys/class/block/$dev/..")")
[ -e "/sys/block/$dev/stat" ] || { echo "cold_read.sh: no /sys/block stat for $dir" >&2; exit 2; }
echo "device: $dev" | tee -a "$out/machine.txt"

cg=/sys/fs/cgroup/memory/pheap-cold-read-$$
mkdir "$cg"
cleanup() {
  rm -rf "$dir"
  # Move ourselves out, then remove the cgroup (its page cache is reparented).
  echo $$ >/sys/fs/cgroup/memory/cgroup.procs 2>/dev/null || true
  rmdir "$cg" 2>/dev/null || true
}
trap cleanup EXIT INT TERM
echo $$ >"$cg/cgroup.procs"

drop() { sync; echo 3 >/proc/sys/vm/drop_caches; }
# sectors read (field 3) and reads completed (field 1) of the device
dev_reads() { awk '{print $1, $3}' "/sys/block/$dev/stat"; }

csv=$out/scan.csv
echo "scale,round,command,system,state,wall_s,user_s,sys_s,device_mb,device_reads,mb_per_s" >"$csv"

# run SCALE ROUND COMMAND SYSTEM STATE -- argv...: one timed run, one CSV row.
run() {
  local scale=$1 rnd=$2 cmd=$3 sys=$4 state=$5
  shift 6
  local before after tf=$dir/time.txt r0 s0 r1 s1 wall user stime
  before=$(dev_reads)
  /usr/bin/time -o "$tf" -f "%e %U %S" "$@" >/dev/null 2>>"$out/cmd.log"
  after=$(dev_reads)
  read -r r0 s0 <<<"$before"
  read -r r1 s1 <<<"$after"
  read -r wall user stime <"$tf"
  local mb reads rate
  mb=$(awk -v a="$s0" -v b="$s1" 'BEGIN {printf "%.1f", (b - a) * 512 / 1e6}')
  reads=$((r1 - r0))
  rate=$(awk -v m="$mb" -v w="$wall" 'BEGIN {printf "%.0f", (w > 0 ? m / w : 0)}')
  echo "$scale,$rnd,$cmd,$sys,$state,$wall,$user,$stime,$mb,$reads,$rate" >>"$csv"
  log "  S$scale r$rnd $cmd $sys $state: ${wall} s, $mb MB read in $reads requests"
}

# sample_inflight FILE PID: reads in flight every 2 ms while PID lives.
sample_inflight() {
  local file=$1 pid=$2 t0
  t0=$(date +%s%N)
  echo "ms,reads_in_flight" >"$file"
  while kill -0 "$pid" 2>/dev/null; do
    echo "$((($(date +%s%N) - t0) / 1000000)),$(awk '{print $1}' "/sys/block/$dev/inflight")" >>"$file"
    sleep 0.002
  done
}

for s in $scales; do
  log "SCALE $s: generate, ingest (pheap, mmap)"
  "$tool" generate --scale "$s" --scramble --output "$dir/edges-$s.txt" --quiet
  "$tool" ingest --undirected --datastore "$dir/uffd-$s" "$dir/edges-$s.txt" --quiet 2>>"$out/cmd.log"
  PHEAP_BACKEND=mmap "$tool" ingest --undirected --datastore "$dir/mmap-$s" "$dir/edges-$s.txt" --quiet 2>>"$out/cmd.log"
  src=$(head -1 "$dir/edges-$s.txt" | cut -d' ' -f1)
  live=$("$build/bin/pheap" info --json "$dir/uffd-$s" | python3 -c 'import json,sys; print(json.load(sys.stdin)["live_bytes"])')
  # A dense file of the same bytes (written, so its blocks are on the disk).
  dd if=/dev/urandom of="$dir/dense-$s" bs=1M count=$(((live + (1 << 20) - 1) >> 20)) status=none
  sync
  log "  live data $((live >> 20)) MiB; bfs source $src"
  for ((rnd = 1; rnd <= rounds; ++rnd)); do
    drop
    run "$s" "$rnd" cat disk cold -- cat "$dir/dense-$s"
    drop
    run "$s" "$rnd" dd disk cold -- dd if="$dir/dense-$s" of=/dev/null bs=1M iflag=direct status=none
    for cmd in stats bfs cc export; do
      args=("$cmd")
      case $cmd in
        bfs) args+=(--source "$src") ;;
        export) args+=(--output /dev/null) ;;
      esac
      for sys in pheap pheap-direct mmap mmap-random; do
        case $sys in
          pheap) env=(env) ds=$dir/uffd-$s ;;
          pheap-direct) env=(env PHEAP_READ_ONLY_CACHE=off) ds=$dir/uffd-$s ;;
          mmap) env=(env PHEAP_BACKEND=mmap) ds=$dir/mmap-$s ;;
          mmap-random) env=(env PHEAP_BACKEND=mmap PHEAP_MMAP_ADVICE=random) ds=$dir/mmap-$s ;;
        esac
        drop
        if [ "$sys" = pheap ] && [ "$rnd" = 1 ]; then
          { echo "== S$s $cmd cold"; PHEAP_DEBUG=1 "$tool" "${args[@]}" --datastore "$ds" 2>&1 >/dev/null | grep 'at close'; } >>"$out/pager-s$s.log"
          drop
        fi
        if [ "$cmd" = bfs ] && [ "$rnd" = 1 ]; then
          "${env[@]}" "$tool" "${args[@]}" --datastore "$ds" >/dev/null 2>>"$out/cmd.log" &
          sample_inflight "$out/inflight-$sys-s$s.csv" $!
          wait
          drop
        fi
        run "$s" "$rnd" "$cmd" "$sys" cold -- "${env[@]}" "$tool" "${args[@]}" --datastore "$ds"
        run "$s" "$rnd" "$cmd" "$sys" warm -- "${env[@]}" "$tool" "${args[@]}" --datastore "$ds"
      done
    done
  done
  rm -rf "$dir/uffd-$s" "$dir/mmap-$s" "$dir/dense-$s" "$dir/edges-$s.txt"
done
load_after

python3 "$here/cold_read_summary.py" "$csv" "$out/summary.csv" | tee -a "$out/run.log"

if command -v gnuplot >/dev/null 2>&1; then
  for s in $scales; do
    gnuplot <<EOF 2>>"$out/run.log" || log "gnuplot failed (inflight-s$s)"
set terminal pngcairo size 900,450
set output "$out/inflight-s$s.png"
set datafile separator ","
set title "Device reads in flight during a cold pheap-graph bfs, SCALE $s (sampled every 2 ms)"
set xlabel "ms since start"; set ylabel "reads in flight"
plot for [sys in "pheap pheap-direct mmap mmap-random"] "$out/inflight-".sys."-s$s.csv" using 1:2 every ::1 with steps title sys
EOF
  done
  # One file per system: "SCALE command,median wall s" per cold row.
  for sys in pheap pheap-direct mmap mmap-random; do
    awk -F, -v s="$sys" 'NR > 1 && $4 == "cold" && $3 == s {print $1 " " $2 "," $5}' \
      "$out/summary.csv" >"$out/cold-$sys.dat"
  done
  gnuplot <<EOF 2>>"$out/run.log" || log "gnuplot failed (cold-scan)"
set terminal pngcairo size 1000,480
set output "$out/cold-scan.png"
set datafile separator ","
set style data histogram; set style histogram cluster gap 1; set style fill solid border -1
set title "Cold reopen + full scan (median wall s), page cache dropped"
set ylabel "s"; set xtics rotate by -30; set key left top
plot for [sys in "pheap pheap-direct mmap mmap-random"] "$out/cold-".sys.".dat" using 2:xtic(1) title sys
EOF
fi
log "done: $out"
