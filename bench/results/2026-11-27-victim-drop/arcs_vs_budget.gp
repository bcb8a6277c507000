set terminal pngcairo size 820,760 font 'sans,10'
set output 'arcs_vs_budget.png'
set multiplot layout 1,1 title "Graph construction, arcs/s vs memory budget (N-defaults-r3, N-mmap-random-r2, N-defaults-r1, N-mmap-random-r1)\nSCALE 18, 2 threads, 4 KiB pages\neach out-of-core run in its own memory cgroup: budget + slack, the process included" font 'sans,11'
set logscale y 10
set format y '10^{%T}'
set yrange [10000:1e+06]
set xrange [-0.3:3.3]
set ylabel 'arcs/s (log scale)'
set xlabel 'memory budget: fraction of the final datastore' offset 0,-2
set grid ytics mytics
set key outside below left Left reverse maxcols 2 font ',9' samplen 3 spacing 1.1
set xtics ("in core\n(not run)" 0, "1/2\nbudget 65 MiB\ncgroup 96 MiB" 1, "1/4\nbudget 32 MiB\ncgroup 64 MiB" 2, "1/8\n(not run)" 3)
set title ''
plot 'arcs_vs_budget_0.dat' index 0 u 1:2 w l lw 2 lc rgb '#1f77b4' dt 1 t 'uffd', 'arcs_vs_budget_0.dat' index 0 u 1:2:3 w p pt variable ps 1.8 lw 2 lc rgb '#1f77b4' dt 1 notitle, 'arcs_vs_budget_0.dat' index 1 u 1:2 w l lw 2 lc rgb '#2ca02c' dt 1 t 'mmap-random', 'arcs_vs_budget_0.dat' index 1 u 1:2:3 w p pt variable ps 1.8 lw 2 lc rgb '#2ca02c' dt 1 notitle, keyentry w p pt 7 ps 1.5 lw 2 lc rgb 'black' t 'finished: arcs / ingest time'
unset multiplot
