#!/usr/bin/env bash
# bench/graph/tool_ingest.sh — `pheap-graph ingest` as a user runs it, in core and out of core:
# its defaults (grouped batches, the look-ahead prefetch, window min(4 MiB, buffer / 8)) against
# the same command with `--prefetch-window 0` (grouped, no look-ahead) and the same defaults on
# pheap's kernel-mmap backend with MADV_RANDOM (PHEAP_BACKEND=mmap PHEAP_MMAP_ADVICE=random), and, with MPI,
# `mpirun -np 2 pheap-graph ingest` (each rank inserts its batches grouped) against the same
# under OLD_BUILD's binary when given (e.g. a build from before a change), in core only. One R-MAT edge list
# (binary, scrambled, edge factor 16, undirected graph), every run into a new datastore, REPS
# rounds with the forms interleaved (same machine state). Out of core, every run is in its own
# memory cgroup v1 limited to half the in-core datastore's allocated bytes + SLACK MiB (the process's
# own memory; the pager sizes its buffer from the cgroup), as bench/ooc_matrix.sh does; needs
# root. Wall time includes process (and mpirun) start-up.
#
#   bench/graph/tool_ingest.sh [SCALE [REPS]]      (defaults 18 and 3)
#
# Environment: BUILD (default build), OLD_BUILD (optional), BENCH_DIR (default /tmp), MODES
# (default "incore half"), THREADS (--threads, default 1: the tool's), SLACK (MiB, default
# 48: the tool's own memory, 30 MiB max RSS for a SCALE-14 ingest with --capacity 1G), TIMEOUT
# (s per run, default 300), MPIRUN (default mpirun; the MPI forms run when the binary was
# built with MPI), OUT (a CSV to append the rows to, optional).
# Prints one CSV row per run, then per mode and form the median seconds and the ratio to the
# no-look-ahead form.
set -euo pipefail

scale=${1:-18}
reps=${2:-3}
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../.." && pwd)
tool=${BUILD:-$root/build}/bin/pheap-graph
old=${OLD_BUILD:+$OLD_BUILD/bin/pheap-graph}
modes=${MODES:-incore half}
threads=${THREADS:-1}
slack=${SLACK:-48}
limit_s=${TIMEOUT:-300}
dir=$(mktemp -d "${BENCH_DIR:-/tmp}/tool-ingest-bench.XXXXXX")
cg_root=/sys/fs/cgroup/memory
cg="" runs=0
cleanup() {
  if [ -n "$cg" ] && [ -d "$cg" ]; then
    for p in $(cat "$cg/tasks" 2>/dev/null); do kill -9 "$p" 2>/dev/null || true; done
    sleep 0.2
    rmdir "$cg" 2>/dev/null || true
  fi
  rm -rf "$dir"
}
trap cleanup EXIT
trap 'exit 130' INT
trap 'exit 143' TERM
mpirun=(${MPIRUN:-mpirun} --oversubscribe --bind-to none)
[ "$(id -u)" = 0 ] && mpirun+=(--allow-run-as-root)
have_mpi=0  # a binary built with MPI links libmpi
if command -v "${mpirun[0]}" >/dev/null && ldd "$tool" 2>/dev/null | grep -q libmpi; then have_mpi=1; fi

"$tool" generate --scale "$scale" --edge-factor 16 --scramble --format binary --output "$dir/edges.bin" -q
edges=$(($(stat -c %s "$dir/edges.bin") / 16))

# run MODE FORM LIMIT_BYTES COMMAND...: one ingestion into a new datastore; prints a CSV row.
run() {
  local mode=$1 form=$2 limit=$3
  shift 3
  rm -rf "$dir/ds"
  local t0 t1 status=ok peak=0 oom=0
  t0=$(date +%s.%N)
  if [ "$limit" -gt 0 ]; then
    runs=$((runs + 1))
    cg=$cg_root/pheap-toolbench-$$-$runs
    mkdir "$cg"
    echo "$limit" >"$cg/memory.limit_in_bytes"
    timeout -s KILL "$limit_s" sh -c 'echo $$ >"$1/tasks"; shift; exec "$@"' sh "$cg" "$@" >/dev/null 2>"$dir/err" || status=fail
    peak=$(cat "$cg/memory.max_usage_in_bytes")
    oom=$(awk '/oom_kill /{print $2}' "$cg/memory.oom_control")
    # Whatever is left of the run (an MPI rank whose sibling was OOM-killed) goes first.
    for _ in 1 2 3 4 5 6 7 8 9 10; do
      for p in $(cat "$cg/tasks" 2>/dev/null); do kill -9 "$p" 2>/dev/null || true; done
      rmdir "$cg" 2>/dev/null && break
      sleep 0.5
    done
    cg=""
  else
    timeout -s KILL "$limit_s" "$@" >/dev/null 2>"$dir/err" || status=fail
  fi
  t1=$(date +%s.%N)
  [ "$oom" != 0 ] && status=oom
  local disk
  disk=$(du -sB1 "$dir/ds" 2>/dev/null | cut -f1)
  echo "$mode,$form,$(echo "$t1 - $t0" | bc -l | xargs printf '%.3f'),$status,$((limit >> 20)),$((peak >> 20)),${disk:-0}"
  if [ "$status" != ok ]; then sed 's/^/  stderr: /' "$dir/err" | tail -3 >&2; fi
}

ingest() {  # ingest BINARY EXTRA...: the command line of one run
  local bin=$1
  shift
  echo "$bin" ingest --datastore "$dir/ds" --format binary --undirected --threads "$threads" -q "$@" "$dir/edges.bin"
}

echo "# scale $scale, $edges edges, threads $threads, load $(cut -d' ' -f1-3 /proc/loadavg), git $(git -C "$root" rev-parse --short HEAD)"
echo "mode,form,seconds,status,limit_mib,peak_mib,disk_bytes"
results=$dir/results.csv
# The datastore's size in core decides the out-of-core budget.
"$tool" ingest --datastore "$dir/ds" --format binary --undirected -q "$dir/edges.bin" >/dev/null
ds_bytes=$(du -sB1 "$dir/ds" | cut -f1)  # allocated bytes: the segment files are sparse
for mode in $modes; do
  limit=0
  [ "$mode" = half ] && limit=$((ds_bytes / 2 + (slack << 20)))
  for _ in $(seq "$reps"); do
    # shellcheck disable=SC2046
    run "$mode" tool "$limit" $(ingest "$tool") | tee -a "$results"
    # shellcheck disable=SC2046
    run "$mode" tool-no-lookahead "$limit" $(ingest "$tool" --prefetch-window 0) | tee -a "$results"
    # The same defaults on pheap's kernel-mmap backend with MADV_RANDOM (the look-ahead then
    # asks the kernel with MADV_WILLNEED): the issue's baseline.
    # shellcheck disable=SC2046
    run "$mode" kernel-mmap-random "$limit" env PHEAP_BACKEND=mmap PHEAP_MMAP_ADVICE=random $(ingest "$tool") | tee -a "$results"
    # MPI in core only: the distributed ingestion's own memory (its record exchange, about 200
    # MiB per rank at batches of 2^20 edges) is larger than an out-of-core budget at SCALE 18.
    if [ "$have_mpi" = 1 ] && [ "$mode" = incore ]; then
      # shellcheck disable=SC2046
      run "$mode" mpi-np2 "$limit" "${mpirun[@]}" -np 2 $(ingest "$tool") | tee -a "$results"
      if [ -n "$old" ]; then
        # shellcheck disable=SC2046
        run "$mode" mpi-np2-old "$limit" "${mpirun[@]}" -np 2 $(ingest "$old") | tee -a "$results"
      fi
    fi
  done
done
[ -n "${OUT:-}" ] && cat "$results" >>"$OUT"
echo "# medians (seconds; ratio = no-look-ahead / form, > 1: the form is faster)"
python3 - "$results" <<'EOF'
import csv, statistics, sys
rows = list(csv.reader(open(sys.argv[1])))
by = {}
for mode, form, s, status, *_ in rows:
    by.setdefault((mode, form), []).append(float(s) if status == "ok" else float("nan"))
for (mode, form), xs in sorted(by.items()):
    med = statistics.median(xs)
    base = statistics.median(by.get((mode, "tool-no-lookahead"), [float("nan")]))
    print(f"{mode:7s} {form:18s} median {med:8.2f} s  runs {' '.join(f'{x:.2f}' for x in xs)}  ratio {base / med:.2f}")
EOF
