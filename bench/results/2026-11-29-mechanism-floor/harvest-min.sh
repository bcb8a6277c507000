#!/usr/bin/env bash
# Run AL's experiment not kept: a minimum of HMIN pages examined between two harvests of
# written bits, read from PHEAP_EXP_HARVEST_MIN by a build with harvest-min.patch applied
# (the variable exists nowhere else). For each round and point, one graph_construct_bench run
# per value, alternating, as in run T (R-MAT SCALE 11, 2 threads, fixed buffer). CSV on stdout.
#   harvest-min.sh ROUNDS "PAGE:PAGES ..." "HMIN ..."   (from the checkout, build/ built)
set -euo pipefail
rounds=$1 points=$2 vals=$3
w=$(mktemp -d "${TMPDIR:-/tmp}/pheap-habw.XXXXXX"); trap 'rm -rf "$w"' EXIT
echo "round,hmin,page,buffer_pages,status,ingest_s,pages_read,evictions,evict_cpu_us_per_eviction,fault_s,process_cpu_s,minflt"
for r in $(seq 1 "$rounds"); do
  for pt in $points; do
    page=${pt%%:*} n=${pt##*:}
    for v in $vals; do
      line=$( { PHEAP_EXP_HARVEST_MIN=$v /usr/bin/time -f "CPU %U %S" build/bench/graph/graph_construct_bench --scale 11 --threads 2 --systems uffd \
        --page-sizes "$page" --modes incore --buffer $((page * n)) --timeout 300 \
        --dir "$w" 2>&1 1>&3 | grep '^CPU' ; } 3> "$w/out.csv" )
      python3 - "$r" "$v" "$page" "$n" "$w/out.csv" "$line" <<'P'
import sys
r,b,page,n,f,cpu=sys.argv[1:7]
rows=[l for l in open(f) if not l.startswith('#')]
h=rows[0].strip().split(','); v=rows[-1].strip().split(',',len(h)-1); d=dict(zip(h,v))
ev=int(d['pager_evictions']); ec=int(d['pager_evict_cpu_ns'])/1e9
u,s=cpu.split()[1:3]
print(f"{r},{b},{page},{n},{d['status']},{d['ingest_s']},{d['pager_pages_read']},{ev},{ec/ev*1e6:.1f},{int(d['pager_fault_ns'])/1e9:.2f},{float(u)+float(s):.2f},{d['minflt']}")
P
    done
  done
done
