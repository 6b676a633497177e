# Written by commstack whatif; run `gnuplot speedup.gp` in this folder to redraw.
set terminal pngcairo size 1200,1000 font ',10'
set output 'speedup.png'
set datafile separator '\t'
set multiplot layout 2,1 title 'what-if oversubscription-1024-h100: GPT-3 175B on 1024 H100 (TP8 PP8 DP16): rail-optimized vs plain fat tree, 1:1 / 2:1 / 4:1 leaf uplinks' font ',11'
set style data histograms
set style fill solid 0.85 border -1
set boxwidth 0.7
set xtics rotate by -15 scale 0
set grid ytics
set key outside right top
set ylabel 'speedup over the baseline (x)'
set yrange [0:*]
set offsets 0,0,0.15,0
plot 'speedup.dat' using 3:xtic(2) title 'speedup' lc rgb '#4472c4', \
     'speedup.dat' using 1:3:(sprintf('%.3f', $3)) with labels offset 0,0.8 notitle
set style histogram rowstacked
set ylabel 'iteration time, s (critical rank)'
set offsets 0,0,0,0
plot 'speedup.dat' using 5:xtic(2) title 'compute' lc rgb '#7f7f7f', \
     'speedup.dat' using 6 title 'tp' lc rgb '#4472c4', \
     'speedup.dat' using 7 title 'cp' lc rgb '#70ad47', \
     'speedup.dat' using 8 title 'ep' lc rgb '#ffc000', \
     'speedup.dat' using 9 title 'dp' lc rgb '#ed7d31', \
     'speedup.dat' using 10 title 'pp' lc rgb '#a5a5a5', \
     'speedup.dat' using 11 title 'tail' lc rgb '#264478'
unset multiplot
