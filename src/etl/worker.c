/*
 * worker.c - one transformer's worker processes on a target: the sandbox
 * they start in, the protocol spoken to them, their restarts.
 *
 * One supervisor for both protocols (spec.comm): only the exchange
 * differs. stdio: a framed request on the worker's stdin, a framed answer
 * on its stdout. http: aisd binds a unix socket for each worker (in a
 * private 0700 directory under $TMPDIR or /tmp) and hands the listening
 * socket to the worker as descriptor 3 (env AISD_ETL_FD=3, its path in
 * AISD_ETL_SOCKET); each request is "PUT / HTTP/1.1" with the object's
 * bytes and the headers Ais-Etl-Meta and Ais-Etl-Args (percent-encoded),
 * on a connection kept open across requests (rule 5); the answer is an
 * HTTP/1.x response (answer.c reads it) whose status and body play the
 * stdio frame's parts. A worker that is not serving (exited: the connect
 * is refused), answers garbage, or hangs fails the request exactly as in
 * stdio.
 *
 * NOTES ON THE DESIGN
 *  1. A worker serves one request at a time; a request takes a free live
 *     worker, else starts a dead one whose back-off has passed, else waits
 *     (at most the transformer's timeout) for one to be free.
 *  2. Every exchange is bounded: the request is written while the answer
 *     is read (xchg.c: a worker may answer before it has read all) until
 *     the transformer's timeout; the answer is at most
 *     etl.max_output bytes. A worker that fails any of this (exits,
 *     hangs, writes a malformed or oversize frame) is killed with its
 *     process group and reaped at once: nothing is left behind, and the
 *     next request starts a new one after a back-off (100 ms doubling to
 *     5 s, back to 100 ms after a good answer).
 *  3. A worker never sees a path of the store: in its mount namespace the
 *     mountpaths and the node directory are covered by empty read-only
 *     tmpfs; it gets an object's bytes on a pipe.
 *  4. Between fork and exec the child makes only system calls (no malloc,
 *     no lock): argv, envp and paths are built before the fork.
 *  5. http: each worker has a pool of at most one idle connection (it
 *     serves one request at a time, rule 1, so one is all a request can
 *     use). It is kept after an answer that allows it (HTTP/1.1 without
 *     "Connection: close", a length-delimited body, nothing past it, the
 *     whole request read); closed otherwise, and closed with the worker
 *     when it is killed or found exited. A kept connection the worker
 *     closed before answering is replaced by a new one, once per request.
 *  6. An object goes to a worker from its file: never the whole input in
 *     aisd's memory (sendfile to a socket, splice to a pipe; a piece whose
 *     pages are not cached through a 64 KiB bounce buffer). The answer is
 *     read straight into the buffer sent to the client, or, for a client's
 *     GET (a 200 answer of ETL_STREAM_MIN bytes or more, with a declared
 *     length, the whole request sent), left in the worker's pipe or
 *     socket once its head is read and streamed to the client from there
 *     (stream.c): the worker stays busy until its last byte is out.
 */
#include <errno.h>
#include <fcntl.h>
#include <dirent.h>
#include <grp.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/mount.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <unistd.h>

#include "aisd/log.h"
#include "aisd/status.h"
#include "aisd/util.h"
#include "etl_int.h"
#include "aisd/banned.h"

#define BACKOFF_MIN_MS 100
#define BACKOFF_MAX_MS 5000
#define LOG_MAX (1 << 20) /* a worker's log: truncated at a start past half of it; RLIMIT_FSIZE */
#define NOBODY 65534

static pthread_mutex_t sockdir_mu = PTHREAD_MUTEX_INITIALIZER;
static char sockdir[40]; /* http workers' sockets; made on first use */
static unsigned sockseq;  /* their names: w<seq>.sock, never reused */

static void child_fail(const char *what)
{
	static const char pfx[] = "aisd etl: worker sandbox: ";
	(void)!write(2, pfx, sizeof(pfx) - 1);
	(void)!write(2, what, strlen(what));
	(void)!write(2, "\n", 1);
	_exit(126);
}

/* Rule 4. Never returns. */
static void child(const etl_t *e, int in, int out, int logfd, int lfd, char *const argv[], char *const envp[])
{
	const etl_cfg_t *g = &etl_cfg;
	bool root = getuid() == 0;
	if (dup2(in, 0) < 0 || dup2(out, 1) < 0 || dup2(logfd, 2) < 0)
		_exit(127);
	if (lfd >= 0 && (lfd == 3 ? fcntl(3, F_SETFD, 0) : dup2(lfd, 3)) < 0) /* http: its listening socket */
		_exit(127);
	int first = lfd >= 0 ? 4 : 3;
	if (close_range((unsigned)first, ~0U, 0) != 0) { /* before Linux 5.9: every descriptor the limit allows */
		struct rlimit nf;
		int top = getrlimit(RLIMIT_NOFILE, &nf) == 0 && nf.rlim_cur < (1u << 20) ? (int)nf.rlim_cur : 1 << 20;
		for (int fd = first; fd < top; fd++)
			close(fd);
	}
	setpgid(0, 0);
	int flags = CLONE_NEWNS | (e->spec.net ? 0 : CLONE_NEWNET) | (root ? 0 : CLONE_NEWUSER);
	bool ns = unshare(flags) == 0;
	if (!ns && !g->weak)
		child_fail("cannot make mount/network namespaces (etl.allow_weak_isolation is off)");
	if (ns) {
		if (mount(NULL, "/", NULL, MS_REC | MS_PRIVATE, NULL) != 0 && !g->weak)
			child_fail("cannot make / private in the mount namespace");
		for (size_t i = 0; i < g->nhide; i++)
			if (mount("tmpfs", g->hide[i], "tmpfs", MS_RDONLY | MS_NOSUID | MS_NODEV | MS_NOEXEC,
				  "size=4k,mode=0555") != 0 &&
			    !g->weak)
				child_fail("cannot hide a mountpath");
	}
	if (root && (setgroups(0, NULL) != 0 || setgid(NOBODY) != 0 || setuid(NOBODY) != 0))
		child_fail("cannot become nobody");
	struct rlimit r;
	if (g->mem) {
		r.rlim_cur = r.rlim_max = g->mem;
		setrlimit(RLIMIT_AS, &r);
	}
	if (g->cpu_s) {
		r.rlim_cur = r.rlim_max = g->cpu_s;
		setrlimit(RLIMIT_CPU, &r);
	}
	r.rlim_cur = r.rlim_max = LOG_MAX;
	setrlimit(RLIMIT_FSIZE, &r);
	r.rlim_cur = r.rlim_max = 0;
	setrlimit(RLIMIT_CORE, &r);
	signal(SIGXFSZ, SIG_IGN); /* a full log: writes fail, the worker lives */
	signal(SIGPIPE, SIG_DFL);
	if (chdir("/") != 0)
		_exit(127);
	execve("/bin/sh", argv, envp);
	child_fail("cannot exec /bin/sh");
}

void etl_log_path(const etl_t *e, unsigned i, char *out, size_t outsz)
{
	snprintf(out, outsz, "%s/etl-logs/%s.%u.log", etl_cfg.dir, e->spec.name, i);
}

/* The directory of the http workers' sockets, made once. AIS_OK or AIS_ERR
 * (msg). */
static int sockdir_make(buf_t *msg)
{
	pthread_mutex_lock(&sockdir_mu);
	if (!sockdir[0]) {
		const char *t = getenv("TMPDIR");
		char tmpl[40];
		if (!t || !*t || strlen(t) > 24)
			t = "/tmp";
		snprintf(tmpl, sizeof(tmpl), "%s/aisd-etl-XXXXXX", t);
		if (mkdtemp(tmpl))
			snprintf(sockdir, sizeof(sockdir), "%s", tmpl);
		else
			buf_addf(msg, "cannot make a directory for its socket (%s): %s", tmpl, strerror(errno));
	}
	int rc = sockdir[0] ? AIS_OK : AIS_ERR;
	pthread_mutex_unlock(&sockdir_mu);
	return rc;
}

void etl_sockdir_remove(void)
{
	pthread_mutex_lock(&sockdir_mu);
	if (sockdir[0]) {
		DIR *d = opendir(sockdir);
		struct dirent *de;
		char p[320];
		while (d && (de = readdir(d)))
			if (de->d_name[0] != '.') {
				snprintf(p, sizeof(p), "%s/%s", sockdir, de->d_name);
				unlink(p);
			}
		if (d)
			closedir(d);
		rmdir(sockdir);
		sockdir[0] = '\0';
	}
	pthread_mutex_unlock(&sockdir_mu);
}

/* http: worker i's listening socket, bound at w->sock. The descriptor, or
 * -1 (msg). */
static int http_listen(etl_t *e, unsigned i, buf_t *msg)
{
	etl_worker_t *w = &e->w[i];
	struct sockaddr_un sa = {.sun_family = AF_UNIX};
	if (sockdir_make(msg) != AIS_OK)
		return -1;
	pthread_mutex_lock(&sockdir_mu);
	if (w->sock[0])
		unlink(w->sock); /* the previous one of this worker */
	snprintf(w->sock, sizeof(w->sock), "%s/w%u.sock", sockdir, ++sockseq);
	pthread_mutex_unlock(&sockdir_mu);
	snprintf(sa.sun_path, sizeof(sa.sun_path), "%s", w->sock);
	int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (fd < 0) {
		buf_addf(msg, "socket: %s", strerror(errno));
		return -1;
	}
	if (bind(fd, (struct sockaddr *)&sa, sizeof(sa)) != 0 || listen(fd, 8) != 0) {
		buf_addf(msg, "cannot listen on %s: %s", w->sock, strerror(errno));
		close(fd);
		return -1;
	}
	return fd;
}

/* Starts worker i. Caller holds e->mu. AIS_OK, or AIS_ERR (msg). */
static int spawn(etl_t *e, unsigned i, buf_t *msg)
{
	etl_worker_t *w = &e->w[i];
	int pin[2], pout[2], logfd, lfd = -1;
	char lp[1200], dir[1100];
	struct stat st;

	snprintf(dir, sizeof(dir), "%s/etl-logs", etl_cfg.dir);
	mkdir(dir, 0700);
	etl_log_path(e, i, lp, sizeof(lp));
	logfd = open(lp, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
	if (logfd < 0) {
		buf_addf(msg, "cannot open its log %s: %s", lp, strerror(errno));
		return AIS_ERR;
	}
	if (fstat(logfd, &st) == 0 && st.st_size > LOG_MAX / 2)
		(void)!ftruncate(logfd, 0);
	if (getuid() == 0)
		(void)!fchown(logfd, NOBODY, NOBODY);
	if (etl_is_http(e) && (lfd = http_listen(e, i, msg)) < 0) {
		close(logfd);
		return AIS_ERR;
	}
	if (pipe2(pin, O_CLOEXEC) != 0) {
		close(logfd);
		if (lfd >= 0)
			close(lfd);
		buf_addf(msg, "pipe: %s", strerror(errno));
		return AIS_ERR;
	}
	if (pipe2(pout, O_CLOEXEC) != 0) {
		buf_addf(msg, "pipe: %s", strerror(errno));
		goto out_close_in;
	}
	static char sh[] = "sh", dash_c[] = "-c";
	static char env0[][40] = {"PATH=/usr/local/bin:/usr/bin:/bin", "HOME=/", "LANG=C.UTF-8",
				  "PYTHONUNBUFFERED=1", "PYTHONDONTWRITEBYTECODE=1"};
	char *argv[] = {sh, dash_c, e->spec.cmd, NULL};
	char *envp[ETL_ENV_MAX + 12];
	char env_sock[160];
	static char env_comm[] = "AISD_ETL_COMM=http", env_fd[] = "AISD_ETL_FD=3";
	size_t n = 0;
	for (size_t k = 0; k < ARRAY_SIZE(env0); k++)
		envp[n++] = env0[k];
	for (size_t k = 0; k < e->spec.nenv; k++)
		envp[n++] = e->spec.env[k];
	if (lfd >= 0) {
		snprintf(env_sock, sizeof(env_sock), "AISD_ETL_SOCKET=%s", w->sock);
		envp[n++] = env_comm;
		envp[n++] = env_fd;
		envp[n++] = env_sock;
	}
	envp[n] = NULL;
	pid_t pid = fork();
	if (pid < 0) {
		buf_addf(msg, "fork: %s", strerror(errno));
		goto out_close_out;
	}
	if (pid == 0) /* http: nothing on stdin, stdout to the log */
		child(e, pin[0], lfd >= 0 ? logfd : pout[1], logfd, lfd, argv, envp);
	setpgid(pid, pid); /* both sides: no race with the kill of the group */
	close(pin[0]);
	close(pout[1]);
	close(logfd);
	w->pid = pid;
	w->in = pin[1];
	w->out = pout[0];
	w->starts++;
	fcntl(w->in, F_SETFL, O_NONBLOCK);
	fcntl(w->out, F_SETFL, O_NONBLOCK);
	fcntl(w->in, F_SETPIPE_SZ, 1 << 20); /* fewer wake-ups per object; best effort (pipe-max-size) */
	fcntl(w->out, F_SETPIPE_SZ, 1 << 20);
	if (lfd >= 0) { /* the worker alone holds its socket: when it dies, a connect is refused */
		close(lfd);
		close(w->in);
		close(w->out);
		w->in = w->out = -1;
	}
	log_info("etl %s: worker %u started (pid %d)", e->spec.name, i, (int)pid);
	return AIS_OK;
out_close_out:
	close(pout[0]);
	close(pout[1]);
out_close_in:
	close(pin[0]);
	close(pin[1]);
	close(logfd);
	if (lfd >= 0)
		close(lfd);
	return AIS_ERR;
}

void etl_worker_spipe_close(etl_worker_t *w)
{
	for (int k = 0; k < 2; k++)
		if (w->spipe[k] >= 0)
			close(w->spipe[k]);
	w->spipe[0] = w->spipe[1] = -1;
}

/* Rule 2: kills worker i's group, reaps it, closes its pipes, sets its
 * back-off. why NULL: a stop (no back-off). Caller holds e->mu or owns
 * the worker (busy). */
void etl_worker_kill(etl_t *e, unsigned i, const char *why)
{
	etl_worker_t *w = &e->w[i];
	if (w->pid <= 0)
		return;
	int st = 0;
	pid_t pid = w->pid;
	kill(-w->pid, SIGKILL);
	kill(w->pid, SIGKILL);
	while (waitpid(w->pid, &st, 0) < 0 && errno == EINTR)
		;
	if (w->sock[0])
		unlink(w->sock); /* http: a new one at the next start */
	if (w->in >= 0)
		close(w->in);
	if (w->out >= 0)
		close(w->out);
	if (w->conn >= 0)
		close(w->conn); /* rule 5: a dead worker's connection goes with it */
	etl_worker_spipe_close(w);
	w->pid = 0;
	w->in = w->out = w->conn = -1;
	if (why) {
		w->crashes++;
		w->backoff_ms = w->backoff_ms ? MIN(w->backoff_ms * 2, BACKOFF_MAX_MS) : BACKOFF_MIN_MS;
		w->next_start_ns = time_mono_ns() + (int64_t)w->backoff_ms * 1000000;
		log_warnx("etl %s: worker %u (pid %d) %s: restarts in %u ms", e->spec.name, i, (int)pid, why,
			  w->backoff_ms);
	}
}

/* A live worker that exited since its last request: reaped (rule 2). */
static void reap_exited(etl_t *e, unsigned i)
{
	etl_worker_t *w = &e->w[i];
	int st;
	if (w->pid > 0 && waitpid(w->pid, &st, WNOHANG) == w->pid) {
		kill(-w->pid, SIGKILL); /* what it left in its group */
		if (w->sock[0])
			unlink(w->sock);
		if (w->in >= 0)
			close(w->in);
		if (w->out >= 0)
			close(w->out);
		if (w->conn >= 0)
			close(w->conn);
		etl_worker_spipe_close(w);
		w->pid = 0;
		w->in = w->out = w->conn = -1;
		w->crashes++;
		w->backoff_ms = w->backoff_ms ? MIN(w->backoff_ms * 2, BACKOFF_MAX_MS) : BACKOFF_MIN_MS;
		w->next_start_ns = time_mono_ns() + (int64_t)w->backoff_ms * 1000000;
		log_warnx("etl %s: worker %u exited (%s %d): restarts in %u ms", e->spec.name, i,
			  WIFSIGNALED(st) ? "signal" : "status", WIFSIGNALED(st) ? WTERMSIG(st) : WEXITSTATUS(st),
			  w->backoff_ms);
	}
}

int etl_acquire(etl_t *e, int64_t deadline, bool at_once, unsigned *idx, int *status, buf_t *msg)
{
	pthread_mutex_lock(&e->mu);
	for (;;) {
		if (e->gone || e->spec.stopped) {
			*status = e->gone ? 404 : 503;
			buf_addf(msg, "transformer \"%s\" is %s", e->spec.name, e->gone ? "removed" : "stopped");
			break;
		}
		int64_t now = time_mono_ns(), wake = deadline;
		for (unsigned i = 0; i < e->spec.workers; i++) {
			if (!e->w[i].busy)
				reap_exited(e, i);
			if (!e->w[i].busy && e->w[i].pid > 0) {
				e->w[i].busy = true;
				*idx = i;
				pthread_mutex_unlock(&e->mu);
				return AIS_OK;
			}
		}
		if (at_once) {
			*status = 503;
			buf_addf(msg, "transformer \"%s\": no live worker free", e->spec.name);
			break;
		}
		for (unsigned i = 0; i < e->spec.workers; i++) {
			etl_worker_t *w = &e->w[i];
			if (w->busy || w->pid > 0)
				continue;
			if (w->next_start_ns > now) {
				wake = MIN(wake, w->next_start_ns);
				continue;
			}
			buf_addf(msg, "transformer \"%s\": worker %u cannot start: ", e->spec.name, i);
			if (spawn(e, i, msg) != AIS_OK) {
				*status = 503;
				pthread_mutex_unlock(&e->mu);
				return AIS_ERR;
			}
			buf_reset(msg);
			w->busy = true;
			*idx = i;
			pthread_mutex_unlock(&e->mu);
			return AIS_OK;
		}
		if (now >= deadline) {
			*status = 504;
			buf_addf(msg, "transformer \"%s\": no worker free within its timeout", e->spec.name);
			break;
		}
		struct timespec ts;
		clock_gettime(CLOCK_MONOTONIC, &ts);
		int64_t at = (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec + (wake - now);
		ts.tv_sec = at / 1000000000;
		ts.tv_nsec = at % 1000000000;
		pthread_cond_timedwait(&e->cv, &e->mu, &ts);
	}
	pthread_mutex_unlock(&e->mu);
	return AIS_ERR;
}

void etl_worker_release(etl_t *e, unsigned i, bool good)
{
	pthread_mutex_lock(&e->mu);
	if (good)
		e->w[i].backoff_ms = 0;
	e->w[i].busy = false;
	if (e->gone || e->spec.stopped)
		etl_worker_kill(e, i, NULL);
	pthread_cond_broadcast(&e->cv);
	pthread_mutex_unlock(&e->mu);
}

/* Whether this process can make the namespaces a worker starts in: a child
 * tries. */
void etl_probe_ns(void)
{
	int flags = CLONE_NEWNS | CLONE_NEWNET | (getuid() == 0 ? 0 : CLONE_NEWUSER);
	pid_t pid = fork();
	if (pid == 0)
		_exit(unshare(flags) == 0 ? 0 : (errno & 0x7f));
	int st = 0;
	while (pid > 0 && waitpid(pid, &st, 0) < 0 && errno == EINTR)
		;
	etl_cfg.ns_ok = pid > 0 && WIFEXITED(st) && WEXITSTATUS(st) == 0;
	snprintf(etl_cfg.ns_why, sizeof(etl_cfg.ns_why), "unshare: %s",
		 pid < 0 ? "cannot fork" : strerror(WIFEXITED(st) ? WEXITSTATUS(st) : EIO));
	if (!etl_cfg.ns_ok)
		log_warnx("etl: workers cannot have their own namespaces here (%s)%s", etl_cfg.ns_why,
			  etl_cfg.weak ? ": etl.allow_weak_isolation runs them without" : ": transformers will be refused");
}
