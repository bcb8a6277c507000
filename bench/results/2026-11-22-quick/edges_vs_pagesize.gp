set terminal pngcairo size 1500,420 font 'sans,9'
set output 'edges_vs_pagesize.png'
set multiplot layout 1,3 title "Graph construction: arcs/s vs pheap page size (kernel-mmap systems use 4 KiB pages: flat lines)\ntriangles / dotted: did not finish (arcs done / timeout, an upper bound); missing uffd points: OOM-killed or disk guard (summary.txt)"
set logscale x 2
set logscale y 10
set xlabel 'pheap page size (KiB)'
set ylabel 'arcs/s'
set key top right font ',8' samplen 3
set grid
set xrange [2:2048]
set format y '10^{%T}'
set yrange [1e3:1e9]
set title 'incore, SCALE 17, 2 threads'
plot 'pagesize_incore_s17.dat' u 1:2 w lp lw 2 pt 7 lc 1 t 'uffd+SparseStore', '' u 1:3 w p pt 11 ps 1.5 lc 1 notitle, '' u 1:4 w lp lw 2 pt 5 lc 2 t 'uffd one file', '' u 1:5 w p pt 11 ps 1.5 lc 2 notitle, '' u 1:6 w l lw 2 dt 2 lc 3 t 'mmap backend', '' u 1:7 w l lw 2 dt 3 lc 3 t 'mmap backend DNF (<=)', '' u 1:8 w l lw 2 dt 2 lc 4 t 'Boost.IP mmf', '' u 1:9 w l lw 2 dt 3 lc 4 t 'Boost.IP DNF (<=)', '' u 1:10 w l lw 2 dt 4 lc 6 t 'mmap backend + MADV\_RANDOM', '' u 1:11 w l lw 2 dt 3 lc 6 t 'mmap+MADV\_RANDOM DNF (<=)'
set title 'quarter, SCALE 16, 2 threads'
plot 'pagesize_quarter_s16.dat' u 1:2 w lp lw 2 pt 7 lc 1 t 'uffd+SparseStore', '' u 1:3 w p pt 11 ps 1.5 lc 1 notitle, '' u 1:4 w lp lw 2 pt 5 lc 2 t 'uffd one file', '' u 1:5 w p pt 11 ps 1.5 lc 2 notitle, '' u 1:6 w l lw 2 dt 2 lc 3 t 'mmap backend', '' u 1:7 w l lw 2 dt 3 lc 3 t 'mmap backend DNF (<=)', '' u 1:8 w l lw 2 dt 2 lc 4 t 'Boost.IP mmf', '' u 1:9 w l lw 2 dt 3 lc 4 t 'Boost.IP DNF (<=)', '' u 1:10 w l lw 2 dt 4 lc 6 t 'mmap backend + MADV\_RANDOM', '' u 1:11 w l lw 2 dt 3 lc 6 t 'mmap+MADV\_RANDOM DNF (<=)'
set title 'eighth, SCALE 16, 2 threads'
plot 'pagesize_eighth_s16.dat' u 1:2 w lp lw 2 pt 7 lc 1 t 'uffd+SparseStore', '' u 1:3 w p pt 11 ps 1.5 lc 1 notitle, '' u 1:4 w lp lw 2 pt 5 lc 2 t 'uffd one file', '' u 1:5 w p pt 11 ps 1.5 lc 2 notitle, '' u 1:6 w l lw 2 dt 2 lc 3 t 'mmap backend', '' u 1:7 w l lw 2 dt 3 lc 3 t 'mmap backend DNF (<=)', '' u 1:8 w l lw 2 dt 2 lc 4 t 'Boost.IP mmf', '' u 1:9 w l lw 2 dt 3 lc 4 t 'Boost.IP DNF (<=)', '' u 1:10 w l lw 2 dt 4 lc 6 t 'mmap backend + MADV\_RANDOM', '' u 1:11 w l lw 2 dt 3 lc 6 t 'mmap+MADV\_RANDOM DNF (<=)'
unset multiplot
