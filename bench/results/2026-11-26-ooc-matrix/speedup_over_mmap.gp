set terminal pngcairo size 900,560 font 'sans,10'
set output 'speedup_over_mmap.png'
set title "Speedup of pheap uffd over the pheap mmap backend\n(same heap code, same memory; finished uffd runs only)"
set logscale x 2
set logscale y 10
set xlabel 'pheap page size (KiB)'
set ylabel 'uffd arcs/s / mmap arcs/s'
set grid
set key outside right
set xrange [2:2048]
set arrow from 2,1 to 2048,1 nohead dt 2 lc rgb 'black'
set arrow from 2,5 to 2048,5 nohead dt 3 lc rgb 'red'
set label 'target 5x (out of core)' at 2.2,6 tc rgb 'red'
plot 'speedup_half_s18_t2.dat' u 1:2 w lp lw 2 pt 5 t 'half S18 2t (mmap DNF: lower bound) sparse', 'speedup_half_s18_t2.dat' u 1:3 w lp lw 1 dt 2 pt 5 t 'half S18 2t (mmap DNF: lower bound) 1file', 'speedup_half_s20_t2.dat' u 1:2 w lp lw 2 pt 6 t 'half S20 2t (mmap DNF: lower bound) sparse', 'speedup_half_s20_t2.dat' u 1:3 w lp lw 1 dt 2 pt 6 t 'half S20 2t (mmap DNF: lower bound) 1file', 'speedup_quarter_s18_t2.dat' u 1:2 w lp lw 2 pt 7 t 'quarter S18 2t (mmap DNF: lower bound) sparse', 'speedup_quarter_s18_t2.dat' u 1:3 w lp lw 1 dt 2 pt 7 t 'quarter S18 2t (mmap DNF: lower bound) 1file', 'speedup_quarter_s20_t2.dat' u 1:2 w lp lw 2 pt 8 t 'quarter S20 2t (mmap DNF: lower bound) sparse', 'speedup_quarter_s20_t2.dat' u 1:3 w lp lw 1 dt 2 pt 8 t 'quarter S20 2t (mmap DNF: lower bound) 1file', 'speedup_eighth_s18_t2.dat' u 1:2 w lp lw 2 pt 9 t 'eighth S18 2t (mmap DNF: lower bound) sparse', 'speedup_eighth_s18_t2.dat' u 1:3 w lp lw 1 dt 2 pt 9 t 'eighth S18 2t (mmap DNF: lower bound) 1file', 'speedup_eighth_s20_t2.dat' u 1:2 w lp lw 2 pt 10 t 'eighth S20 2t (mmap DNF: lower bound) sparse', 'speedup_eighth_s20_t2.dat' u 1:3 w lp lw 1 dt 2 pt 10 t 'eighth S20 2t (mmap DNF: lower bound) 1file'
