#!/usr/bin/env bash
# The ingestion's memory_headroom (pheap-graph ingest asks for its batches' memory, ~58 MiB at
# 2^20-edge batches) against the pager's default headroom (1/8 of the limit, at least 16 MiB;
# forced here with PHEAP_MEMORY_HEADROOM=1M, which is below it), out of core: every run in its
# own memory cgroup v1 limited to half the in-core datastore's allocated bytes + SLACK MiB, as
# bench/graph/tool_ingest.sh does, at each page size of PAGES, forms interleaved REPS times.
# Needs root.
#
#   bench/results/2026-12-07-headroom/run.sh [SCALE [REPS]]     (defaults 20 and 2)
#
# Environment: BUILD (default build), PAGES (default "4K 2M"), SLACK (MiB, default 48),
# TIMEOUT (s per run, default 300). Prints one CSV row per run (status oom: OOM-killed), then
# per page size and form the median seconds and the ratio default-headroom / asked.
set -euo pipefail
scale=${1:-20}
reps=${2:-2}
root=$(cd "$(dirname "$0")/../../.." && pwd)
tool=${BUILD:-$root/build}/bin/pheap-graph
pages=${PAGES:-4K 2M}
slack=${SLACK:-48}
limit_s=${TIMEOUT:-300}
dir=$(mktemp -d /tmp/headroom-bench.XXXXXX)
cg_root=/sys/fs/cgroup/memory
cg=""
cleanup() {
  if [ -n "$cg" ] && [ -d "$cg" ]; then
    for p in $(cat "$cg/tasks" 2>/dev/null); do kill -9 "$p" 2>/dev/null || true; done
    sleep 0.2
    rmdir "$cg" 2>/dev/null || true
  fi
  rm -rf "$dir"
}
trap cleanup EXIT
"$tool" generate --scale "$scale" --edge-factor 16 --scramble --format binary --output "$dir/edges.bin" -q
echo "# scale $scale, load $(cut -d' ' -f1-3 /proc/loadavg), git $(git -C "$root" rev-parse --short HEAD)"
echo "page,form,seconds,status,limit_mib,peak_mib"
results=$dir/results.csv
n=0
run() {  # run PAGE FORM LIMIT ENV...
  local page=$1 form=$2 limit=$3
  shift 3
  rm -rf "$dir/ds"
  n=$((n + 1))
  cg=$cg_root/pheap-headroom-$$-$n
  mkdir "$cg"
  echo "$limit" >"$cg/memory.limit_in_bytes"
  local status=ok t0 t1
  t0=$(date +%s.%N)
  timeout -s KILL "$limit_s" sh -c 'echo $$ >"$1/tasks"; shift; exec "$@"' sh "$cg" env "$@" "$tool" ingest \
    --datastore "$dir/ds" --format binary --undirected --page-size "$page" -q "$dir/edges.bin" \
    >/dev/null 2>"$dir/err" || status=fail
  t1=$(date +%s.%N)
  [ "$(awk '/oom_kill /{print $2}' "$cg/memory.oom_control")" != 0 ] && status=oom
  local peak
  peak=$(cat "$cg/memory.max_usage_in_bytes")
  for p in $(cat "$cg/tasks" 2>/dev/null); do kill -9 "$p" 2>/dev/null || true; done
  sleep 0.2
  rmdir "$cg"
  cg=""
  echo "$page,$form,$(echo "$t1 - $t0" | bc -l | xargs printf '%.3f'),$status,$((limit >> 20)),$((peak >> 20))" | tee -a "$results"
}
for page in $pages; do
  rm -rf "$dir/ds"
  "$tool" ingest --datastore "$dir/ds" --format binary --undirected --page-size "$page" -q "$dir/edges.bin" >/dev/null
  limit=$(( $(du -sB1 "$dir/ds" | cut -f1) / 2 + (slack << 20) ))
  for _ in $(seq "$reps"); do
    run "$page" asked "$limit" HEADROOM_FORM=asked
    run "$page" default-headroom "$limit" PHEAP_MEMORY_HEADROOM=1M
  done
done
echo "# medians (seconds; ratio = default-headroom / asked, > 1: asking is faster; oom runs count as nan)"
python3 - "$results" <<'PY'
import csv, statistics, sys
by = {}
for page, form, s, status, *_ in csv.reader(open(sys.argv[1])):
    by.setdefault((page, form), []).append(float(s) if status == "ok" else float("nan"))
for (page, form), xs in sorted(by.items()):
    med = statistics.median(xs)
    base = statistics.median(by[(page, "asked")])
    print(f"{page:3s} {form:17s} median {med:8.2f} s  runs {' '.join(f'{x:.2f}' for x in xs)}  ratio {med / base:.2f}")
PY
