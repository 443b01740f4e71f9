# getbatch.gp - the curves of getbatch.sh: GetBatch's speedup over one GET
# per object against the batch size, one line per entry (object) size; left
# the Python client (GetBatch vs GETs straight to the owners), right curl.
# usage: gnuplot -e "dat='bench-getbatch.dat'; out='getbatch-speedup.png'" getbatch.gp
set terminal pngcairo size 1000,480 font ",11"
set output out
set logscale x 2
set offsets graph 0.04, graph 0.04, 0, 0
set grid
set key top left
set xlabel "objects per batch"
set ylabel "speedup (objects/s, GetBatch / GETs)"
set yrange [0:*]
set style data linespoints
stats dat using 1 nooutput
nb = STATS_blocks
info = system("sed -n '1s/^# //p' " . dat)
sizes = system("awk '!/^#/ && NF { print $2 }' " . dat . " | uniq")
set multiplot layout 1,2 title "GetBatch vs one GET per object, straight to the owner target\n{/*0.8 " . info . "}"
set title "Python client (http.client)"
plot for [i=0:nb-1] dat index i using 3:5 title word(sizes, i + 1) . " objects" lw 2
set title "curl (libcurl)"
plot for [i=0:nb-1] dat index i using 3:6 title word(sizes, i + 1) . " objects" lw 2
unset multiplot
