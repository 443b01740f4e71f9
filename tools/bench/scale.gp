# scale.gp - scale.sh's curve: PUT and GET rates straight to one target
# against the objects it holds (log scale), each point the median of the
# checkpoint's rounds.
# usage: gnuplot -e "dat='bench-scale.dat'; out='scale-rates.png'" scale.gp
set terminal pngcairo size 1000,480 font ",11"
set output out
set grid
set key top right
set logscale x
set format x "%.0s%c"
set xlabel "objects on the target"
set ylabel "requests per second"
set yrange [0:*]
set title "One target (2 mountpaths), small objects: rate against object count"
plot dat using 1:2 with linespoints lw 2 pt 7 title "PUT (new objects)", \
     dat using 1:3 with linespoints lw 2 pt 5 title "GET (random, verified)"
