#!/usr/bin/env bash
# Run AI, part 2: the evictor's CPU per eviction and the process's CPU (user + system, /usr/bin/time) at
# tiny buffers, base and new alternating (base first in odd rounds), graph_construct_bench as in
# run T (R-MAT SCALE 11, 2 threads, edge by edge, fixed buffer). No disk replay.
#   cpu-ab.sh BASE_BUILD NEW_BUILD ROUNDS "PAGE:PAGES ..."  -> CSV on stdout
set -euo pipefail
base=$1 new=$2 rounds=$3 points=$4
w=$(mktemp -d /tmp/pheap-abw.XXXXXX); trap 'rm -rf "$w"' EXIT
echo "round,build,page,buffer_pages,status,ingest_s,pages_read,evictions,evict_runs,evict_cpu_s,evict_cpu_us_per_eviction,fault_s,process_cpu_s"
for r in $(seq 1 "$rounds"); do
  for pt in $points; do
    page=${pt%%:*} n=${pt##*:}
    order="base new"; [ $((r % 2)) = 0 ] && order="new base"
    for b in $order; do
      d=$base; [ $b = new ] && d=$new
      line=$( { /usr/bin/time -f "CPU %U %S" "$d/bench/graph/graph_construct_bench" --scale 11 --threads 2 --systems uffd \
        --page-sizes "$page" --modes incore --buffer $((page * n)) --timeout 300 \
        --dir "$w" 2>&1 1>&3 | grep '^CPU' ; } 3> "$w/out.csv" )
      python3 - "$r" "$b" "$page" "$n" "$w/out.csv" "$line" <<'P'
import sys
r,b,page,n,f,cpu=sys.argv[1:7]
rows=[l for l in open(f) if not l.startswith('#')]
h=rows[0].strip().split(','); v=rows[-1].strip().split(',',len(h)-1); d=dict(zip(h,v))
runs=d['note'].split('evicted in ')[1].split(' runs')[0] if 'evicted in' in d['note'] else ''
ev=int(d['pager_evictions']); ec=int(d['pager_evict_cpu_ns'])/1e9
u,s=cpu.split()[1:3]
print(f"{r},{b},{page},{n},{d['status']},{d['ingest_s']},{d['pager_pages_read']},{ev},{runs},{ec:.2f},{ec/ev*1e6:.1f},{int(d['pager_fault_ns'])/1e9:.2f},{float(u)+float(s):.2f}")
P
    done
  done
done
