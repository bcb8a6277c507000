set terminal pngcairo size 1200,500 font 'sans,9'
set output 'fault_cost_vs_pagesize.png'
set multiplot layout 1,2 title 'Fault cost vs page size (bench/pager/fault\_bench): ns per 4 KiB touched (lower is better)'
set logscale x 2
set logscale y 10
set xlabel 'page size (KiB)'
set ylabel 'ns per 4 KiB'
set grid
set key top left font 'sans,8'
set xrange [2:4096]
set format y '10^{%T}'
set title 'in core: pheap (lines) vs kernel mmap (triangles, 4 KiB)'
plot 'fault_floor_uffd_copy_1thread_seq_read.dat' u 1:2 w lp lw 2 dt 2 pt 6 lc 6 t 'floor seq read (bare uffd floor)', 'fault_mmap_in_core_rand_read.dat' u 1:2 w p pt 9 ps 1.8 lc 2 t 'mmap rand read', 'fault_mmap_in_core_rand_write.dat' u 1:2 w p pt 9 ps 1.8 lc 4 t 'mmap rand write', 'fault_mmap_in_core_seq_read.dat' u 1:2 w p pt 9 ps 1.8 lc 1 t 'mmap seq read', 'fault_mmap_in_core_seq_write.dat' u 1:2 w p pt 9 ps 1.8 lc 3 t 'mmap seq write', 'fault_pheap_in_core_rand_read.dat' u 1:2 w lp lw 2 pt 7 lc 2 t 'pheap rand read', 'fault_pheap_in_core_rand_write.dat' u 1:2 w lp lw 2 pt 7 lc 4 t 'pheap rand write', 'fault_pheap_in_core_seq_read.dat' u 1:2 w lp lw 2 pt 7 lc 1 t 'pheap seq read', 'fault_pheap_in_core_seq_write.dat' u 1:2 w lp lw 2 pt 7 lc 3 t 'pheap seq write', 'fault_pheap_zero_fill_seq_read.dat' u 1:2 w lp lw 2 dt 2 pt 6 lc 7 t 'pheap seq read (zero fill)'
set title 'out of core (buffer = data/8): pheap (lines) vs kernel mmap (triangles, 4 KiB)'
plot 'fault_mmap_out_of_core_rand_read.dat' u 1:2 w p pt 9 ps 1.8 lc 2 t 'mmap rand read', 'fault_mmap_out_of_core_rand_write.dat' u 1:2 w p pt 9 ps 1.8 lc 4 t 'mmap rand write', 'fault_mmap_out_of_core_seq_read.dat' u 1:2 w p pt 9 ps 1.8 lc 1 t 'mmap seq read', 'fault_mmap_out_of_core_seq_write.dat' u 1:2 w p pt 9 ps 1.8 lc 3 t 'mmap seq write', 'fault_pheap_out_of_core_rand_read.dat' u 1:2 w lp lw 2 pt 7 lc 2 t 'pheap rand read', 'fault_pheap_out_of_core_rand_write.dat' u 1:2 w lp lw 2 pt 7 lc 4 t 'pheap rand write', 'fault_pheap_out_of_core_seq_read.dat' u 1:2 w lp lw 2 pt 7 lc 1 t 'pheap seq read', 'fault_pheap_out_of_core_seq_write.dat' u 1:2 w lp lw 2 pt 7 lc 3 t 'pheap seq write'
unset multiplot
