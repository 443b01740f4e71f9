/*
 * log.c - leveled logging and the access log (see log.h). Lines are
 * written with one write(2) each, so lines from many threads never
 * interleave; the level, the access switch and the file descriptors are
 * atomics, so they change at run time without a lock.
 */
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "aisd/log.h"
#include "aisd/status.h"
#include "aisd/banned.h"

static _Atomic int g_level = LOG_INFO;
static _Atomic int g_fd = 2;
static char g_node[64] = "aisd";
static char g_path[4096];
static _Thread_local const char *t_action;
static _Thread_local const char *t_request;
static atomic_ulong g_errors, g_warns;
static atomic_bool g_access_on;
static _Atomic int g_access_fd = -1; /* -1: the main log */
static char g_access_path[4096];
static pthread_mutex_t g_open_mu = PTHREAD_MUTEX_INITIALIZER;

static const char levels[] = "DIWE";

void log_init(const char *node_id, enum log_level level, const char *path)
{
	if (node_id)
		snprintf(g_node, sizeof(g_node), "%s", node_id);
	g_level = level;
	if (path && *path) {
		snprintf(g_path, sizeof(g_path), "%s", path);
		log_reopen();
	}
}

/* Opens path for appending and swaps it in for *slot. "-" or "stderr"
 * means standard error. The old descriptor is closed: a thread writing to
 * it at that instant may lose its line (rotation, not a steady state). */
static int swap_file(_Atomic int *slot, const char *path)
{
	int fd = 2;
	if (strcmp(path, "-") && strcmp(path, "stderr")) {
		/* a new log is 0640 whatever the umask (aisd's is 077): logs hold
		 * request targets, for the daemon's user and its group */
		fd = open(path, O_WRONLY | O_CREAT | O_EXCL | O_APPEND | O_CLOEXEC, 0640);
		if (fd >= 0)
			fchmod(fd, 0640);
		else if (errno == EEXIST)
			fd = open(path, O_WRONLY | O_APPEND | O_CLOEXEC);
		struct stat st;
		if (fd >= 0 && fstat(fd, &st) == 0 && S_ISREG(st.st_mode) && (st.st_mode & 0007))
			fchmod(fd, st.st_mode & 0770); /* one made world-readable by an older version */
		if (fd < 0)
			return AIS_ERR;
	}
	int old = atomic_exchange(slot, fd);
	if (old > 2)
		close(old);
	return AIS_OK;
}

void log_reopen(void)
{
	pthread_mutex_lock(&g_open_mu);
	if (g_path[0] && swap_file(&g_fd, g_path) != AIS_OK)
		log_warn("cannot open log file %s", g_path);
	if (g_access_path[0] && swap_file(&g_access_fd, g_access_path) != AIS_OK)
		log_warn("cannot open access log file %s", g_access_path);
	pthread_mutex_unlock(&g_open_mu);
}

int log_access_init(bool on, const char *path)
{
	int rc = AIS_OK;
	pthread_mutex_lock(&g_open_mu);
	snprintf(g_access_path, sizeof(g_access_path), "%s", path ? path : "");
	if (g_access_path[0])
		rc = swap_file(&g_access_fd, g_access_path);
	pthread_mutex_unlock(&g_open_mu);
	g_access_on = on;
	return rc;
}

void log_access_set(bool on) { g_access_on = on; }
bool log_access_on(void) { return atomic_load_explicit(&g_access_on, memory_order_relaxed); }
void log_set_request(const char *id) { t_request = id; }
const char *log_request(void) { return t_request; }
unsigned long log_warn_count(void) { return g_warns; }

void log_set_level(enum log_level level) { g_level = level; }
enum log_level log_get_level(void) { return (enum log_level)g_level; }
void log_set_action(const char *action) { t_action = action; }

int log_parse_level(const char *s, enum log_level *out)
{
	static const char *const names[] = {"debug", "info", "warn", "error"};
	for (int i = 0; i < 4; i++)
		if (!strcasecmp(s, names[i])) {
			*out = (enum log_level)i;
			return AIS_OK;
		}
	return AIS_ERR;
}

unsigned long log_error_count(void) { return g_errors; }

/* "TIME L node[tid] [req=ID] " */
static size_t prefix(char *line, size_t cap, char letter)
{
	struct timespec ts;
	struct tm tm;
	clock_gettime(CLOCK_REALTIME, &ts);
	gmtime_r(&ts.tv_sec, &tm);
	size_t n = (size_t)snprintf(line, cap, "%04d-%02d-%02dT%02d:%02d:%02d.%03ldZ %c %s[%ld] ",
				    tm.tm_year + 1900, tm.tm_mon + 1, tm.tm_mday, tm.tm_hour, tm.tm_min,
				    tm.tm_sec, ts.tv_nsec / 1000000, letter, g_node, (long)syscall(SYS_gettid));
	if (t_request && n < cap)
		n += (size_t)snprintf(line + n, cap - n, "req=%s ", t_request);
	return n;
}

static void emit(enum log_level level, const char *suffix, const char *fmt, va_list ap)
{
	char line[2048];
	size_t n;

	if ((int)level < g_level)
		return;
	if (level == LOG_ERROR)
		g_errors++;
	else if (level == LOG_WARN)
		g_warns++;
	n = prefix(line, sizeof(line), levels[level]);
	if (t_action && n < sizeof(line))
		n += (size_t)snprintf(line + n, sizeof(line) - n, "%s: ", t_action);
	if (n < sizeof(line))
		n += (size_t)vsnprintf(line + n, sizeof(line) - n, fmt, ap);
	if (suffix && n < sizeof(line))
		n += (size_t)snprintf(line + n, sizeof(line) - n, ": %s", suffix);
	if (n >= sizeof(line) - 1)
		n = sizeof(line) - 2;
	line[n++] = '\n';
	ssize_t w = write(g_fd, line, n);
	(void)w;
}

void log_access(const char *fmt, ...)
{
	char line[2048];
	va_list ap;
	size_t n = prefix(line, sizeof(line), 'A');
	va_start(ap, fmt);
	if (n < sizeof(line))
		n += (size_t)vsnprintf(line + n, sizeof(line) - n, fmt, ap);
	va_end(ap);
	if (n >= sizeof(line) - 1)
		n = sizeof(line) - 2;
	line[n++] = '\n';
	int fd = g_access_fd;
	ssize_t w = write(fd >= 0 ? fd : g_fd, line, n);
	(void)w;
}

void log_vmsg(enum log_level level, const char *fmt, va_list ap) { emit(level, NULL, fmt, ap); }

void log_msg(enum log_level level, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	emit(level, NULL, fmt, ap);
	va_end(ap);
}

/* Logs fmt with ": strerror(errno)" appended. */
static void emit_errno(enum log_level level, const char *fmt, va_list ap)
{
	char eb[128];
	emit(level, strerror_r(errno, eb, sizeof(eb)), fmt, ap);
}

void log_warn(const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	emit_errno(LOG_WARN, fmt, ap);
	va_end(ap);
}

void log_err(const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	emit_errno(LOG_ERROR, fmt, ap);
	va_end(ap);
}

void fatal(const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	emit_errno(LOG_ERROR, fmt, ap);
	va_end(ap);
	exit(1);
}

void fatalx(const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	emit(LOG_ERROR, NULL, fmt, ap);
	va_end(ap);
	exit(1);
}
