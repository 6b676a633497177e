set terminal pngcairo size 900,500
set output "table1.png"
set title "Megatron-LM SC'21 Table 1 (Selene, A100): TFLOP/s per GPU, measured vs commstack train"
set xlabel "GPUs"
set ylabel "TFLOP/s per GPU (with recomputation)"
set logscale x 2
set yrange [0:250]
set key bottom right
set grid
plot "table.dat" using 2:3 with linespoints pt 7 title "measured (paper)", \
     "table.dat" using 2:4 with linespoints pt 5 title "predicted (GEMM + HBM efficiency fitted on rows 1-3)", \
     "table.dat" using 2:5 with points pt 4 title "leave-one-out prediction"
