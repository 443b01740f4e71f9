# rebalance.gp - the timeline of rebalance.sh's step 3: a 4th target joins
# under a GET load; the bytes the rebalance moved (left axis) and the GETs
# the gateway answered per second (right axis) against time.
# usage: gnuplot -e "dat='bench-rebalance-timeline.dat'; out='rebalance-timeline.png'" rebalance.gp
set terminal pngcairo size 1000,480 font ",11"
set output out
set grid
set key top left
set xlabel "seconds (the 4th target starts at t = 1)"
set ylabel "MiB moved by the rebalance"
set y2label "GETs per second through the gateway"
set ytics nomirror
set y2tics
set yrange [0:*]
set y2range [0:*]
info = system("sed -n '1s/^# //p' " . dat)
set title "A target joins under a GET load\n{/*0.8 " . info . "}"
plot dat using 1:2 axes x1y1 with lines lw 2 title "moved (MiB, cumulative)", \
     dat using 1:3 axes x1y2 with linespoints lw 1 pt 7 ps 0.5 title "GETs/s"
