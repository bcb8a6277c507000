#!/usr/bin/env bash
# compare.sh PHASE — store format 3 (this tree) against format 2 (its parent, 886133e) in one
# session, interleaved A B A B, the way the 2026-11-25 figures of bench/README.md were taken.
#   F3  persist_bench / graph_construct_bench of this tree (build-bench, Release)
#   F2  the same programs built from 886133e with this tree's persist_bench.cpp copied in
#       (git worktree add --detach ../f2 886133e; cp bench/persist/persist_bench.cpp ../f2/bench/persist/;
#        cmake -S ../f2 -B ../f2/build -G Ninja -DCMAKE_BUILD_TYPE=Release;
#        cmake --build ../f2/build --target persist_bench graph_construct_bench)
# PHASE: dur1 (1 GiB, 4 and 64 KiB pages, REPS reps), dur4 (4 GiB), dur16 (16 GiB, 64 KiB pages,
# out of core: 4 GiB buffer), graph (SCALE 20, 2 threads, in core, mmap backend and uffd).
# Appends to durability.csv / construct.csv and logs every command with the load average in run.log.
# The 2026-11-25 run: REPS=3 dur1; REPS=1 dur4, dur16, graph; then REPS=1 dur4, REPS=2 graph,
# REPS=1 dur16 (n = 3, 2, 2, 3). summarize.py prints the medians and ratios of bench/README.md.
set -u
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../../.." && pwd)
F3=${F3:-$root/build-bench}
F2=${F2:-$root/../f2/build}
DIR=${BENCH_DIR:-/tmp}
REPS=${REPS:-3}
log() { echo "$(date -u +%H:%M:%S) load $(cut -d' ' -f1-3 /proc/loadavg) $*" | tee -a "$here/run.log"; }
run() {  # run LABEL COMMAND...
  local label=$1; shift
  log "$label: $*"
  "$@" >>"$here/$phase.log" 2>&1 || log "$label: exit $?"
}
phase=${1:?usage: compare.sh dur1|dur4|dur16|graph}
for rep in $(seq "$REPS"); do
  for f in 3 2; do
    b=F$f; b=${!b}
    case $phase in
      dur1)  run "f$f" "$b/bench/persist/persist_bench" --dir "$DIR" --label "format$f" --csv "$here/durability.csv" \
               --durability-gib 1 --page-sizes 4096,65536 ;;
      dur4)  run "f$f" "$b/bench/persist/persist_bench" --dir "$DIR" --label "format$f" --csv "$here/durability.csv" \
               --durability-gib 4 --page-sizes 65536,4096 ;;
      dur16) run "f$f" "$b/bench/persist/persist_bench" --dir "$DIR" --label "format$f-buffer4g" --csv "$here/durability.csv" \
               --durability-gib 16 --page-sizes 65536 --buffer-mib 4096 ;;
      graph) run "f$f" "$b/bench/graph/graph_construct_bench" --dir "$DIR" --label "format$f" --csv "$here/construct.csv" \
               --scale 20 --threads 2 --systems mmap,uffd --page-sizes 4096,65536 --modes incore --timeout 600 \
               --max-disk-gib 12 ;;
      *) echo "unknown phase $phase" >&2; exit 2 ;;
    esac
  done
done
