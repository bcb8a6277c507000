#!/usr/bin/env bash
# Tiny buffer: `pheap-graph ingest` of the first EDGES edges of an R-MAT SCALE 14 list (seed 99,
# the full-disk test's graph) with the reliability tests' options (500-edge batches, 64 KiB
# pages, a 2 MiB buffer: 32 pages, a watermark every 5000 edges), by two builds of the tool in
# turn, ROUNDS rounds. Prints CSV: label,round,edges,wall_s,user_s,sys_s.
#   tiny.sh OLD_BIN NEW_BIN [EDGES] [ROUNDS]
set -euo pipefail
old=$1 new=$2 edges=${3:-40000} rounds=${4:-3}
w=$(mktemp -d "${TMPDIR:-/tmp}/pheap-tiny.XXXXXX")
trap 'rm -rf "$w"' EXIT
"$new" generate --scale 14 --seed 99 --threads 1 --output "$w/all.txt" -q
head -n "$edges" "$w/all.txt" >"$w/e.txt"
echo "label,round,edges,wall_s,user_s,sys_s"
for r in $(seq 1 "$rounds"); do
  for label in old new; do
    bin=$old; [ "$label" = new ] && bin=$new
    rm -rf "$w/ds"
    /usr/bin/time -o "$w/time" -f "%e,%U,%S" "$bin" ingest --datastore "$w/ds" --batch-size 500 \
      --capacity 256M --page-size 64K --buffer-size 2M --flush-every 5000 -q "$w/e.txt" >/dev/null 2>&1
    echo "$label,$r,$edges,$(tail -1 "$w/time")"
  done
done
