#!/usr/bin/env bash
# The main job, end to end: build pheap, generate an R-MAT graph, ingest it into a persistent
# heap with a flush watermark every 2^18 edges (batches of 2^16), kill the ingester with
# SIGKILL as soon as its first watermark is on disk (polling `pheap info`, so at any machine
# speed the kill lands mid-ingestion), rerun the same command (it resumes at the last
# watermark), and check that the result is exactly the graph an uninterrupted ingestion
# builds: no edge lost, none duplicated.
#
#   scripts/demo.sh                 SCALE=18 (4M edges), data under a fresh temp directory
#   SCALE=20 scripts/demo.sh        bigger; PHEAP_DEMO_DIR=/path keeps the data there
#   PHEAP_BUILD_DIR=dir             the build tree (default build/); PHEAP_DEMO_SKIP_BUILD=1 uses
#                                   its tools as they are (the test Scripts.DemoShowsARealResume*)
set -euo pipefail
cd "$(dirname "$0")/.."

build=${PHEAP_BUILD_DIR:-build}
if [ "${PHEAP_DEMO_SKIP_BUILD:-0}" != 1 ]; then
  scripts/deps.sh
  cmake -S . -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo >/dev/null
  cmake --build "$build" -j"$(nproc)" --target pheap-graph pheap_tool
fi

scale=${SCALE:-18}
if [ -n "${PHEAP_DEMO_DIR:-}" ]; then
  work=$PHEAP_DEMO_DIR
  mkdir -p "$work"
else
  work=$(mktemp -d "${TMPDIR:-/tmp}/pheap-demo-XXXXXX")
  trap 'rm -rf "$work"' EXIT
fi
G=$build/bin/pheap-graph
P=$build/bin/pheap
edges=$work/rmat-$scale.bin
store=$work/graph
ref=$work/graph-reference
rm -rf "$store" "$ref" "$work/empty"

echo "== generate: R-MAT scale $scale, edge factor 16 (Graph500 a=0.57 b=0.19 c=0.19)"
$G generate --scale "$scale" --edge-factor 16 --seed 42 --format binary --output "$edges"

# The exact command a user reruns after a crash.
ingest_args=(ingest --undirected --format binary --threads 2 --batch-size 65536 --flush-every 262144 --quiet)
ingest() { $G "${ingest_args[@]}" --datastore "$1" "$edges"; }

# The epoch a new graph datastore has before its first batch (an empty ingestion ends there):
# a higher one in the superblock is a watermark of the ingestion.
: >"$work/empty.bin"
$G "${ingest_args[@]}" --datastore "$work/empty" "$work/empty.bin" >/dev/null
epoch_of() { $P info --json "$1" 2>/dev/null | sed -n 's/^ *"epoch": \([0-9]*\),*$/\1/p' | head -n 1; }  # the first: the watermark's (each reader has one too)
created=$(epoch_of "$work/empty")
rm -rf "$work/empty" "$work/empty.bin"

echo "== ingest, killed with SIGKILL as soon as its first watermark is on disk"
killed=0
for attempt in 1 2 3; do
  rm -rf "$store"
  $G "${ingest_args[@]}" --datastore "$store" "$edges" &   # run directly: $! is the ingester
  pid=$!
  while kill -0 "$pid" 2>/dev/null; do
    e=$(epoch_of "$store" || true)
    if [ -n "$e" ] && [ "$e" -gt "$created" ]; then
      kill -9 "$pid" 2>/dev/null || true
      break
    fi
    sleep 0.02
  done
  wait "$pid" 2>/dev/null || true
  # Mid-ingestion for certain only if the datastore holds an unfinished job.
  if $G stats --json --datastore "$store" | grep -q '"unfinished": {'; then killed=1; break; fi
  echo "   (attempt $attempt: the ingestion finished before the kill landed; again)"
done
if [ "$killed" -ne 1 ]; then
  echo "== FAILED: could not interrupt the ingestion in 3 attempts; rerun with a larger SCALE" >&2
  exit 1
fi
echo "   killed pid $pid after watermark $(epoch_of "$store"); the datastore holds the last watermark:"
$G stats --datastore "$store" | sed 's/^/   /'

echo "== same command again: resumes from the last watermark"
out=$(ingest "$store")
echo "$out" | sed 's/^/   /'
if ! grep -q "resumed at edge [1-9]" <<<"$out"; then
  echo "== FAILED: the rerun did not resume from a watermark" >&2
  exit 1
fi
$G stats --datastore "$store" | sed 's/^/   /'
echo "== pheap check / info"
$P check "$store" | sed 's/^/   /'
$P info "$store" | sed 's/^/   /'

echo "== reference: uninterrupted ingestion into a second datastore"
ingest "$ref"
$G export --quiet --datastore "$store" --format text --output "$work/resumed.txt"
$G export --quiet --datastore "$ref" --format text --output "$work/reference.txt"
LC_ALL=C sort -o "$work/resumed.txt" "$work/resumed.txt"
LC_ALL=C sort -o "$work/reference.txt" "$work/reference.txt"
if cmp -s "$work/resumed.txt" "$work/reference.txt"; then
  echo "== OK: the resumed graph equals the reference exactly ($(wc -l <"$work/reference.txt") edges)"
else
  echo "== FAILED: the resumed graph differs from the reference" >&2
  exit 1
fi
echo "== BFS from vertex 0 on a read-only open"
$G bfs --datastore "$store" --source 0 >"$work/bfs.txt"
head -5 "$work/bfs.txt" | sed 's/^/   /'
