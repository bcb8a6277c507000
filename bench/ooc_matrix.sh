#!/usr/bin/env bash
# bench/ooc_matrix.sh — issue 16's out-of-core matrix: graph construction (construct_bench) at
# SCALE 18 and 20, budgets 1/2, 1/4 and 1/8 of the final datastore, systems uffd, mmap-random
# and mmap (+ EXTRA_SYSTEMS), pheap's buffer sized from the cgroup (--buffer auto), every run in
# its own memory cgroup v1 of budget + slack (construct_bench does that; needs root), 2
# threads, 4 KiB pages. At most 18 runs x the timeout at the defaults (72 min at 240 s), plus
# one in-core run per SCALE to measure the datastore. Writes bench/results/<date>-ooc-matrix/:
# command.txt, machine.txt, load.txt (load every 30 s), construct.csv, construct.log, run.log,
# summary.txt and the plots of bench/plot.py.
set -euo pipefail

usage() {
  cat <<'EOF'
usage: bench/ooc_matrix.sh [--timeout S] [--scales "18 20"] [--modes half,quarter,eighth]
                           [--page-sizes 4096] [--threads 2] [--slack-mib 32]
  --timeout S     per run (construct_bench --timeout), default 240
  --scales LIST   R-MAT SCALEs, one construct_bench invocation each, default "18 20"
  --modes LIST    budgets: half, quarter, eighth (1/2, 1/4, 1/8 of the datastore), incore
  --page-sizes L  pheap page sizes of the uffd systems, default 4096
  --threads N     inserting threads, default 2
  --slack-mib M   cgroup limit = budget + M MiB (the process's own memory), default 32
Environment: EXTRA_SYSTEMS (comma-separated, appended to uffd,mmap-random,mmap, e.g.
uffd-grouped,mmap-random-grouped), BUILD (default build-bench, Release; configured and built
if needed), BENCH_DIR (datastores, default /tmp), JOBS (build parallelism, default 2), OUT
(results directory, default bench/results/<date>-ooc-matrix; must not hold a construct.csv).
SIGINT/SIGTERM stop the running construct_bench (it removes its cgroup and datastore) and
keep the rows written so far.
EOF
}

args=("$@")
timeout=240 scales="18 20" modes=half,quarter,eighth pages=4096 threads=2 slack=32
while [ $# -gt 0 ]; do
  case "$1" in
    -h|--help) usage; exit 0 ;;
    --timeout|--scales|--modes|--page-sizes|--threads|--slack-mib)
      [ $# -ge 2 ] || { echo "$1 needs a value" >&2; usage >&2; exit 2; }
      case "$1" in
        --timeout) timeout=$2 ;; --scales) scales=$2 ;; --modes) modes=$2 ;;
        --page-sizes) pages=$2 ;; --threads) threads=$2 ;; --slack-mib) slack=$2 ;;
      esac
      shift 2 ;;
    *) echo "unknown argument: $1" >&2; usage >&2; exit 2 ;;
  esac
done
systems=uffd,mmap-random,mmap${EXTRA_SYSTEMS:+,$EXTRA_SYSTEMS}

here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/.." && pwd)
build=${BUILD:-$root/build-bench}
dir=${BENCH_DIR:-/tmp}
out=${OUT:-$here/results/$(date +%Y-%m-%d)-ooc-matrix}
csv=$out/construct.csv
if [ -e "$csv" ]; then
  echo "$csv exists: remove it or set OUT" >&2
  exit 2
fi
mkdir -p "$out"
log() { echo "[$(date +%H:%M:%S)] $*" | tee -a "$out/run.log"; }
. "$here/common.sh"

# SIGINT/SIGTERM: forward to the running construct_bench (which kills its child and removes the
# child's cgroup and datastore), wait for it, stop the load sampler, keep the CSV.
bench_pid= sampler_pid=
stop() {
  local sig=$1
  log "$sig: stopping"
  if [ -n "$bench_pid" ]; then
    kill -TERM "$bench_pid" 2>/dev/null || true
    wait "$bench_pid" 2>/dev/null || true
  fi
  [ -z "$sampler_pid" ] || kill "$sampler_pid" 2>/dev/null || true
  echo "interrupted by $sig; rows so far in construct.csv" >>"$out/machine.txt"
  load_after
  trap - "$sig"
  kill -"$sig" $$
}
trap 'stop INT' INT
trap 'stop TERM' TERM

bench_build "${JOBS:-2}" graph_construct_bench
cb=$build/bench/graph/graph_construct_bench
ensure_gnuplot
[ -w /sys/fs/cgroup/memory ] || log "WARNING: /sys/fs/cgroup/memory is not writable: runs are not confined (NO_CGROUP in the notes)"

machine_info ooc-matrix "$dir"
(  # its sleep is ended with it
  trap 'kill $nap 2>/dev/null; exit 0' TERM
  while :; do
    sleep 30 & nap=$!
    wait $nap
    echo "$(date +%H:%M:%S) $(cat /proc/loadavg)"
  done
) >>"$out/load.txt" &
sampler_pid=$!

{
  echo "# issue 16 out-of-core matrix: bench/ooc_matrix.sh ${args[*]}${EXTRA_SYSTEMS:+ (EXTRA_SYSTEMS=$EXTRA_SYSTEMS)}"
  echo "# timeout $timeout s, scales $scales, modes $modes, systems $systems, page sizes $pages, $threads threads, slack $slack MiB"
} >"$out/command.txt"
for scale in $scales; do
  cmd=("$cb" --scale "$scale" --threads "$threads" --systems "$systems" --page-sizes "$pages" --modes "$modes"
       --buffer auto --timeout "$timeout" --slack-mib "$slack" --dir "$dir" --label ooc-matrix --csv "$csv")
  echo "${cmd[*]}" >>"$out/command.txt"
  log "SCALE $scale: ${cmd[*]}"
  # In the background so that the traps run while it does (bash defers them past a foreground
  # command); construct_bench sets its own SIGINT handler, which a background job would ignore.
  "${cmd[@]}" >>"$out/construct.log" 2>&1 &
  bench_pid=$!
  wait "$bench_pid" || log "construct_bench SCALE $scale failed ($?)"
  bench_pid=
done

kill "$sampler_pid" 2>/dev/null || true
sampler_pid=
load_after
python3 "$here/plot.py" "$out" | tee "$out/summary.txt"
log "results in $out"
