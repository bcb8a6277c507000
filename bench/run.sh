#!/usr/bin/env bash
# bench/run.sh quick|full — runs the benchmark suite in one go, writes CSVs and PNG plots to
# bench/results/<date>/ (see bench/README.md).
#
#   quick  < 10 min on the 2-core dev VM: construction at SCALE 16-18 in core (1 and 2 threads),
#          a page-size sweep (4 KiB-1 MiB, best of 2) at SCALE 17, out of core (1/4 and 1/8
#          budgets) at SCALE 16 with 4 and 64 KiB pages and a 20 s timeout; persist, fault and
#          alloc benches with small sizes.
#   full   hours: SCALE 16-22 in core (best of 3), 16-20 out of core (timeout 300 s, 4 KiB-1 MiB
#          pages), plus 1-thread out of core at SCALE 18.
#
# Environment: BUILD (default build-bench), BENCH_DIR (datastores; default /tmp),
# JOBS (build parallelism, default 2), OUT (results directory override).
# Out-of-core runs need root for the memory cgroup v1 (/sys/fs/cgroup/memory); without it they
# run unconfined and say so in the CSV note column.
set -euo pipefail

suite=${1:-quick}
case "$suite" in quick|full) ;; *) echo "usage: $0 quick|full" >&2; exit 2 ;; esac

here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/.." && pwd)
build=${BUILD:-$root/build-bench}
dir=${BENCH_DIR:-/tmp}
jobs=${JOBS:-2}
out=${OUT:-$here/results/$(date +%Y-%m-%d)-$suite}
mkdir -p "$out"

log() { echo "[$(date +%H:%M:%S)] $*" | tee -a "$out/run.log"; }
. "$here/common.sh"

# ---- build ---------------------------------------------------------------------------------
bench_build "$jobs" graph_construct_bench persist_bench fault_bench alloc_bench
cb=$build/bench/graph/graph_construct_bench
pb=$build/bench/persist/persist_bench
fb=$build/bench/pager/fault_bench
ab=$build/bench/heap/alloc_bench

# ---- plotting tools (Debian packages) --------------------------------------------------------
ensure_gnuplot

# ---- the machine -----------------------------------------------------------------------------
machine_info "$suite" "$dir"

csv=$out/construct.csv
rm -f "$csv"
run_cb() { log "construct_bench $*"; "$cb" --dir "$dir" --csv "$csv" "$@" >>"$out/construct.log" 2>&1 || log "construct_bench failed ($?)"; }

if [ "$suite" = quick ]; then
  incore_scales="16 17 18"; sweep_scale=17; ooc_scales="16"; reps=1; sweep_reps=2
  pages_all="4096,16384,65536,262144,1048576"; pages_ooc="4096,65536"
  t_in=120; t_ooc=20; disk=8
  persist_sizes="16,64,256"; fault_mib=32; alloc_ops=200000; reopen_gib=1
else
  incore_scales="16 17 18 19 20 21 22"; sweep_scale=20; ooc_scales="16 17 18 19 20"; reps=3; sweep_reps=3
  pages_all="4096,16384,65536,262144,1048576"; pages_ooc=$pages_all
  t_in=900; t_ooc=300; disk=12
  persist_sizes="16,64,256,1024,4096"; fault_mib=256; alloc_ops=2000000; reopen_gib=1,4
fi

# 1. In core: every system, 1 and 2 threads, 64 KiB pages.
for s in $incore_scales; do
  for t in 1 2; do
    run_cb --label incore --scale "$s" --threads "$t" --systems dram,bip,mmap,uffd,uffd-1file \
      --page-sizes 65536 --modes incore --timeout "$t_in" --max-disk-gib "$disk" --reps "$reps"
  done
done
# 2. Page-size sweep in core.
run_cb --label pagesweep --scale "$sweep_scale" --threads 2 --systems mmap,uffd,uffd-1file \
  --page-sizes "$pages_all" --modes incore --timeout "$t_in" --max-disk-gib "$disk" --reps "$sweep_reps"
# 3. Out of core: budget = 1/4 and 1/8 of the final datastore, every system in a memory cgroup.
for s in $ooc_scales; do
  run_cb --label ooc --scale "$s" --threads 2 --systems bip,mmap,mmap-random,uffd,uffd-1file \
    --page-sizes "$pages_ooc" --modes quarter,eighth --timeout "$t_ooc" --max-disk-gib "$disk"
done
if [ "$suite" = full ]; then
  run_cb --label ooc1t --scale 18 --threads 1 --systems bip,mmap,mmap-random,uffd,uffd-1file \
    --page-sizes "$pages_ooc" --modes quarter,eighth --timeout "$t_ooc" --max-disk-gib "$disk"
fi

# 4. Durability costs.
log "persist_bench"
rm -f "$out/persist.csv"
"$pb" --dir "$dir" --csv "$out/persist.csv" --sizes-mib "$persist_sizes" --page-sizes 4096,65536,1048576 \
  >"$out/persist.log" 2>&1 || log "persist_bench failed ($?)"

# 5. Pager faults (bench/pager, the pager engineer's) and allocation throughput (bench/heap).
log "fault_bench --mib $fault_mib"
if timeout 600 "$fb" --dir "$dir" --mib "$fault_mib" >"$out/fault.log" 2>&1; then :; else log "fault_bench failed ($?)"; fi
{ echo "system,page_size,config,pattern,ns_per_4KiB,MB_per_s"; grep '^csv,' "$out/fault.log" | cut -d, -f2- || true; } >"$out/fault.csv"
log "alloc_bench --ops $alloc_ops"
if timeout 600 "$ab" --dir "$dir" --ops "$alloc_ops" --reopen-gib "$reopen_gib" >"$out/alloc.txt" 2>&1; then :; else log "alloc_bench failed ($?)"; fi

load_after

# ---- tables and plots ------------------------------------------------------------------------
python3 "$here/plot.py" "$out" | tee "$out/summary.txt"
log "results in $out"
