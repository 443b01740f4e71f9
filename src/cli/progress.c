/*
 * progress.c - aisctl's progress bar: one line on stderr, redrawn in place
 * ("\r") at most 10 times a second, erased at the end so the summary line
 * that follows stands alone:
 *
 *   [#########...........]  45%  12.0MiB/26.7MiB  5.1MiB/s  3/10 files  name
 *
 * Guarantees: nothing at all is written unless the bar is on (the caller
 * turns it on only when stderr is a terminal), so output that goes to a
 * file or a pipe never holds control characters; the line never exceeds
 * the terminal's width.
 */
#include <stdio.h>
#include <string.h>
#include <sys/ioctl.h>
#include <unistd.h>

#include "aisd/util.h"
#include "cli.h"
#include "aisd/banned.h"

#define REDRAW_NS (100 * 1000000LL)
#define BAR_CELLS 20

void cli_human_rate(uint64_t n, int64_t ns, char *out, size_t outsz)
{
	double secs = (double)(ns > 0 ? ns : 1) / 1e9;
	cli_human_size((uint64_t)((double)n / secs), out, outsz > 2 ? outsz - 2 : outsz);
	size_t len = strlen(out);
	if (len + 3 <= outsz)
		memcpy(out + len, "/s", 3);
}

static int term_width(void)
{
	struct winsize ws;
	if (ioctl(STDERR_FILENO, TIOCGWINSZ, &ws) == 0 && ws.ws_col >= 20)
		return ws.ws_col;
	return 80;
}

static void draw(struct cli_progress *p, int64_t now)
{
	char line[512], done[32], total[32], rate[32];
	size_t n = 0;
	int w = term_width() - 1; /* the last column would wrap on some terminals */

	cli_human_size(p->done, done, sizeof(done));
	cli_human_rate(p->done, now - p->t0_ns, rate, sizeof(rate));
	if (p->total) {
		uint64_t d = MIN(p->done, p->total);
		int cells = (int)((double)d / (double)p->total * BAR_CELLS);
		line[n++] = '[';
		for (int i = 0; i < BAR_CELLS; i++)
			line[n++] = i < cells ? '#' : '.';
		line[n++] = ']';
		cli_human_size(p->total, total, sizeof(total));
		n += (size_t)snprintf(line + n, sizeof(line) - n, " %3d%%  %s/%s  %s",
		                      (int)((double)d * 100.0 / (double)p->total), done, total, rate);
	} else {
		n += (size_t)snprintf(line + n, sizeof(line) - n, "%s  %s", done, rate);
	}
	if (p->files_total > 1 && n < sizeof(line))
		n += (size_t)snprintf(line + n, sizeof(line) - n, "  %llu/%llu files",
		                      (unsigned long long)p->files_done, (unsigned long long)p->files_total);
	if (p->label && *p->label && n < sizeof(line))
		n += (size_t)snprintf(line + n, sizeof(line) - n, "  %s", p->label);
	n = MIN(n, sizeof(line) - 1);
	if ((int)n > w)
		n = (size_t)w;
	/* \r, the line, then clear to the end of the line (what a longer line left) */
	fprintf(stderr, "\r%.*s\033[K", (int)n, line);
	fflush(stderr);
	p->drawn = true;
	p->drawn_ns = now;
}

void cli_progress_start(struct cli_progress *p, bool on, const char *label, uint64_t total,
                        uint64_t files_total)
{
	*p = (struct cli_progress){.on = on,
	                           .label = label,
	                           .total = total,
	                           .files_total = files_total,
	                           .t0_ns = time_mono_ns()};
}

void cli_progress_set(struct cli_progress *p, uint64_t done, uint64_t files_done)
{
	if (!p || !p->on)
		return;
	p->done = done;
	p->files_done = files_done;
	int64_t now = time_mono_ns();
	if (!p->drawn || now - p->drawn_ns >= REDRAW_NS)
		draw(p, now);
}

void cli_progress_end(struct cli_progress *p)
{
	if (!p || !p->on || !p->drawn)
		return;
	fputs("\r\033[K", stderr);
	fflush(stderr);
	p->drawn = false;
}
