#!/usr/bin/env bash
# bench/pager/scan.sh — a cold sequential pass over a persistent array (bench/pager/scan_bench),
# pheap's fault read-ahead and scan prefetch against the kernel's mmap path and the disk alone,
# in one run.
#
#   bench/pager/scan.sh [BUILD] [MIB] [ROUNDS]        (defaults: build 2048 3)
#
# Two datastores of MIB MiB of uint64 (4 KiB pages): one written by pheap, one by the mmap
# backend (laid out, so that mmap can reopen it). Per round, each case with the page cache
# dropped first (pheap reads O_DIRECT: PHEAP_READ_ONLY_CACHE=off, so every byte comes from the
# device):
#   dd              dd iflag=direct bs=1M of a dense file of MIB MiB: the disk's sequential rate
#   pheap           fault read-ahead (the default), one 8-byte read per 4 KiB, forwards
#   pheap-backward  the same backwards
#   pheap-noahead   PHEAP_READ_AHEAD=0: one 4 KiB read per fault (the pager before read-ahead)
#   pheap-prefetch  manager::prefetch_all, then the pass
#   pheap-quarter   fault read-ahead with a buffer of a quarter of the data (evicting all along)
#   mmap            the mmap backend, default advice (kernel readahead)
#   mmap-random     PHEAP_MMAP_ADVICE=random
# Output: bench/results/<date>-scan/ (OUT overrides): scan.csv, machine.txt, run.log. Needs root
# (drop_caches). Datastores under BENCH_DIR (default /tmp).
set -euo pipefail

here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../.." && pwd)
build=${1:-$root/build}
mib=${2:-2048}
rounds=${3:-3}
dir=${BENCH_DIR:-/tmp}/pheap-scan-$$
out=${OUT:-$root/bench/results/$(date +%Y-%m-%d)-scan}
mkdir -p "$out" "$dir"
log() { echo "[$(date +%H:%M:%S)] $*" | tee -a "$out/run.log"; }
. "$root/bench/common.sh"
[ "$(id -u)" = 0 ] || { echo "scan.sh: needs root (drop_caches)" >&2; exit 2; }
sb=$build/bench/pager/scan_bench
[ -x "$sb" ] || { echo "scan.sh: $sb not built (cmake --build $build --target scan_bench)" >&2; exit 2; }
trap 'rm -rf "$dir"' EXIT INT TERM
machine_info scan "$dir"

drop() { sync; echo 3 >/proc/sys/vm/drop_caches; }
log "create: $mib MiB, pheap and mmap datastores, a dense file"
PHEAP_PAGE_SIZE=4K "$sb" create "$dir/uffd" "$mib"
PHEAP_PAGE_SIZE=4K PHEAP_BACKEND=mmap "$sb" create "$dir/mmap" "$mib"
dd if=/dev/urandom of="$dir/dense" bs=1M count="$mib" status=none
sync

csv=$out/scan.csv
echo "round,case,seconds,mib,mib_per_s,faults,pages_read,read_ahead_pages,read_ahead_windows,read_steps,read_step_pages,store_read_requests" >"$csv"
one() {  # one ROUND CASE -- env/argv...
  local rnd=$1 name=$2
  shift 3
  drop
  local line
  line=$("$@")
  echo "$rnd,$name,${line#*,}" >>"$csv"
  log "  r$rnd $name: $(cut -d, -f2,4 <<<"$line") (s, MiB/s)"
}
for ((rnd = 1; rnd <= rounds; ++rnd)); do
  drop
  t0=$(date +%s.%N)
  dd if="$dir/dense" of=/dev/null bs=1M iflag=direct status=none
  t1=$(date +%s.%N)
  awk -v r="$rnd" -v a="$t0" -v b="$t1" -v m="$mib" 'BEGIN {printf "%s,dd,%.3f,%d,%.0f,,,,,,,\n", r, b - a, m, m / (b - a)}' >>"$csv"
  log "  r$rnd dd: $(tail -1 "$csv" | cut -d, -f3,5)"
  ro=(env PHEAP_READ_ONLY_CACHE=off)
  one "$rnd" pheap -- "${ro[@]}" "$sb" scan "$dir/uffd"
  one "$rnd" pheap-backward -- "${ro[@]}" "$sb" scan "$dir/uffd" --backward
  one "$rnd" pheap-noahead -- "${ro[@]}" PHEAP_READ_AHEAD=0 "$sb" scan "$dir/uffd"
  one "$rnd" pheap-prefetch -- "${ro[@]}" "$sb" scan "$dir/uffd" --prefetch-all
  one "$rnd" pheap-quarter -- "${ro[@]}" PHEAP_BUFFER_SIZE=$((mib / 4))M "$sb" scan "$dir/uffd"
  one "$rnd" mmap -- env PHEAP_BACKEND=mmap "$sb" scan "$dir/mmap"
  one "$rnd" mmap-random -- env PHEAP_BACKEND=mmap PHEAP_MMAP_ADVICE=random "$sb" scan "$dir/mmap"
done
load_after
# Medians per case and the ratio to dd's rate.
python3 - "$csv" <<'EOF' | tee -a "$out/run.log"
import csv, statistics, sys
rows = list(csv.DictReader(open(sys.argv[1])))
cases = []
for r in rows:
    if r["case"] not in cases: cases.append(r["case"])
dd = statistics.median(float(r["mib_per_s"]) for r in rows if r["case"] == "dd")
print("| case | MiB/s (median) | of dd's rate | faults | read-ahead pages | pages per read step | pages per store request |")
print("|---|---|---|---|---|---|---|")
for c in cases:
    g = [r for r in rows if r["case"] == c]
    rate = statistics.median(float(r["mib_per_s"]) for r in g)
    def med(f):
        v = [float(r[f]) for r in g if r[f] not in ("", None)]
        return statistics.median(v) if v else 0.0
    steps = med("read_steps"); reqs = med("store_read_requests")
    print(f"| {c} | {rate:.0f} | {rate / dd:.2f} | {med('faults'):.0f} | {med('read_ahead_pages'):.0f} | "
          f"{(med('read_step_pages') / steps) if steps else 0:.0f} | {(med('pages_read') / reqs) if reqs else 0:.0f} |")
EOF
log "done: $out"
