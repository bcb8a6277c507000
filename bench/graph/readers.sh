#!/usr/bin/env bash
# bench/graph/readers.sh — graph ingestion with readers beside the writer (issue 50): one R-MAT
# edge list (binary, scrambled, edge factor 16), `pheap-graph ingest --flush-every 1s` into a
# new datastore, with 0, 1 and 4 reader processes running `pheap-graph bfs` from the first
# edge's source in a loop for as long as the ingestion runs (each BFS opens the datastore
# read-only beside the writer, at its last watermark, reads it whole and exits). The forms are
# interleaved per round (same machine state). Reports the ingestion's wall time per form and its
# ratio to the form without readers (target ≥ 0.9), the BFS runs that completed, and any reader
# failure (a BFS that exits non-zero after the first watermark holding the source vertex: must
# be none).
#
# A form "Nc" (e.g. 1c, 4c) is the control: N readers running the same BFS loop over a copy of
# the whole graph ingested before the rounds (untimed), never over the writer's datastore — the
# readers' share of the CPU, memory and disk without the reader protocol. The writer's own time
# in the protocol (store_stats::reader_protect_ns: reading the readers' views of the map and
# copying the homes they still name, on the flush's path) is its report's "readers beside this
# job" line, the column protect_s (and pinned_mib, the copies' bytes).
#
# On 2 vCPUs the readers compete with the writer for the CPU: PLACEMENT=split (the default when
# the machine has 2 CPUs or more) runs the writer on CPU 0 and the readers on the others
# (taskset), so the ratio shows what the readers cost the writer through the datastore (pins,
# I/O, the reader table), not the CPU they take; PLACEMENT=shared lets the scheduler place all.
#
#   bench/graph/readers.sh [SCALE [REPS]]      (defaults 20 and 3)
#
# Environment: BUILD (default build), BENCH_DIR (default /tmp), READERS (default "0 1 4 1c 4c"),
# PLACEMENT (split|shared), OUT (a CSV to append the rows to, optional), PROFILE (a directory:
# the writer runs under bench/offcpu.py, and each run's time-weighted off-CPU profile is written
# there as offcpu-ROUND-FORM.txt after the rounds; perf's recording slows the writer, so compare
# the forms of such a run with each other, not with a run without PROFILE).
set -euo pipefail

scale=${1:-20}
reps=${2:-3}
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../.." && pwd)
tool=${BUILD:-$root/build}/bin/pheap-graph
readers_forms=${READERS:-0 1 4 1c 4c}
cpus=$(nproc)
placement=${PLACEMENT:-$([ "$cpus" -ge 2 ] && echo split || echo shared)}
dir=$(mktemp -d "${BENCH_DIR:-/tmp}/readers-bench.XXXXXX")
pids=()
cleanup() {
  for p in "${pids[@]}"; do kill -9 "$p" 2>/dev/null || true; done
  rm -rf "$dir"
}
trap cleanup EXIT
trap 'exit 130' INT
trap 'exit 143' TERM

"$tool" generate --scale "$scale" --edge-factor 16 --scramble --format binary --output "$dir/edges.bin" -q
source=$(od -An -t u8 -N 8 "$dir/edges.bin" | tr -d ' ')
case " $readers_forms " in
  *c\ *) "$tool" ingest --datastore "$dir/copy" --format binary --undirected -q "$dir/edges.bin" >/dev/null ;;
esac
writer_cpu=() reader_cpu=()
if [ "$placement" = split ]; then
  writer_cpu=(taskset -c 0)
  reader_cpu=(taskset -c "1-$((cpus - 1))")
fi

# reader_loop DS FLAG OUT: BFS after BFS until FLAG exists; one line per run: exit status.
reader_loop() {
  local ds=$1 flag=$2 out=$3
  while [ ! -e "$flag" ]; do
    if "${reader_cpu[@]}" "$tool" bfs --datastore "$ds" --source "$source" >/dev/null 2>>"$out.err"; then
      echo 0 >>"$out"
    else
      echo $? >>"$out"
    fi
  done
}

echo "round,readers,placement,ingest_s,bfs_ok,bfs_not_yet,bfs_failed,protect_s,pinned_mib"
for round in $(seq 1 "$reps"); do
  for form in $readers_forms; do
    n=${form%c}
    ds=$dir/g-$round-$form
    read_ds=$ds
    [ "$form" != "$n" ] && read_ds=$dir/copy
    flag=$dir/done-$round-$form
    pids=()
    wrap=()
    [ -n "${PROFILE:-}" ] && wrap=(python3 "$root/bench/offcpu.py" --no-report --data "$dir/offcpu-$round-$form.data" --)
    t0=$(date +%s.%N)
    "${writer_cpu[@]}" "${wrap[@]}" "$tool" ingest --datastore "$ds" --format binary --undirected --flush-every 1s -q \
      "$dir/edges.bin" >"$dir/ingest-$round-$form.log" 2>&1 &
    writer=$!
    for k in $(seq 1 "$n"); do
      ( # wait for the datastore to exist, then loop
        while [ ! -e "$ds/pheap.super" ] && kill -0 "$writer" 2>/dev/null; do sleep 0.05; done
        reader_loop "$read_ds" "$flag" "$dir/bfs-$round-$form-$k"
      ) &
      pids+=($!)
    done
    wait "$writer"
    t1=$(date +%s.%N)
    touch "$flag"
    for p in "${pids[@]}"; do wait "$p" || true; done
    ok=0 notyet=0 failed=0
    for k in $(seq 1 "$n"); do
      f=$dir/bfs-$round-$form-$k
      [ -e "$f" ] || continue
      ok=$((ok + $(grep -c '^0$' "$f" || true)))
      # exit 2 "not a vertex of the graph" before the first watermark holding the source
      notyet=$((notyet + $(grep -c '^2$' "$f" || true)))
      failed=$((failed + $(grep -vc '^[02]$' "$f" || true)))
      if grep -qv "not a vertex" "$f.err" 2>/dev/null; then
        echo "reader errors (round $round, readers $form, reader $k):" >&2
        grep -v "not a vertex" "$f.err" | head -5 >&2
        failed=$((failed + 1))
      fi
    done
    # "readers beside this job: S s keeping their watermarks (N copies ..., M MiB)"
    cost=$(sed -n 's/^readers beside this job: \([0-9.]*\) s .*, \([0-9.]*\) MiB)$/\1,\2/p' "$dir/ingest-$round-$form.log")
    row="$round,$form,$placement,$(echo "$t1 - $t0" | bc),$ok,$notyet,$failed,${cost:-0,0}"
    echo "$row"
    [ -n "${OUT:-}" ] && echo "$row" >>"$OUT"
    rm -rf "$ds"
  done
done
if [ -n "${PROFILE:-}" ]; then
  mkdir -p "$PROFILE"
  for f in "$dir"/offcpu-*.data; do
    python3 "$root/bench/offcpu.py" --report "$f" >"$PROFILE/$(basename "$f" .data).txt"
  done
fi
