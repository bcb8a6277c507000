#!/usr/bin/env bash
# Run AJ: where a tiny buffer's time goes, fills on the faulting thread (the graph datastore's
# default, PHEAP_FAULT_FILL=automatic) against fills by the fault workers, alternating, on one
# build. graph_construct_bench as in run T (R-MAT SCALE 11, 2 threads, edge by edge, fixed
# buffer, 4 KiB pages). Per fault: the time the building threads spent inside the fill (fault_ns:
# the SIGBUS handler, or the wait in the kernel for a worker) and outside it
# (2 x ingest − fault_ns: the application's own work, 0.27 s in core in all, and the fault's
# entry, signal and retry), over the pager's faults.
#   run.sh BUILD ROUNDS "PAGES ..."  -> CSV on stdout
set -euo pipefail
build=$1 rounds=$2 points=$3
w=$(mktemp -d /tmp/pheap-aj.XXXXXX); trap 'rm -rf "$w"' EXIT
echo "round,fill,buffer_pages,status,ingest_s,faults,pages_read,fault_s,threads_in_fill,us_in_fill_per_fault,us_outside_fill_per_fault,evictions,evict_cpu_s,worker_cpu_s,buffer_waits"
for r in $(seq 1 "$rounds"); do
  for n in $points; do
    for f in workers automatic; do
      rm -f "$w/out.csv"
      PHEAP_FAULT_FILL=$f "$build/bench/graph/graph_construct_bench" --scale 11 --threads 2 --systems uffd \
        --page-sizes 4096 --modes incore --buffer $((4096 * n)) --timeout 300 --dir "$w" --csv "$w/out.csv" >/dev/null 2>&1
      python3 - "$r" "$f" "$n" "$w/out.csv" <<'P'
import csv, sys
r, f, n, path = sys.argv[1:5]
d = list(csv.DictReader(l for l in open(path) if not l.startswith('#')))[-1]
t = float(d['ingest_s']); faults = int(d['pager_faults']); fs = int(d['pager_fault_ns']) / 1e9
print(f"{r},{'faulting_thread' if f == 'automatic' else f},{n},{d['status']},{t:.2f},{faults},{d['pager_pages_read']},{fs:.2f},"
      f"{fs / t:.2f},{fs / faults * 1e6:.1f},{(2 * t - fs) / faults * 1e6:.1f},{d['pager_evictions']},"
      f"{int(d['pager_evict_cpu_ns']) / 1e9:.2f},{int(d['pager_fault_cpu_ns']) / 1e9:.2f},{d['pager_buffer_waits']}")
P
    done
  done
done
