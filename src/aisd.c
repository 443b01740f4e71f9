/*
 * aisd.c - the daemon's entry point: options, configuration, signals.
 *
 * One binary, two roles; this version serves the target role. Signals are
 * handled synchronously here (sigwait) while worker threads serve: SIGTERM
 * and SIGINT stop gracefully, SIGHUP reopens the log files and reloads the TLS certificate.
 * A node whose decommission completed stops the same way (the cluster sends
 * the SIGTERM), exit status 0; it does not start again while its node dir
 * holds the "decommissioned" file.
 */
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <signal.h>
#include <sys/file.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "aisd/cluster.h"
#include "aisd/conf.h"
#include "aisd/gateway.h"
#include "aisd/httpc.h"
#include "aisd/jobs.h"
#include "aisd/lifecycle.h"
#include "aisd/log.h"
#include "aisd/status.h"
#include "aisd/target.h"
#include "aisd/util.h"
#include "aisd/version.h"
#include "aisd/authz.h"
#include "aisd/banned.h"

static void usage(FILE *f)
{
	fprintf(f,
		"usage: aisd [options]\n"
		"\n"
		"aisd is a node of an object storage cluster: a target stores objects on its\n"
		"mountpaths and serves them; a gateway routes requests to the targets.\n"
		"\n"
		"options:\n"
		"  -r, --role ROLE          target (default) or gateway\n"
		"  -c, --config FILE        read configuration from FILE (see aisd.conf(5))\n"
		"  -p, --port PORT          listen on PORT (0: any free port)\n"
		"  -H, --host ADDR          listen on ADDR (default 127.0.0.1)\n"
		"  -m, --mountpath DIR      store objects under DIR (repeat for more disks)\n"
		"  -i, --id ID              node id (default HOST:PORT)\n"
		"  -j, --join URL           join the cluster whose primary gateway is at URL\n"
		"                           (a gateway without it starts a new cluster)\n"
		"  -d, --dir DIR            where cluster metadata is kept (required for a gateway)\n"
		"  -l, --log-level LEVEL    debug, info, warn or error\n"
		"  -s, --set KEY=VALUE      set any configuration key (repeatable)\n"
		"      --port-file FILE     write the listening port to FILE once serving\n"
		"      --help-config        list every configuration key with its default\n"
		"  -h, --help               this help\n"
		"  -V, --version            print the version\n"
		"\n"
		"Command-line options override the config file. Signals: SIGTERM/SIGINT\n"
		"stop, SIGHUP reopens the log files (log.file, log.access_file) and reloads\n"
		"the TLS certificate, key and client CA (open connections keep theirs).\n"
		"\n"
		"HTTPS: --set net.tls.cert=PEM --set net.tls.key=PEM serves HTTPS only (node\n"
		"URLs become https://); net.tls.client_ca=PEM requires client certificates\n"
		"(mTLS), net.tls.ca=PEM is the CA other nodes are verified with. Nodes present\n"
		"net.tls.cert as their client certificate.\n"
		"Every node serves GET /metrics (Prometheus). See aisd(8).\n"
		"\n"
		"Local reads: a target also listens on a unix socket (net.unix_socket,\n"
		"default aisd.sock in its node dir); clients on its host get object files\n"
		"there as open descriptors (header Ais-Local-Fd: true). See aisd(8).\n"
		"\n"
		"Access control (aisd.conf(5), aisd(8)): cluster.secret (or\n"
		"cluster.secret_file), the same on every node, signs intra-cluster calls:\n"
		"a node without it cannot join, push metadata or vote. auth.enabled=on with\n"
		"auth.secret makes every request but /v1/health need a bearer token\n"
		"(aisctl auth token create), a redirect signed by a node, or an S3 key whose\n"
		"user has an auth.grant; 401 without valid credentials, 403 without the\n"
		"permission. It needs cluster.secret on every node, a standalone target too.\n"
		"Off by default. Files aisd makes are its own user's alone (umask 077).\n");
}

static void die_usage(const char *msg, const char *arg)
{
	fprintf(stderr, "aisd: %s%s%s\n", msg, arg ? ": " : "", arg ? arg : "");
	fprintf(stderr, "Try 'aisd --help'.\n");
	exit(2);
}

static void set_or_die(conf_t *c, const char *k, const char *v)
{
	buf_t err = BUF_INIT;
	if (conf_set(c, k, v, &err) != AIS_OK)
		die_usage(err.ptr, NULL);
	buf_free(&err);
}

/*
 * One node, one process: each of the node's directories (node.dir, the
 * mountpaths) holds the lock file NODE_LOCK, locked (flock, exclusive)
 * for the daemon's life and holding its pid. The kernel drops the lock
 * with the process however it ends (kill -9 too), so a stale file never
 * keeps a daemon out. Mountpaths attached later (attach-mp) are not
 * locked.
 */
#define NODE_LOCK ".aisd.lock"

struct node_locks {
	int n;
	struct {
		int fd;
		dev_t dev;
		ino_t ino;
	} l[CONF_MAX_MOUNTPATHS + 1];
};

/* Locks dir's NODE_LOCK (a dir already locked by this process is skipped).
 * AIS_DONE: dir does not exist yet (lock it once the node has made it);
 * AIS_ERR: another process holds it (err names dir and the holder's pid).
 * A dir that cannot be read or written is left unguarded with a warning:
 * the store says what is wrong with it (a faulty mountpath is not a
 * reason not to start). */
static int node_lock(struct node_locks *nl, const char *dir, buf_t *err)
{
	struct stat st;
	char path[1200], pid[32];
	if (!dir[0])
		return AIS_OK;
	if (stat(dir, &st) != 0) {
		if (errno == ENOENT)
			return AIS_DONE;
		log_warn("%s: not guarded against a second daemon", dir);
		return AIS_OK;
	}
	for (int i = 0; i < nl->n; i++)
		if (nl->l[i].dev == st.st_dev && nl->l[i].ino == st.st_ino)
			return AIS_OK;
	snprintf(path, sizeof(path), "%s/%s", dir, NODE_LOCK);
	int fd = open(path, O_RDWR | O_CREAT | O_CLOEXEC | O_NOFOLLOW, 0600);
	if (fd < 0) {
		log_warn("%s: not guarded against a second daemon", path);
		return AIS_OK;
	}
	if (flock(fd, LOCK_EX | LOCK_NB) != 0) {
		int e = errno;
		ssize_t n = pread(fd, pid, sizeof(pid) - 1, 0);
		pid[n > 0 ? n : 0] = '\0';
		pid[strcspn(pid, "\n")] = '\0';
		close(fd);
		if (e != EWOULDBLOCK) {
			errno = e;
			log_warn("%s: not guarded against a second daemon", path);
			return AIS_OK;
		}
		buf_addf(err, "%s is in use by another aisd (pid %s; lock file %s): one node, one process", dir,
			 pid[0] ? pid : "unknown", path);
		return AIS_ERR;
	}
	int len = snprintf(pid, sizeof(pid), "%ld\n", (long)getpid());
	if (ftruncate(fd, 0) != 0 || pwrite(fd, pid, (size_t)len, 0) != len)
		log_warn("%s: cannot write the pid", path);
	nl->l[nl->n].fd = fd;
	nl->l[nl->n].dev = st.st_dev;
	nl->l[nl->n].ino = st.st_ino;
	nl->n++;
	return AIS_OK;
}

/* Locks every directory of the node (node.dir, then the mountpaths); one
 * not there yet is skipped (the node makes it: called again once started,
 * when one still missing is a mountpath that failed, nothing to guard).
 * On AIS_ERR err names the directory and its holder. */
static int node_lock_all(struct node_locks *nl, const conf_t *c, buf_t *err)
{
	for (int i = -1; i < c->n_mountpaths; i++)
		if (node_lock(nl, i < 0 ? c->node_dir : c->mountpaths[i], err) == AIS_ERR)
			return AIS_ERR;
	return AIS_OK;
}

int main(int argc, char **argv)
{
	static const struct option opts[] = {
		{"role", required_argument, NULL, 'r'},
		{"config", required_argument, NULL, 'c'},
		{"port", required_argument, NULL, 'p'},
		{"host", required_argument, NULL, 'H'},
		{"mountpath", required_argument, NULL, 'm'},
		{"id", required_argument, NULL, 'i'},
		{"join", required_argument, NULL, 'j'},
		{"dir", required_argument, NULL, 'd'},
		{"log-level", required_argument, NULL, 'l'},
		{"set", required_argument, NULL, 's'},
		{"port-file", required_argument, NULL, 'P'},
		{"help-config", no_argument, NULL, 'C'},
		{"help", no_argument, NULL, 'h'},
		{"version", no_argument, NULL, 'V'},
		{NULL, 0, NULL, 0},
	};
	conf_t conf;
	buf_t err = BUF_INIT, mps = BUF_INIT;
	const char *config = NULL, *port_file = NULL;
	int ch;

	conf_defaults(&conf);
	/* The config file comes first, whatever the order of the options. */
	for (int i = 1; i < argc; i++) {
		if ((!strcmp(argv[i], "-c") || !strcmp(argv[i], "--config")) && i + 1 < argc)
			config = argv[i + 1];
		else if (!strncmp(argv[i], "--config=", 9))
			config = argv[i] + 9;
	}
	if (config && conf_load(&conf, config, &err) != AIS_OK) {
		fprintf(stderr, "aisd: %s\n", err.ptr);
		return 2;
	}
	while ((ch = getopt_long(argc, argv, "r:c:p:H:m:i:j:d:l:s:hV", opts, NULL)) != -1) {
		switch (ch) {
		case 'r': set_or_die(&conf, "role", optarg); break;
		case 'c': break;
		case 'p': set_or_die(&conf, "net.port", optarg); break;
		case 'H': set_or_die(&conf, "net.host", optarg); break;
		case 'm':
			buf_addf(&mps, "%s%s", mps.len ? "," : "", optarg);
			set_or_die(&conf, "store.mountpaths", mps.ptr);
			break;
		case 'i': set_or_die(&conf, "node.id", optarg); break;
		case 'j': set_or_die(&conf, "cluster.join", optarg); break;
		case 'd': set_or_die(&conf, "node.dir", optarg); break;
		case 'l': set_or_die(&conf, "log.level", optarg); break;
		case 's': {
			char *eq = strchr(optarg, '=');
			if (!eq)
				die_usage("--set wants KEY=VALUE", optarg);
			*eq = '\0';
			set_or_die(&conf, optarg, eq + 1);
			break;
		}
		case 'P': port_file = optarg; break;
		case 'C': {
			buf_t d = BUF_INIT;
			conf_describe(&d);
			fputs(d.ptr, stdout);
			buf_free(&d);
			return 0;
		}
		case 'h': usage(stdout); return 0;
		case 'V': printf("aisd %s\n", AISD_VERSION); return 0;
		default: fprintf(stderr, "Try 'aisd --help'.\n"); return 2;
		}
	}
	if (optind < argc)
		die_usage("unexpected argument", argv[optind]);
	/* Everything this daemon creates is its own alone: the object records
	 * and LevelDB files (names, owners, ACLs), bmd.json, cmap.json,
	 * multipart parts, object data (local reads get descriptors over the
	 * unix socket, never paths). LevelDB creates its files itself, so the
	 * umask is the one mechanism; explicit modes say the same elsewhere.
	 * Exceptions, made explicitly: logs 0640, the unix socket 0660. */
	umask(077);
	buf_free(&mps);
	if (conf_load_secrets(&conf, &err) != AIS_OK || conf_validate(&conf, &err) != AIS_OK)
		die_usage(err.ptr, NULL);
	authz_init(&conf);
	/* every intra-cluster call httpc makes carries the cluster secret's
	 * signature (none without cluster.secret) */
	_Static_assert(AUTHZ_INTRA_HDR_MAX <= HTTPC_SIGN_MAX, "the signature line fits httpc's buffer");
	httpc_set_signer(authz_intra_header);

	enum log_level lv = LOG_INFO;
	log_parse_level(conf.log_level, &lv);
	log_init(conf.node_id[0] ? conf.node_id : "aisd", lv, conf.log_file);
	int64_t clock_off = 0;
	if (conf_clock_offset(&conf, &clock_off) == AIS_OK && clock_off) { /* the test hook, before any stamp */
		time_set_offset_ns(clock_off);
		log_warnx("debug.clock_offset=%s: this node's wall clock is shifted (a test hook)", conf.clock_offset);
	}
	if (log_access_init(!strcmp(conf.log_access, "on"), conf.log_access_file) != AIS_OK) {
		log_err("cannot open the access log %s", conf.log_access_file);
		return 1;
	}

	/* every descriptor the system allows: the connection limit is derived
	 * from it (http_server_new) */
	struct rlimit rl;
	rlim_t was = 0;
	if (getrlimit(RLIMIT_NOFILE, &rl) == 0 && rl.rlim_cur < rl.rlim_max) {
		was = rl.rlim_cur;
		rl.rlim_cur = rl.rlim_max;
		if (setrlimit(RLIMIT_NOFILE, &rl) != 0)
			log_warn("setrlimit(RLIMIT_NOFILE, %llu)", (unsigned long long)rl.rlim_max);
	}

	sigset_t sigs;
	sigemptyset(&sigs);
	sigaddset(&sigs, SIGTERM);
	sigaddset(&sigs, SIGINT);
	sigaddset(&sigs, SIGHUP);
	pthread_sigmask(SIG_BLOCK, &sigs, NULL);
	signal(SIGPIPE, SIG_IGN);

	if (conf.tls_cert[0]) {
		httpc_tls_set(conf.tls_ca, conf.tls_cert, conf.tls_key); /* intra-cluster calls */
		httpc_tls_ktls_set(conf.tls_ktls);
	}
	jobs_cluster_register(bkj_kind); /* the job routes of /v1/cluster, the decommission drain */
	bool gw = !strcmp(conf.role, "gateway");
	target_t *t = NULL;
	gateway_t *g = NULL;
	static struct node_locks locks;
	if (node_lock_all(&locks, &conf, &err) != AIS_OK) {
		log_errx("cannot start: %s", err.ptr);
		buf_free(&err);
		return 1;
	}
	char marker[1200];
	if (cluster_was_decommissioned(&conf, marker, sizeof(marker))) {
		/* no member any more, and a target's objects moved to others: a
		 * node that served again would serve stale data */
		log_warnx("this node was decommissioned (%s exists): it does not start; remove that file (and, on a "
			  "target, the objects of its mountpaths) to let it join the cluster again as a new node",
			  marker);
		buf_free(&err);
		return 0;
	}
	if (gw)
		g = gateway_start(&conf, &err);
	else
		t = target_start(&conf, &err);
	if (!t && !g) {
		log_errx("cannot start: %s", err.ptr);
		buf_free(&err);
		return 1;
	}
	if (t)
		lc_start(t); /* the S3 lifecycle job (src/lifecycle: it depends on the target, not the reverse) */
	if (node_lock_all(&locks, &conf, &err) != AIS_OK) {
		/* a directory made meanwhile by another daemon starting on it */
		log_errx("cannot start: %s", err.ptr);
		buf_free(&err);
		return 1;
	}
	int port = gw ? gateway_port(g) : http_server_port(target_server(t));
	if (!conf.node_id[0]) {
		char id[300];
		snprintf(id, sizeof(id), "%s:%d", conf.host, port);
		log_init(id, lv, NULL);
	}
	const char *scheme = conf.tls_cert[0] ? "https" : "http";
	if (getrlimit(RLIMIT_NOFILE, &rl) == 0)
		log_info("descriptors: at most %llu (%s %llu), connections: at most %llu", (unsigned long long)rl.rlim_cur,
			 was ? "raised from" : "hard limit", (unsigned long long)(was ? was : rl.rlim_max),
			 (unsigned long long)http_server_max_conns(gw ? g->srv : target_server(t)));
	if (gw)
		log_info("aisd %s gateway serving %s://%s:%d", AISD_VERSION, scheme, conf.host, port);
	else
		log_info("aisd %s target serving %s://%s:%d (%d mountpaths, fsync %s%s%s)", AISD_VERSION, scheme,
			 conf.host, port, conf.n_mountpaths, conf.fsync == CONF_FSYNC_ALWAYS ? "always" : "never",
			 conf.join[0] ? ", joining " : "", conf.join);
	if (port_file) {
		FILE *f = fopen(port_file, "w");
		if (!f || fprintf(f, "%d\n", port) < 0 || fclose(f) != 0)
			log_warn("cannot write port file %s", port_file);
	}

	for (;;) {
		int sig;
		if (sigwait(&sigs, &sig))
			continue;
		if (sig == SIGHUP) {
			log_reopen();
			log_info("reopened the log files");
			buf_reset(&err);
			int rc = http_server_reload_tls(gw ? g->srv : target_server(t), &err);
			if (rc == AIS_OK)
				log_info("TLS: reloaded %s and %s%s%s", conf.tls_cert, conf.tls_key,
					 conf.tls_client_ca[0] ? " and " : "", conf.tls_client_ca);
			else if (rc == AIS_ERR)
				log_errx("TLS: cannot reload the certificate (the old one stays): %s", err.ptr);
			continue;
		}
		log_info("signal %d: shutting down", sig);
		break;
	}
	if (gw)
		gateway_stop(g);
	else {
		lc_stop();
		target_stop(t);
	}
	buf_free(&err);
	return 0;
}
