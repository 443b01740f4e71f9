# scale.gp - scale.sh's curve: PUT and GET rates straight to one target
# against the objects it holds (log scale), each point the median of the
# checkpoint's rounds; the hot set's GETs and the store's own reads beside.
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
     dat using 1:3 with linespoints lw 2 pt 5 title "GET (random over all, verified)", \
     dat using 1:8 with linespoints lw 2 pt 9 title "GET (random over a 10k hot set)", \
     dat using 1:9 with linespoints lw 1 dt 2 pt 4 title "store alone, no HTTP (random over all)"
