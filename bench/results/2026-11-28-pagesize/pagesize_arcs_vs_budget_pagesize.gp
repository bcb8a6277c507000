set terminal pngcairo size 820,760 font 'sans,10'
set output 'pagesize_arcs_vs_budget_pagesize.png'
set multiplot layout 1,1 title "Graph construction, arcs/s vs memory budget per pheap page size (W-pagesize), timeout 300 s\neach out-of-core run in its own memory cgroup: budget + slack, the process included" font 'sans,11'
set logscale y 10
set format y '10^{%T}'
set yrange [10000:1e+07]
set xrange [-0.3:3.3]
set ylabel 'arcs/s (log scale)'
set xlabel 'memory budget: fraction of the final datastore' offset 0,-2
set grid ytics mytics
set key outside below left Left reverse maxcols 2 font ',9' samplen 3 spacing 1.1
set xtics ("in core" 0, "1/2\nbudget 65 MiB\ncgroup 96 MiB" 1, "1/4\nbudget 32 MiB\ncgroup 64 MiB" 2, "1/8\n(not run)" 3)
set title 'SCALE 18, 2 threads: one line per page size'
plot 'pagesize_arcs_vs_budget_pagesize_0.dat' index 0 u 1:2 w l lw 2 lc rgb '#1f77b4' dt 1 t 'uffd 4 KiB', 'pagesize_arcs_vs_budget_pagesize_0.dat' index 0 u 1:2:3 w p pt variable ps 1.8 lw 2 lc rgb '#1f77b4' dt 1 notitle, 'pagesize_arcs_vs_budget_pagesize_0.dat' index 1 u 1:2 w l lw 2 lc rgb '#2ca02c' dt 1 t 'uffd 16 KiB', 'pagesize_arcs_vs_budget_pagesize_0.dat' index 1 u 1:2:3 w p pt variable ps 1.8 lw 2 lc rgb '#2ca02c' dt 1 notitle, 'pagesize_arcs_vs_budget_pagesize_0.dat' index 2 u 1:2 w l lw 2 lc rgb '#d62728' dt 1 t 'uffd 64 KiB', 'pagesize_arcs_vs_budget_pagesize_0.dat' index 2 u 1:2:3 w p pt variable ps 1.8 lw 2 lc rgb '#d62728' dt 1 notitle, keyentry w p pt 7 ps 1.5 lw 2 lc rgb 'black' t 'finished: arcs / ingest time', keyentry w p pt 10 ps 1.5 lw 2 lc rgb 'black' t 'did not finish: arcs done / timeout (an upper bound)'
unset multiplot
