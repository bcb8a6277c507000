set terminal pngcairo size 1200,420 font 'sans,9'
set output 'persist.png'
set multiplot layout 1,3
set logscale x 2
set logscale y 10
set grid
set key top left
set xlabel 'MiB'
set ylabel 'seconds'
set title 'flush() vs dirty MiB (+ dashed: next empty flush)'
plot 'persist_flush_uffd_4096.dat' u 1:2 w lp lw 2 t 'uffd 4 KiB', 'persist_flushnext_uffd_4096.dat' u 1:2 w lp lw 1 dt 2 t 'uffd 4 KiB next', 'persist_flush_uffd_65536.dat' u 1:2 w lp lw 2 t 'uffd 64 KiB', 'persist_flushnext_uffd_65536.dat' u 1:2 w lp lw 1 dt 2 t 'uffd 64 KiB next', 'persist_flush_uffd_1048576.dat' u 1:2 w lp lw 2 t 'uffd 1 MiB', 'persist_flushnext_uffd_1048576.dat' u 1:2 w lp lw 1 dt 2 t 'uffd 1 MiB next', 'persist_flush_mmap_4096.dat' u 1:2 w lp lw 2 t 'mmap 4 KiB', 'persist_flushnext_mmap_4096.dat' u 1:2 w lp lw 1 dt 2 t 'mmap 4 KiB next', 'persist_flush_mmap_65536.dat' u 1:2 w lp lw 2 t 'mmap 64 KiB', 'persist_flushnext_mmap_65536.dat' u 1:2 w lp lw 1 dt 2 t 'mmap 64 KiB next', 'persist_flush_mmap_1048576.dat' u 1:2 w lp lw 2 t 'mmap 1 MiB', 'persist_flushnext_mmap_1048576.dat' u 1:2 w lp lw 1 dt 2 t 'mmap 1 MiB next'
set title 'open\_only vs datastore MiB'
plot 'persist_reopen_rw_uffd_4096.dat' u 1:2 w lp lw 2 t 'uffd 4 KiB', 'persist_reopen_rw_uffd_65536.dat' u 1:2 w lp lw 2 t 'uffd 64 KiB', 'persist_reopen_rw_uffd_1048576.dat' u 1:2 w lp lw 2 t 'uffd 1 MiB', 'persist_reopen_rw_mmap_4096.dat' u 1:2 w lp lw 2 t 'mmap 4 KiB', 'persist_reopen_rw_mmap_65536.dat' u 1:2 w lp lw 2 t 'mmap 64 KiB', 'persist_reopen_rw_mmap_1048576.dat' u 1:2 w lp lw 2 t 'mmap 1 MiB'
set title 'snapshot() vs datastore MiB'
plot 'persist_snapshot_uffd_4096.dat' u 1:2 w lp lw 2 t 'uffd 4 KiB', 'persist_snapshot_uffd_65536.dat' u 1:2 w lp lw 2 t 'uffd 64 KiB', 'persist_snapshot_uffd_1048576.dat' u 1:2 w lp lw 2 t 'uffd 1 MiB', 'persist_snapshot_mmap_4096.dat' u 1:2 w lp lw 2 t 'mmap 4 KiB', 'persist_snapshot_mmap_65536.dat' u 1:2 w lp lw 2 t 'mmap 64 KiB', 'persist_snapshot_mmap_1048576.dat' u 1:2 w lp lw 2 t 'mmap 1 MiB'
unset multiplot
