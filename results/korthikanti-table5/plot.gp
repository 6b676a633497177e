set terminal pngcairo size 1000,500
set output "table5.png"
set title "Korthikanti et al. Table 5 (Selene, A100): seconds per iteration, measured vs commstack train"
set ylabel "iteration time (s)"
set logscale y
set style data histograms
set style histogram clustered gap 1
set style fill solid 0.8 border -1
set xtics rotate by -30
set key top left
set grid y
plot "table.dat" using 3:xtic(2) title "measured (paper)", "" using 4 title "predicted (profile fitted on SC'21 T1 rows 1-3)"
