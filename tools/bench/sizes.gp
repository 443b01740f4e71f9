# sizes.gp - the curves of sizes.sh: GET and PUT throughput (MiB/s) against
# object size, one line per way (direct, gateway, S3, nginx), both axes
# logarithmic. usage: gnuplot -e "dat='bench-sizes.dat'; outdir='DIR'" sizes.gp
set terminal pngcairo size 900,560 font ",11"
set datafile missing "n/a"
set logscale xy 2
set offsets graph 0.04, graph 0.04, 0, 0
set grid
set key top left
set xlabel "object size"
set ylabel "MiB/s"
set format y "%.0f"
set style data linespoints
info = system("sed -n '1s/^# //p' " . dat)
do for [op in "get put"] {
	set output outdir . "/sizes-" . op . ".png"
	set title (op eq "get" ? "GET" : "PUT") . " throughput against object size\n{/*0.8 " . info . "}"
	c = op eq "get" ? 3 : 7
	plot dat using 1:c:xtic(2) title "aisd direct" lw 2, \
	     ''  using 1:c+1 title "aisd via gateway" lw 2, \
	     ''  using 1:c+2 title "S3 via gateway" lw 2, \
	     ''  using 1:c+3 title "nginx" lw 2 dt 2
}
