set terminal pngcairo size 1000,500
set output "nemo-h100.png"
set title "NeMo 24.07 on DGX H100 (FP8 pre-training): tokens/s per GPU, measured vs commstack train"
set ylabel "tokens/s per GPU (log)"
set logscale y
set style data histograms
set style histogram clustered gap 1
set style fill solid 0.8 border -1
set xtics rotate by -30
set key top right
set grid y
plot "table.dat" using 2:xtic(1) title "measured (NeMo docs)", \
     "" using 3 title "predicted (efficiencies fitted on GPT3-5B, LLAMA2-7B, LLAMA3-8B)", \
     "" using 4 title "leave-one-out prediction"
