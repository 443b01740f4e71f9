/*
 * etl.c - the transformers a node knows (etl.h): the table, kept in
 * DIR/etl.json, and the /v1/etl route.
 *
 * Guarantees:
 *  1. The file is only ever written whole (temp file, fsync, rename).
 *  2. A gateway applies a PUT/DELETE from a client on every node of its
 *     map (?local=true on those calls), and answers 200 only when every
 *     node took it (the way remotes are attached, remotes.c).
 *  3. A removed or stopped transformer's workers are killed and reaped:
 *     at once when idle, when their request ends otherwise. A removed
 *     one's memory is freed by the last request using it.
 */
#include <errno.h>
#include <fcntl.h>
#include <jansson.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "aisd/cluster.h"
#include "aisd/cmap.h"
#include "aisd/log.h"
#include "aisd/names.h"
#include "aisd/status.h"
#include "aisd/util.h"
#include "etl_int.h"
#include "aisd/banned.h"

etl_cfg_t etl_cfg;

static pthread_mutex_t tmu = PTHREAD_MUTEX_INITIALIZER;
static etl_t *tab[ETL_MAX];
static size_t ntab;
static char path[1100];

uint64_t etl_input_limit(void) { return etl_cfg.max_input; }

static bool name_ok(const char *s, size_t len) { return name_ident_valid(s, len, ETL_NAME_MAX); }

/* A spec from its JSON object; name from the URL. AIS_OK or AIS_ERR (err). */
static int spec_parse(json_t *o, const char *name, etl_spec_t *s, buf_t *err)
{
	static const char *const keys[] = {"name", "cmd", "comm", "workers", "timeout_ms", "net", "stopped", "env"};
	const char *k;
	json_t *v;
	memset(s, 0, sizeof(*s));
	if (!json_is_object(o)) {
		buf_addstr(err, "etl: want a JSON object");
		return AIS_ERR;
	}
	json_object_foreach(o, k, v) {
		size_t i = 0;
		while (i < ARRAY_SIZE(keys) && strcmp(k, keys[i]))
			i++;
		if (i == ARRAY_SIZE(keys)) {
			buf_addf(err, "etl: unknown field \"%s\"", k);
			return AIS_ERR;
		}
	}
	snprintf(s->name, sizeof(s->name), "%s", name);
	json_t *cmd = json_object_get(o, "cmd"), *comm = json_object_get(o, "comm"), *wk = json_object_get(o, "workers");
	json_t *to = json_object_get(o, "timeout_ms"), *env = json_object_get(o, "env");
	if (!json_is_string(cmd) || !json_string_length(cmd) || json_string_length(cmd) > ETL_CMD_MAX) {
		buf_addf(err, "etl: \"cmd\" must be a command line of 1..%d bytes", ETL_CMD_MAX);
		return AIS_ERR;
	}
	memcpy(s->cmd, json_string_value(cmd), json_string_length(cmd) + 1);
	snprintf(s->comm, sizeof(s->comm), "stdio");
	if (comm && (!json_is_string(comm) ||
		     (strcmp(json_string_value(comm), "stdio") && strcmp(json_string_value(comm), "http")))) {
		buf_addstr(err, "etl: \"comm\" must be \"stdio\" or \"http\"");
		return AIS_ERR;
	}
	if (comm)
		snprintf(s->comm, sizeof(s->comm), "%s", json_string_value(comm));
	s->workers = 1;
	if (wk && (!json_is_integer(wk) || json_integer_value(wk) < 1 || json_integer_value(wk) > ETL_WORKERS_MAX)) {
		buf_addf(err, "etl: \"workers\" must be 1..%d", ETL_WORKERS_MAX);
		return AIS_ERR;
	}
	if (wk)
		s->workers = (uint32_t)json_integer_value(wk);
	s->timeout_ms = 30000;
	if (to && (!json_is_integer(to) || json_integer_value(to) < 1 || json_integer_value(to) > 3600000)) {
		buf_addstr(err, "etl: \"timeout_ms\" must be 1..3600000");
		return AIS_ERR;
	}
	if (to)
		s->timeout_ms = (uint64_t)json_integer_value(to);
	s->net = json_is_true(json_object_get(o, "net"));
	s->stopped = json_is_true(json_object_get(o, "stopped"));
	if (env && (!json_is_array(env) || json_array_size(env) > ETL_ENV_MAX)) {
		buf_addf(err, "etl: \"env\" must be an array of at most %d \"K=V\"", ETL_ENV_MAX);
		return AIS_ERR;
	}
	size_t i;
	json_array_foreach(env, i, v) {
		const char *e = json_string_value(v);
		if (!e || !strchr(e, '=') || e[0] == '=' || strlen(e) >= sizeof(s->env[0])) {
			buf_addf(err, "etl: \"env\" entry %zu must be \"K=V\" of at most %zu bytes", i, sizeof(s->env[0]) - 1);
			return AIS_ERR;
		}
		snprintf(s->env[s->nenv++], sizeof(s->env[0]), "%s", e);
	}
	return AIS_OK;
}

static json_t *spec_json(const etl_spec_t *s)
{
	json_t *env = json_array();
	for (size_t i = 0; i < s->nenv; i++)
		json_array_append_new(env, json_string(s->env[i]));
	return json_pack("{s:s,s:s,s:s,s:i,s:I,s:b,s:b,s:o}", "name", s->name, "cmd", s->cmd, "comm", s->comm,
			 "workers", (int)s->workers, "timeout_ms", (json_int_t)s->timeout_ms, "net", s->net, "stopped",
			 s->stopped, "env", env);
}

/* Rule 1. Caller holds tmu. */
static int save(buf_t *err)
{
	json_t *arr = json_array();
	for (size_t i = 0; i < ntab; i++)
		json_array_append_new(arr, spec_json(&tab[i]->spec));
	json_t *doc = json_pack("{s:o}", "etl", arr);
	char *s = json_dumps(doc, JSON_INDENT(1));
	json_decref(doc);
	int rc = file_write_atomic(path, s, strlen(s), err);
	free(s);
	return rc;
}

static etl_t *etl_new(const etl_spec_t *s)
{
	etl_t *e = xcalloc(1, sizeof(*e));
	e->spec = *s;
	pthread_mutex_init(&e->mu, NULL);
	pthread_cond_init(&e->cv, NULL);
	for (unsigned i = 0; i < ETL_WORKERS_MAX; i++)
		e->w[i].in = e->w[i].out = e->w[i].conn = e->w[i].spipe[0] = e->w[i].spipe[1] = -1;
	return e;
}

static void etl_destroy(etl_t *e)
{
	pthread_mutex_destroy(&e->mu);
	pthread_cond_destroy(&e->cv);
	free(e);
}

/* Rule 3: stops e's idle workers (and marks it gone). Caller holds tmu. */
static void retire(etl_t *e, bool gone)
{
	pthread_mutex_lock(&e->mu);
	e->gone = gone;
	if (!gone)
		e->spec.stopped = true;
	for (unsigned i = 0; i < ETL_WORKERS_MAX; i++)
		if (!e->w[i].busy)
			etl_worker_kill(e, i, NULL);
	pthread_cond_broadcast(&e->cv);
	pthread_mutex_unlock(&e->mu);
}

void etl_unref(etl_t *e)
{
	pthread_mutex_lock(&tmu);
	bool last = --e->refs == 0 && e->gone;
	pthread_mutex_unlock(&tmu);
	if (last)
		etl_destroy(e);
}

static size_t find(const char *name, size_t len)
{
	size_t i;
	for (i = 0; i < ntab; i++)
		if (strlen(tab[i]->spec.name) == len && !memcmp(tab[i]->spec.name, name, len))
			break;
	return i;
}

int etl_init(const char *dir, const conf_t *c, buf_t *err)
{
	json_error_t je;
	struct stat st;
	snprintf(etl_cfg.dir, sizeof(etl_cfg.dir), "%s", dir);
	etl_cfg.max_input = c->etl_max_input;
	etl_cfg.max_output = c->etl_max_output;
	etl_cfg.mem = c->etl_memory_limit;
	etl_cfg.cpu_s = c->etl_cpu_ms ? (c->etl_cpu_ms + 999) / 1000 : 0;
	etl_cfg.weak = c->etl_weak;
	etl_cfg.nhide = 0;
	for (int i = 0; i < c->n_mountpaths && etl_cfg.nhide < ETL_HIDE_MAX; i++)
		snprintf(etl_cfg.hide[etl_cfg.nhide++], sizeof(etl_cfg.hide[0]), "%s", c->mountpaths[i]);
	snprintf(etl_cfg.hide[etl_cfg.nhide++], sizeof(etl_cfg.hide[0]), "%s", dir);
	if (c->node_dir[0] && strcmp(c->node_dir, dir))
		snprintf(etl_cfg.hide[etl_cfg.nhide++], sizeof(etl_cfg.hide[0]), "%s", c->node_dir);
	etl_probe_ns();
	snprintf(path, sizeof(path), "%s/etl.json", dir);
	if (stat(path, &st) != 0)
		return AIS_OK;
	json_t *doc = json_load_file(path, 0, &je), *arr = json_object_get(doc, "etl"), *o;
	size_t i;
	if (!json_is_array(arr)) {
		buf_addf(err, "%s: want {\"etl\":[...]} (%s)", path, doc ? "no etl array" : je.text);
		json_decref(doc);
		return AIS_ERR;
	}
	pthread_mutex_lock(&tmu);
	json_array_foreach(arr, i, o) {
		etl_spec_t s;
		const char *nm = json_string_value(json_object_get(o, "name"));
		if (ntab == ETL_MAX || !nm || !name_ok(nm, strlen(nm)) || spec_parse(o, nm, &s, err) != AIS_OK) {
			buf_addf(err, " (%s, entry %zu)", path, i);
			pthread_mutex_unlock(&tmu);
			json_decref(doc);
			return AIS_ERR;
		}
		tab[ntab++] = etl_new(&s);
	}
	pthread_mutex_unlock(&tmu);
	json_decref(doc);
	log_info("etl: %zu transformers from %s", ntab, path);
	return AIS_OK;
}

void etl_shutdown(void)
{
	pthread_mutex_lock(&tmu);
	for (size_t i = 0; i < ntab; i++)
		retire(tab[i], false);
	pthread_mutex_unlock(&tmu);
	etl_sockdir_remove();
}

bool etl_exists(const char *name, size_t nlen)
{
	pthread_mutex_lock(&tmu);
	bool ok = find(name, nlen) < ntab;
	pthread_mutex_unlock(&tmu);
	return ok;
}

unsigned etl_workers(const char *name, size_t nlen)
{
	pthread_mutex_lock(&tmu);
	size_t i = find(name, nlen);
	unsigned n = i < ntab ? tab[i]->spec.workers : 0;
	pthread_mutex_unlock(&tmu);
	return n;
}

etl_t *etl_ref(const char *name, size_t nlen)
{
	pthread_mutex_lock(&tmu);
	size_t i = find(name, nlen);
	etl_t *e = i < ntab ? tab[i] : NULL;
	if (e)
		e->refs++;
	pthread_mutex_unlock(&tmu);
	return e;
}

/* etl_transform of in; st as etl_run's (a stream keeps the reference). */
static int transform_in(const char *name, size_t nlen, const char *meta, sv_t args, const etl_in_t *in, buf_t *out,
			etl_stream_t *st, int *status, buf_t *msg)
{
	etl_t *e = etl_ref(name, nlen);
	if (!e) {
		*status = 404;
		buf_addf(msg, "no transformer \"%.*s\" (aisctl etl ls)", (int)MIN(nlen, 64), name);
		return AIS_ERR;
	}
	int rc = etl_run(e, meta, args, in, out, st, status, msg);
	if (rc != AIS_OK || !st || st->fd < 0)
		etl_unref(e);
	return rc;
}

int etl_transform(const char *name, size_t nlen, const char *meta, sv_t args, const char *in, size_t inlen,
		  buf_t *out, int *status, buf_t *msg)
{
	etl_in_t src = {.ptr = in ? in : "", .fd = -1, .len = inlen};
	return transform_in(name, nlen, meta, args, &src, out, NULL, status, msg);
}

int etl_transform_fd(const char *name, size_t nlen, sv_t bck, sv_t obj, int fd, uint64_t size, uint64_t version,
		     sv_t args, buf_t *out, int *status, buf_t *msg)
{
	return etl_transform_at(name, nlen, bck, obj, (sv_t){NULL, 0}, fd, 0, size, version, args, out, status, msg);
}

int etl_transform_at(const char *name, size_t nlen, sv_t bck, sv_t obj, sv_t member, int fd, uint64_t off,
		     uint64_t size, uint64_t version, sv_t args, buf_t *out, int *status, buf_t *msg)
{
	return etl_transform_open(name, nlen, bck, obj, member, fd, off, size, version, args, out, NULL, status, msg);
}

char *etl_meta(sv_t bck, sv_t obj, sv_t member, uint64_t size, uint64_t version)
{
	json_t *o = json_pack("{s:s%,s:s%,s:I,s:I}", "bucket", bck.ptr, bck.len, "object", obj.ptr, obj.len, "size",
			      (json_int_t)size, "version", (json_int_t)version);
	if (o && member.len)
		json_object_set_new(o, "archpath", json_stringn(member.ptr, member.len));
	char *meta = o ? json_dumps(o, JSON_COMPACT) : NULL;
	json_decref(o);
	return meta;
}

int etl_transform_open(const char *name, size_t nlen, sv_t bck, sv_t obj, sv_t member, int fd, uint64_t off,
		       uint64_t size, uint64_t version, sv_t args, buf_t *out, etl_stream_t **stp, int *status,
		       buf_t *msg)
{
	if (stp)
		*stp = NULL;
	if (size > etl_cfg.max_input) {
		*status = 413;
		buf_addf(msg, "%s of %llu bytes is over etl.max_input (%llu) for a transform", member.len ? "member" : "object",
			 (unsigned long long)size, (unsigned long long)etl_cfg.max_input);
		return AIS_ERR;
	}
	char *meta = etl_meta(bck, obj, member, size, version);
	etl_in_t in = {.ptr = NULL, .fd = fd, .off = off, .len = size}; /* streamed from the file (worker.c rule 6) */
	etl_stream_t *st = stp ? etl_stream_new() : NULL;
	int rc = transform_in(name, nlen, meta ? meta : "{}", args, &in, out, st, status, msg);
	free(meta);
	if (st && rc == AIS_OK && st->fd >= 0)
		*stp = st;
	else if (st)
		etl_stream_close(st);
	return rc;
}

/* --- changes here ---------------------------------------------------------- */

enum op { OP_PUT, OP_DEL, OP_STOP, OP_START };

/* Applies op on this node. AIS_OK; AIS_ERR with errno ENOENT, EINVAL or EIO
 * and msg. */
static int apply(enum op op, const char *name, const etl_spec_t *s, buf_t *msg)
{
	if (!path[0]) {
		buf_addstr(msg, "this node keeps no transformers (no state directory)");
		errno = EIO;
		return AIS_ERR;
	}
	pthread_mutex_lock(&tmu);
	size_t i = find(name, strlen(name));
	int rc = AIS_OK;
	if (op != OP_PUT && i == ntab) {
		buf_addf(msg, "no transformer \"%s\"", name);
		errno = ENOENT;
		rc = AIS_ERR;
	} else if (op == OP_PUT && i == ntab && ntab == ETL_MAX) {
		buf_addf(msg, "at most %d transformers", ETL_MAX);
		errno = EINVAL;
		rc = AIS_ERR;
	} else if (op == OP_PUT) {
		if (i < ntab) { /* a new spec: the old workers go */
			retire(tab[i], true);
			if (tab[i]->refs == 0)
				etl_destroy(tab[i]);
			tab[i] = etl_new(s);
		} else {
			tab[ntab++] = etl_new(s);
		}
	} else if (op == OP_DEL) {
		etl_t *e = tab[i];
		memmove(&tab[i], &tab[i + 1], (ntab - i - 1) * sizeof(tab[0]));
		ntab--;
		retire(e, true);
		if (e->refs == 0)
			etl_destroy(e);
	} else {
		etl_t *e = tab[i];
		if (op == OP_STOP) {
			retire(e, false);
		} else {
			pthread_mutex_lock(&e->mu);
			e->spec.stopped = false;
			for (unsigned k = 0; k < ETL_WORKERS_MAX; k++)
				e->w[k].next_start_ns = 0, e->w[k].backoff_ms = 0;
			pthread_mutex_unlock(&e->mu);
		}
	}
	if (rc == AIS_OK && save(msg) != AIS_OK) {
		errno = EIO;
		rc = AIS_ERR;
	}
	pthread_mutex_unlock(&tmu);
	if (rc == AIS_OK)
		log_info("etl \"%s\": %s", name, op == OP_PUT ? "registered" : op == OP_DEL ? "removed" : op == OP_STOP ? "stopped" : "started");
	return rc;
}

/* {"etl":[spec + "running":N,"starts":N,"crashes":N ...]} */
static void list_json(buf_t *out)
{
	json_t *arr = json_array();
	pthread_mutex_lock(&tmu);
	for (size_t i = 0; i < ntab; i++) {
		etl_t *e = tab[i];
		json_t *o = spec_json(&e->spec);
		unsigned run = 0, starts = 0, crashes = 0;
		pthread_mutex_lock(&e->mu);
		for (unsigned k = 0; k < ETL_WORKERS_MAX; k++) {
			run += e->w[k].pid > 0;
			starts += e->w[k].starts;
			crashes += e->w[k].crashes;
		}
		pthread_mutex_unlock(&e->mu);
		json_object_set_new(o, "running", json_integer(run));
		json_object_set_new(o, "starts", json_integer(starts));
		json_object_set_new(o, "crashes", json_integer(crashes));
		json_array_append_new(arr, o);
	}
	pthread_mutex_unlock(&tmu);
	json_t *doc = json_pack("{s:o,s:b}", "etl", arr, "isolation", etl_cfg.ns_ok);
	char *s = json_dumps(doc, JSON_COMPACT);
	buf_addstr(out, s);
	free(s);
	json_decref(doc);
}

/* {"workers":[{"worker":I,"log":TEXT}]}: this node's logs of name (each at
 * most its last 64 KiB; bytes outside printable ASCII, tab and newline
 * shown as '?'). AIS_ERR: no such transformer. */
static int logs_json(const char *name, buf_t *out)
{
	pthread_mutex_lock(&tmu);
	size_t i = find(name, strlen(name));
	if (i == ntab) {
		pthread_mutex_unlock(&tmu);
		return AIS_ERR;
	}
	etl_t *e = tab[i];
	json_t *arr = json_array();
	for (unsigned k = 0; k < e->spec.workers; k++) {
		char lp[1200];
		etl_log_path(e, k, lp, sizeof(lp));
		buf_t t = BUF_INIT;
		int fd = open(lp, O_RDONLY | O_CLOEXEC);
		if (fd >= 0) {
			struct stat st;
			off_t from = fstat(fd, &st) == 0 && st.st_size > (64 << 10) ? st.st_size - (64 << 10) : 0;
			char b[8192];
			ssize_t n;
			while ((n = pread(fd, b, sizeof(b), from)) > 0 && t.len < (64 << 10)) {
				for (ssize_t j = 0; j < n; j++)
					buf_addch(&t, (b[j] >= 32 && b[j] < 127) || b[j] == '\n' || b[j] == '\t' ? b[j] : '?');
				from += n;
			}
			close(fd);
		}
		json_array_append_new(arr, json_pack("{s:i,s:s%}", "worker", (int)k, "log", t.ptr ? t.ptr : "", t.len));
		buf_free(&t);
	}
	pthread_mutex_unlock(&tmu);
	json_t *doc = json_pack("{s:o}", "workers", arr);
	char *s = json_dumps(doc, JSON_COMPACT);
	buf_addstr(out, s);
	free(s);
	json_decref(doc);
	return AIS_OK;
}

/* --- pull ------------------------------------------------------------------- */

int etl_pull(cluster_t *cl, const char *name, size_t nlen)
{
	const cmap_t *m;
	cluster_call_t call;
	int rc = AIS_ERR;
	char nm[ETL_NAME_MAX + 1];
	if (!cl || !name_ok(name, nlen))
		return AIS_ERR;
	snprintf(nm, sizeof(nm), "%.*s", (int)nlen, name);
	memset(&call, 0, sizeof(call));
	cluster_read_lock(cl, &m, NULL);
	const cmap_node_t *p = m && cmap_primary(m) ? cmap_get(m, cmap_primary(m), strlen(cmap_primary(m))) : NULL;
	if (p)
		snprintf(call.url, sizeof(call.url), "%s/v1/etl", p->intra_url);
	cluster_read_unlock(cl);
	if (!p)
		return AIS_ERR;
	call.method = "GET";
	call.timeout_ms = 5000;
	cluster_call_all(&call, 1);
	json_t *doc = call.status == 200 ? json_loadb(call.resp.ptr ? call.resp.ptr : "", call.resp.len, 0, NULL) : NULL;
	json_t *e;
	size_t i;
	json_array_foreach(json_object_get(doc, "etl"), i, e) {
		const char *n = json_string_value(json_object_get(e, "name"));
		if (!n || strcmp(n, nm))
			continue;
		/* the list adds this node's counters: not part of a spec */
		json_object_del(e, "running");
		json_object_del(e, "starts");
		json_object_del(e, "crashes");
		etl_spec_t spec;
		buf_t msg = BUF_INIT;
		if (spec_parse(e, nm, &spec, &msg) == AIS_OK)
			rc = etl_exists(name, nlen) ? AIS_OK : apply(OP_PUT, nm, &spec, &msg); /* a race: taken */
		if (rc == AIS_OK)
			log_info("etl \"%s\": taken from the primary (registered before this node joined)", nm);
		else
			log_warnx("etl \"%s\": the primary's copy was not taken: %s", nm, msg.ptr ? msg.ptr : "");
		buf_free(&msg);
	}
	json_decref(doc);
	buf_free(&call.resp);
	return rc;
}

/* --- HTTP ------------------------------------------------------------------- */

struct eop {
	char name[ETL_NAME_MAX + 1];
	enum op op;
	etl_spec_t s;
	bool all, logs;
	int err;
	buf_t msg, body, out;
};

static void eop_cleanup(void *arg)
{
	struct eop *o = arg;
	buf_free(&o->msg);
	buf_free(&o->body);
	buf_free(&o->out);
}

/* Pool, gateway: the logs of every target, {"ID":{"workers":[..]},..}. */
static void logs_work(http_req_t *req)
{
	struct eop *o = req->state;
	cluster_t *cl = ((node_base_t *)req->ctx)->cl;
	const cmap_t *m;
	if (!cl) {
		o->err = EIO;
		return;
	}
	cluster_read_lock(cl, &m, NULL);
	size_t n = 0, total = m ? cmap_size(m) : 0;
	cluster_call_t *calls = xcalloc(total + 1, sizeof(*calls));
	char(*ids)[CMAP_ID_MAX + 1] = xcalloc(total + 1, sizeof(*ids));
	for (size_t i = 0; i < total; i++) {
		const cmap_node_t *nd = cmap_node(m, i);
		if (nd->role != CMAP_TARGET)
			continue;
		snprintf(ids[n], sizeof(ids[0]), "%s", nd->id);
		snprintf(calls[n].url, sizeof(calls[n].url), "%s/v1/etl?what=logs&name=%s&local=true", nd->intra_url,
			 o->name);
		calls[n].method = "GET";
		calls[n++].timeout_ms = 10000;
	}
	cluster_read_unlock(cl);
	cluster_call_all(calls, n);
	json_t *doc = json_object();
	for (size_t i = 0; i < n; i++) {
		json_t *v = calls[i].status == 200 ? json_loadb(calls[i].resp.ptr ? calls[i].resp.ptr : "",
								   calls[i].resp.len, 0, NULL)
						   : NULL;
		if (!v)
			v = json_pack("{s:s}", "error", calls[i].status == 404 ? "no such transformer there" : "no answer");
		json_object_set_new(doc, ids[i], v);
		buf_free(&calls[i].resp);
	}
	char *s = json_dumps(doc, JSON_COMPACT);
	buf_addstr(&o->out, s);
	free(s);
	json_decref(doc);
	free(calls);
	free(ids);
}

/* Pool: here, then on every other node of the map (rule 2). */
static void eop_work(http_req_t *req)
{
	struct eop *o = req->state;
	cluster_t *cl = ((node_base_t *)req->ctx)->cl;
	if (apply(o->op, o->name, &o->s, &o->msg) != AIS_OK) {
		o->err = errno;
		return;
	}
	if (!o->all || !cl)
		return;
	const cmap_t *m;
	cluster_read_lock(cl, &m, NULL);
	size_t n = 0, total = m ? cmap_size(m) : 0;
	cluster_call_t *calls = xcalloc(total + 1, sizeof(*calls));
	const char *self = cluster_self(cl)->id;
	for (size_t i = 0; i < total; i++) {
		const cmap_node_t *nd = cmap_node(m, i);
		if (!strcmp(nd->id, self))
			continue;
		snprintf(calls[n].url, sizeof(calls[n].url), "%s/v1/etl/%s?local=true%s", nd->intra_url, o->name,
			 o->op == OP_STOP ? "&action=stop" : o->op == OP_START ? "&action=start" : "");
		calls[n].method = o->op == OP_DEL ? "DELETE" : "PUT";
		calls[n].body = o->op == OP_PUT ? &o->body : NULL;
		calls[n++].timeout_ms = 10000;
	}
	cluster_read_unlock(cl);
	size_t ok = cluster_call_all(calls, n);
	for (size_t i = 0; i < n; i++) {
		if ((calls[i].status < 200 || calls[i].status > 299) && !(o->op == OP_DEL && calls[i].status == 404))
			buf_addf(&o->msg, "%s%s: %s", o->msg.len ? "; " : "", calls[i].url,
				 calls[i].status ? "refused" : "no answer");
		else if (calls[i].status == 404)
			ok++;
		buf_free(&calls[i].resp);
	}
	free(calls);
	if (ok != n)
		o->err = EIO;
}

static void eop_done(http_req_t *req)
{
	struct eop *o = req->state;
	if (o->logs && !o->err) {
		http_resp_header(req, "Content-Type", "application/json");
		http_resp_send_buf(req, &o->out);
	} else if (o->err == ENOENT)
		http_resp_error(req, 404, "%s", o->msg.ptr);
	else if (o->err == EINVAL)
		http_resp_error(req, 400, "%s", o->msg.ptr);
	else if (o->err)
		http_resp_error(req, 502, "transformer \"%s\" not applied everywhere: %s", o->name,
				o->msg.ptr ? o->msg.ptr : "");
	else
		http_resp_send(req, "", 0);
}

int etl_h(http_req_t *req)
{
	bool target = ((node_base_t *)req->ctx)->store != NULL;
	sv_t local, what, nm, act;
	bool is_local = http_query_get(req, "local", &local) && sv_eqstr(local, "true");
	struct eop *o = arena_zalloc(req->arena, sizeof(*o));
	arena_cleanup_add(req->arena, eop_cleanup, o);
	if (req->method == HTTP_GET) {
		if (!(http_query_get(req, "what", &what) && sv_eqstr(what, "logs"))) {
			list_json(&o->out);
			http_resp_header(req, "Content-Type", "application/json");
			http_resp_send_buf(req, &o->out);
			return AIS_OK;
		}
		if (!http_query_get(req, "name", &nm) || !name_ok(nm.ptr, nm.len)) {
			http_resp_error(req, 400, "want ?what=logs&name=NAME (1..%d of [A-Za-z0-9_-])", ETL_NAME_MAX);
			return AIS_OK;
		}
		snprintf(o->name, sizeof(o->name), "%.*s", (int)nm.len, nm.ptr);
		if (target) {
			if (logs_json(o->name, &o->out) != AIS_OK) {
				http_resp_error(req, 404, "no transformer \"%s\"", o->name);
				return AIS_OK;
			}
			http_resp_header(req, "Content-Type", "application/json");
			http_resp_send_buf(req, &o->out);
			return AIS_OK;
		}
		o->logs = true;
		req->state = o;
		http_offload_net(req, logs_work, eop_done);
		return AIS_OK;
	}
	if (!name_ok(req->subpath.ptr, req->subpath.len)) {
		http_resp_error(req, 400, "want /v1/etl/NAME (1..%d of [A-Za-z0-9_-])", ETL_NAME_MAX);
		return AIS_OK;
	}
	snprintf(o->name, sizeof(o->name), "%.*s", (int)req->subpath.len, req->subpath.ptr);
	o->all = !is_local && !target;
	o->op = req->method == HTTP_DELETE ? OP_DEL : OP_PUT;
	if (o->op == OP_PUT && http_query_get(req, "action", &act)) {
		if (sv_eqstr(act, "stop"))
			o->op = OP_STOP;
		else if (sv_eqstr(act, "start"))
			o->op = OP_START;
		else {
			http_resp_error(req, 400, "action must be stop or start");
			return AIS_OK;
		}
	}
	if (o->op == OP_PUT) {
		json_error_t je;
		json_t *doc = json_loadb(req->body.ptr ? req->body.ptr : "", req->body.len, 0, &je);
		int rc = spec_parse(doc, o->name, &o->s, &o->msg);
		json_decref(doc);
		if (rc != AIS_OK) {
			http_resp_error(req, 400, "%s", o->msg.ptr);
			return AIS_OK;
		}
		buf_addsv(&o->body, sv_of(&req->body));
	}
	req->state = o;
	http_offload_net(req, eop_work, eop_done);
	return AIS_OK;
}
