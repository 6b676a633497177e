# Redraw with `gnuplot slowdown.gp` in this folder (run.sh does it).
set terminal pngcairo size 1000,600 font ',10'
set output 'slowdown.png'
set datafile separator ','
set title "1 GiB collectives on 32 DGX H100 nodes, rail leaves of 8 nodes: time against 1:1 uplinks\nstack model (contention layer) vs SimGrid fabric simulation"
set xlabel 'leaf oversubscription (down:up)'
set ylabel 'time / time at 1:1'
set logscale x 2
set xrange [0.9:9]
set xtics ('1:1' 1, '2:1' 2, '4:1' 4, '8:1' 8)
set key left top
set grid
base(p, col) = 0
# first rows (oversubscription 1) are rows 0..2 of the data: alltoall, tree, ring
stats 'table.csv' every ::1::1 using 3 nooutput name 'A_STACK'
stats 'table.csv' every ::1::1 using 5 nooutput name 'A_SIM'
stats 'table.csv' every ::2::2 using 3 nooutput name 'T_STACK'
stats 'table.csv' every ::2::2 using 5 nooutput name 'T_SIM'
stats 'table.csv' every ::3::3 using 3 nooutput name 'R_STACK'
stats 'table.csv' every ::3::3 using 5 nooutput name 'R_SIM'
plot 'table.csv' every 3::1 using 1:($3/A_STACK_max) with linespoints lw 2 pt 7 lc rgb '#c00000' title 'alltoall, stack model', \
     ''          every 3::1 using 1:($5/A_SIM_max) with linespoints lw 1 pt 6 dt 2 lc rgb '#c00000' title 'alltoall, SimGrid', \
     ''          every 3::2 using 1:($3/T_STACK_max) with linespoints lw 2 pt 5 lc rgb '#4472c4' title 'Tree all-reduce, stack model', \
     ''          every 3::2 using 1:($5/T_SIM_max) with linespoints lw 1 pt 4 dt 2 lc rgb '#4472c4' title 'Tree all-reduce, SimGrid', \
     ''          every 3::3 using 1:($3/R_STACK_max) with linespoints lw 2 pt 9 lc rgb '#70ad47' title 'Ring all-reduce, stack model', \
     ''          every 3::3 using 1:($5/R_SIM_max) with linespoints lw 1 pt 8 dt 2 lc rgb '#70ad47' title 'Ring all-reduce, SimGrid'
