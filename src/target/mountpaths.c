/*
 * mountpaths.c - a target's mountpaths at run time (AIStore's
 * /v1/daemon/mountpaths):
 *   GET    /v1/daemon/mountpaths                      the list and the resilver job
 *   PUT    /v1/daemon/mountpaths {"action":"attach-mp","value":"/path"}
 *   DELETE /v1/daemon/mountpaths {"action":"detach-mp","value":"/path"}
 * ("attach"/"detach" are accepted too). Each change starts the resilver
 * job (src/jobs/resilver.c), which moves objects to their HRW mountpath
 * while reads keep working; a detach answers at once and the mountpath
 * is closed when the job has drained it. The list of open mountpaths is
 * saved in DIR/mountpaths ("active PATH" / "detaching PATH" lines) and
 * replaces store.mountpaths at the next start (tgt_mountpaths_load).
 */
#include <errno.h>
#include <fcntl.h>
#include <jansson.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "aisd/jobs.h"
#include "aisd/log.h"
#include "aisd/status.h"
#include "target_int.h"
#include "aisd/util.h"
#include "aisd/banned.h"

#define MP_LIST_FILE "mountpaths"

const char *tgt_state_dir(const conf_t *c)
{
	return c->node_dir[0] ? c->node_dir : c->mountpaths[0];
}

void tgt_mountpaths_save(void *arg)
{
	target_t *t = arg;
	store_mp_info_t *mp = xcalloc(CONF_MAX_MOUNTPATHS, sizeof(*mp));
	int n = store_mp_list(t->store, mp, CONF_MAX_MOUNTPATHS);
	char path[1100];
	buf_t b = BUF_INIT;
	for (int i = 0; i < n; i++) /* a faulted one is saved active: a restart tries it again */
		buf_addf(&b, "%s %s\n", mp[i].detaching ? "detaching" : "active", mp[i].path);
	free(mp);
	snprintf(path, sizeof(path), "%s/%s", tgt_state_dir(t->conf), MP_LIST_FILE);
	buf_t err = BUF_INIT;
	if (file_write_atomic(path, b.ptr ? b.ptr : "", b.len, &err) != AIS_OK)
		log_warnx("saving the mountpath list: %s (a restart uses store.mountpaths)", err.ptr);
	buf_free(&err);
	buf_free(&b);
}

int tgt_mountpaths_load(const conf_t *c, conf_t *out, char (*detaching)[1024], int *ndet)
{
	char path[1100], line[1100];
	*ndet = 0;
	snprintf(path, sizeof(path), "%s/%s", tgt_state_dir(c), MP_LIST_FILE);
	FILE *f = fopen(path, "re");
	if (!f)
		return AIS_DONE;
	int n = 0;
	while (fgets(line, sizeof(line), f) && n < CONF_MAX_MOUNTPATHS) {
		size_t l = strlen(line);
		while (l && (line[l - 1] == '\n' || line[l - 1] == '\r'))
			line[--l] = '\0';
		const char *p = NULL;
		bool det = false;
		if (!strncmp(line, "active ", 7))
			p = line + 7;
		else if (!strncmp(line, "detaching ", 10))
			p = line + 10, det = true;
		if (!p || p[0] != '/' || strlen(p) >= sizeof(out->mountpaths[0])) {
			log_warnx("%s: bad line \"%.100s\": the file is ignored", path, line);
			fclose(f);
			return AIS_ERR;
		}
		snprintf(out->mountpaths[n++], sizeof(out->mountpaths[0]), "%s", p);
		if (det)
			snprintf(detaching[(*ndet)++], 1024, "%s", p);
	}
	fclose(f);
	if (n == 0)
		return AIS_ERR;
	out->n_mountpaths = n;
	log_info("mountpaths from %s (%d; attach/detach at run time replace store.mountpaths)", path, n);
	return AIS_OK;
}

struct mpreq {
	bool attach, list;
	char path[1024];
	int err;
	buf_t msg;
	buf_t out;
};

static void mpreq_cleanup(void *arg)
{
	struct mpreq *m = arg;
	buf_free(&m->msg);
	buf_free(&m->out);
}

/* {"mountpaths":[{"path","state","objects","bytes","capacity","free"[,"fault"]}..],"resilver":{job}};
 * state is active, detaching or faulted (failed at run time; fault says why) */
static void list_json(target_t *t, buf_t *out)
{
	store_mp_stats_t *st = xcalloc(CONF_MAX_MOUNTPATHS, sizeof(*st));
	int n = 0;
	job_stats_t js;
	store_stats(t->store, st, CONF_MAX_MOUNTPATHS, &n);
	buf_addstr(out, "{\"mountpaths\":[");
	for (int i = 0; i < n; i++) {
		buf_addstr(out, i ? ",{\"path\":" : "{\"path\":");
		buf_add_json_str(out, st[i].path, strlen(st[i].path));
		buf_addf(out, ",\"state\":\"%s\",\"objects\":%llu,\"bytes\":%llu,\"capacity\":%llu,\"free\":%llu",
		         st[i].faulted ? "faulted" : st[i].detaching ? "detaching" : "active",
		         (unsigned long long)st[i].objects, (unsigned long long)st[i].bytes,
		         (unsigned long long)st[i].total_bytes, (unsigned long long)st[i].free_bytes);
		if (st[i].faulted) {
			buf_addstr(out, ",\"fault\":");
			buf_add_json_str(out, st[i].fault, strlen(st[i].fault));
		}
		buf_addch(out, '}');
	}
	free(st);
	buf_addstr(out, "],\"resilver\":");
	res_stats(t->res, &js);
	job_stats_json(&js, "resilver", out);
	buf_addch(out, '}');
}

static void mp_work(http_req_t *req)
{
	struct mpreq *m = req->state;
	target_t *t = req->ctx;
	if (!m->list) {
		int rc = m->attach ? store_mp_attach(t->store, m->path, &m->msg)
		                   : store_mp_detach_begin(t->store, m->path, &m->msg);
		if (rc != AIS_OK) {
			m->err = errno ? errno : EIO;
			return;
		}
		tgt_mountpaths_save(t);
		char why[1100];
		snprintf(why, sizeof(why), "mountpath %s %s", m->path, m->attach ? "attached" : "detaching");
		res_kick(t->res, why);
	}
	list_json(t, &m->out);
}

static void mp_done(http_req_t *req)
{
	struct mpreq *m = req->state;
	const char *msg = m->msg.ptr ? m->msg.ptr : "";
	if (!m->err) {
		http_resp_header(req, "Content-Type", "application/json");
		http_resp_send_buf(req, &m->out);
	} else if (ais_errno(m->err)->phrase && msg[0]) {
		http_resp_error(req, ais_errno_status(m->err), "%s", msg);
	} else {
		tgt_resp_errmsg(req, ais_errno(m->err), m->err, m->path, msg);
	}
}

/* Is dir (absolute, resolved) root or under it? */
static bool under(const char *dir, const char *root)
{
	size_t n = strlen(root);
	while (n > 1 && root[n - 1] == '/')
		n--;
	return !strncmp(dir, root, n) && (dir[n] == '\0' || dir[n] == '/' || n == 1);
}

/* Where attach-mp may add a mountpath (store.mountpath_roots, else the
 * parents of the configured mountpaths; store.allow_any_path: anywhere).
 * The path's deepest existing ancestor is resolved (symlinks, "..") and
 * must lie under a resolved root: AIS_OK, or AIS_ERR with the reason. */
static int attach_allowed(const conf_t *c, const char *path, buf_t *why)
{
	char probe[1024], real[PATH_MAX], root[PATH_MAX];
	if (c->allow_any_path)
		return AIS_OK;
	snprintf(probe, sizeof(probe), "%s", path);
	while (!realpath(probe, real)) {
		char *slash = strrchr(probe, '/');
		if (errno != ENOENT || !slash || slash == probe) {
			buf_addf(why, "cannot resolve %s: %s", path, strerror(errno));
			return AIS_ERR;
		}
		*slash = '\0';
	}
	if (strstr(path + strlen(probe), "/..")) {
		buf_addf(why, "%s: \"..\" in the part that does not exist yet", path);
		return AIS_ERR;
	}
	if (c->mountpath_roots[0]) {
		const char *p = c->mountpath_roots;
		while (*p) {
			size_t n = strcspn(p, ",");
			char one[1024];
			snprintf(one, sizeof(one), "%.*s", (int)MIN(n, sizeof(one) - 1), p);
			if (one[0] && realpath(one, root) && under(real, root))
				return AIS_OK;
			p += n + (p[n] == ',');
		}
	} else {
		for (int i = 0; i < c->n_mountpaths; i++) {
			char parent[1024];
			snprintf(parent, sizeof(parent), "%s", c->mountpaths[i]);
			char *slash = strrchr(parent, '/');
			if (slash)
				*(slash == parent ? slash + 1 : slash) = '\0';
			if (realpath(parent, root) && under(real, root))
				return AIS_OK;
		}
	}
	buf_addf(why, "%s is not under store.mountpath_roots (%s); store.allow_any_path = on lifts this", path,
		 c->mountpath_roots[0] ? c->mountpath_roots : "the parents of store.mountpaths");
	return AIS_ERR;
}

int tgt_mountpaths(http_req_t *req)
{
	struct mpreq *m = arena_zalloc(req->arena, sizeof(*m));
	if (req->subpath.len) {
		http_resp_error(req, 404, "no such resource: /v1/daemon/mountpaths takes no path after it");
		return AIS_OK;
	}
	m->list = req->method == HTTP_GET;
	if (!m->list) {
		json_error_t jerr;
		json_t *doc = json_loadb(req->body.ptr ? req->body.ptr : "", req->body.len, 0, &jerr);
		const char *a = json_string_value(json_object_get(doc, "action"));
		json_t *v = json_object_get(doc, "value");
		bool put = req->method == HTTP_PUT;
		bool ok = a && (put ? !strcmp(a, "attach-mp") || !strcmp(a, "attach")
		                    : !strcmp(a, "detach-mp") || !strcmp(a, "detach"));
		if (!ok || !json_is_string(v) || json_string_length(v) == 0 ||
		    json_string_length(v) >= sizeof(m->path) - 64 || json_string_value(v)[0] != '/' ||
		    memchr(json_string_value(v), '\n', json_string_length(v))) {
			json_decref(doc);
			http_resp_error(req, 400, "%s /v1/daemon/mountpaths wants {\"action\":\"%s\",\"value\":\"/ABSOLUTE/PATH\"}",
			                put ? "PUT" : "DELETE", put ? "attach-mp" : "detach-mp");
			return AIS_OK;
		}
		snprintf(m->path, sizeof(m->path), "%s", json_string_value(v));
		json_decref(doc);
		/* "/a/b/" and "/a/b" are one mountpath */
		for (size_t l = strlen(m->path); l > 1 && m->path[l - 1] == '/'; l--)
			m->path[l - 1] = '\0';
		m->attach = put;
		buf_t why = BUF_INIT;
		if (put && attach_allowed(((target_t *)req->ctx)->conf, m->path, &why) != AIS_OK) {
			http_resp_error(req, 403, "attach-mp refused: %s", why.ptr);
			buf_free(&why);
			return AIS_OK;
		}
		buf_free(&why);
	}
	req->state = m;
	arena_cleanup_add(req->arena, mpreq_cleanup, m);
	http_offload(req, mp_work, mp_done);
	return AIS_OK;
}
