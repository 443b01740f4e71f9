/*
 * remotes.c - the remotes a node knows (backend.h): loaded from
 * DIR/remotes.json at start, changed by PUT/DELETE /v1/remotes/ALIAS.
 *
 * Guarantees:
 *  1. The file is only ever written whole (temp file, fsync, rename) with
 *     mode 0600; a file found readable by others is made 0600 at load.
 *  2. Secrets (secret_key, token) are read from the file or a request
 *     body and used only to sign requests: GET /v1/remotes, logs and
 *     errors show alias, kind, url, region, addressing, ca_file and
 *     whether a key is set. A url with credentials in it (user:pass@host)
 *     is refused, at attach and at load, without being quoted.
 *  3. A gateway applies a PUT/DELETE from a client on every node of its
 *     map (?local=true on those calls), and answers 200 only when every
 *     node took it; a remote that a bucket's backend names cannot be
 *     detached (409).
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

#include "aisd/backend.h"
#include "aisd/bmd.h"
#include "aisd/cluster.h"
#include "aisd/cmap.h"
#include "aisd/conf.h"
#include "aisd/log.h"
#include "aisd/names.h"
#include "aisd/status.h"
#include "aisd/util.h"
#include "aisd/banned.h"

#define REMOTES_MAX 64

static pthread_rwlock_t lock = PTHREAD_RWLOCK_INITIALIZER;
static bk_remote_t remotes[REMOTES_MAX];
static size_t nremotes;
static char path[1100];

bool bk_alias_valid(const char *s, size_t len) { return name_ident_valid(s, len, BK_ALIAS_MAX); }

static int str_of(json_t *o, const char *key, char *out, size_t outsz, bool required, buf_t *err)
{
	json_t *v = json_object_get(o, key);
	if (!v) {
		if (required) {
			buf_addf(err, "remote: \"%s\" is required", key);
			return AIS_ERR;
		}
		return AIS_OK;
	}
	if (!json_is_string(v) || json_string_length(v) >= outsz || memchr(json_string_value(v), '\n', json_string_length(v))) {
		buf_addf(err, "remote: \"%s\" must be a string of at most %zu bytes", key, outsz - 1);
		return AIS_ERR;
	}
	memcpy(out, json_string_value(v), json_string_length(v) + 1);
	return AIS_OK;
}

/* A remote from its JSON object (alias from the object, or given). */
static int remote_parse(json_t *o, const char *alias, bk_remote_t *r, buf_t *err)
{
	static const char *const keys[] = {"alias",      "kind",  "url",        "region",  "access_key",
					   "secret_key", "token", "addressing", "ca_file", "blob_min"};
	char kind[8] = "", addr[16] = "path";
	const char *k;
	json_t *v;
	memset(r, 0, sizeof(*r));
	if (!json_is_object(o)) {
		buf_addstr(err, "remote: want a JSON object");
		return AIS_ERR;
	}
	json_object_foreach(o, k, v) {
		size_t i = 0;
		while (i < ARRAY_SIZE(keys) && strcmp(k, keys[i]))
			i++;
		if (i == ARRAY_SIZE(keys)) {
			buf_addf(err, "remote: unknown field \"%s\"", k);
			return AIS_ERR;
		}
	}
	if (alias)
		snprintf(r->alias, sizeof(r->alias), "%s", alias);
	if ((!alias && str_of(o, "alias", r->alias, sizeof(r->alias), true, err) != AIS_OK) ||
	    str_of(o, "kind", kind, sizeof(kind), true, err) != AIS_OK ||
	    str_of(o, "url", r->url, sizeof(r->url), true, err) != AIS_OK ||
	    str_of(o, "region", r->region, sizeof(r->region), false, err) != AIS_OK ||
	    str_of(o, "access_key", r->access_key, sizeof(r->access_key), false, err) != AIS_OK ||
	    str_of(o, "secret_key", r->secret_key, sizeof(r->secret_key), false, err) != AIS_OK ||
	    str_of(o, "token", r->token, sizeof(r->token), false, err) != AIS_OK ||
	    str_of(o, "addressing", addr, sizeof(addr), false, err) != AIS_OK ||
	    str_of(o, "ca_file", r->ca_file, sizeof(r->ca_file), false, err) != AIS_OK)
		return AIS_ERR;
	if (!bk_alias_valid(r->alias, strlen(r->alias))) {
		buf_addf(err, "remote: alias must be 1..%d of [A-Za-z0-9_-]", BK_ALIAS_MAX);
		return AIS_ERR;
	}
	if ((r->kind = bk_kind_parse(kind, strlen(kind))) == BK_NONE) {
		buf_addstr(err, "remote: kind must be \"s3\" or \"ais\"");
		return AIS_ERR;
	}
	if (strncmp(r->url, "http://", 7) && strncmp(r->url, "https://", 8)) {
		buf_addstr(err, "remote: url must start with http:// or https://");
		return AIS_ERR;
	}
	const char *auth = strstr(r->url, "://") + 3;
	if (memchr(auth, '@', strcspn(auth, "/?#"))) { /* rule 2: never a secret in what is shown */
		buf_addstr(err, "remote: url must not hold credentials (user:password@): give access_key and "
				"secret_key (s3) or token (ais)");
		return AIS_ERR;
	}
	if (strcmp(addr, "path") && strcmp(addr, "virtual")) {
		buf_addstr(err, "remote: addressing must be \"path\" or \"virtual\"");
		return AIS_ERR;
	}
	r->virtual_host = !strcmp(addr, "virtual");
	json_t *bm = json_object_get(o, "blob_min");
	if (bm && (!json_is_integer(bm) || json_integer_value(bm) < 0)) {
		buf_addstr(err, "remote: blob_min must be a number of bytes (0: the default)");
		return AIS_ERR;
	}
	r->blob_min = bm ? (uint64_t)json_integer_value(bm) : 0;
	if (!r->access_key[0] != !r->secret_key[0]) {
		buf_addstr(err, "remote: access_key and secret_key go together");
		return AIS_ERR;
	}
	return AIS_OK;
}

/* The file's JSON (secrets included: only for the file). Caller holds lock. */
static void file_json(buf_t *out)
{
	buf_addstr(out, "{\"remotes\":[");
	for (size_t i = 0; i < nremotes; i++) {
		const bk_remote_t *r = &remotes[i];
		json_t *o = json_pack("{s:s,s:s,s:s,s:s,s:s,s:s,s:s,s:s,s:s,s:I}", "alias", r->alias, "kind",
				      bk_kind_name(r->kind), "url", r->url, "region", r->region, "access_key",
				      r->access_key, "secret_key", r->secret_key, "token", r->token, "addressing",
				      r->virtual_host ? "virtual" : "path", "ca_file", r->ca_file, "blob_min",
				      (json_int_t)r->blob_min);
		char *s = json_dumps(o, JSON_COMPACT);
		buf_addstr(out, i ? ",\n" : "\n");
		buf_addstr(out, s);
		free(s);
		json_decref(o);
	}
	buf_addstr(out, "\n]}\n");
}

/* Rule 1. Caller holds the write lock. */
static int save(buf_t *err)
{
	buf_t b = BUF_INIT;
	file_json(&b);
	int rc = file_write_atomic(path, b.ptr, b.len, err);
	buf_free(&b);
	return rc;
}

int bk_remotes_init(const char *dir, const conf_t *c, buf_t *err)
{
	struct stat st;
	json_error_t je;
	bk_limits_t l = {.connect_ms = c->remote_connect_ms, .timeout_ms = c->remote_timeout_ms,
			 .xfer_ms = c->remote_xfer_ms, .stall_ms = c->remote_stall_ms,
			 .min_speed = c->remote_min_speed, .list_bytes = c->remote_list_bytes,
			 .cold_reads = c->remote_cold_reads};
	bk_limits_set(&l);
	snprintf(path, sizeof(path), "%s/remotes.json", dir);
	if (stat(path, &st) != 0)
		return AIS_OK; /* none */
	if (st.st_mode & 077) {
		log_warnx("%s was readable by others: made 0600 (it holds credentials)", path);
		chmod(path, 0600);
	}
	json_t *doc = json_load_file(path, 0, &je), *arr = json_object_get(doc, "remotes"), *o;
	size_t i;
	if (!json_is_array(arr)) {
		buf_addf(err, "%s: want {\"remotes\":[...]} (%s)", path, doc ? "no remotes array" : je.text);
		json_decref(doc);
		return AIS_ERR;
	}
	pthread_rwlock_wrlock(&lock);
	nremotes = 0;
	json_array_foreach(arr, i, o) {
		if (nremotes == REMOTES_MAX || remote_parse(o, NULL, &remotes[nremotes], err) != AIS_OK) {
			if (nremotes == REMOTES_MAX)
				buf_addf(err, "more than %d remotes", REMOTES_MAX);
			buf_addf(err, " (%s, entry %zu)", path, i);
			nremotes = 0;
			pthread_rwlock_unlock(&lock);
			json_decref(doc);
			return AIS_ERR;
		}
		nremotes++;
	}
	pthread_rwlock_unlock(&lock);
	json_decref(doc);
	log_info("remotes: %zu from %s", nremotes, path);
	return AIS_OK;
}

int bk_remote_get(const char *alias, size_t len, bk_remote_t *out)
{
	int rc = AIS_ERR;
	pthread_rwlock_rdlock(&lock);
	for (size_t i = 0; i < nremotes; i++)
		if (strlen(remotes[i].alias) == len && !memcmp(remotes[i].alias, alias, len)) {
			*out = remotes[i];
			rc = AIS_OK;
			break;
		}
	pthread_rwlock_unlock(&lock);
	if (rc != AIS_OK)
		errno = EINVAL;
	return rc;
}

void bk_remotes_json(buf_t *out)
{
	pthread_rwlock_rdlock(&lock);
	buf_addch(out, '[');
	for (size_t i = 0; i < nremotes; i++) {
		const bk_remote_t *r = &remotes[i];
		json_t *o = json_pack("{s:s,s:s,s:s,s:s,s:s,s:s,s:I,s:b}", "alias", r->alias, "kind",
				      bk_kind_name(r->kind), "url", r->url, "region", r->region, "addressing",
				      r->virtual_host ? "virtual" : "path", "ca_file", r->ca_file, "blob_min",
				      (json_int_t)(r->blob_min ? r->blob_min : BK_BLOB_MIN_DEFAULT), "access_key_set",
				      r->access_key[0] != '\0');
		char *s = json_dumps(o, JSON_COMPACT);
		if (i)
			buf_addch(out, ',');
		buf_addstr(out, s);
		free(s);
		json_decref(o);
	}
	buf_addch(out, ']');
	pthread_rwlock_unlock(&lock);
}

/* --- HTTP ------------------------------------------------------------------- */

/* Applies a PUT (r set) or DELETE (r NULL) of alias here. AIS_OK; AIS_ERR
 * with errno ENOENT (no such remote) or EIO (not saved) and msg. */
static int apply(const char *alias, const bk_remote_t *r, buf_t *msg)
{
	size_t i;
	int rc;
	if (!path[0]) {
		buf_addstr(msg, "this node keeps no remotes (no state directory)");
		errno = EIO;
		return AIS_ERR;
	}
	pthread_rwlock_wrlock(&lock);
	for (i = 0; i < nremotes && strcmp(remotes[i].alias, alias); i++)
		;
	bk_remote_t saved[REMOTES_MAX];
	size_t nsaved = nremotes;
	memcpy(saved, remotes, sizeof(saved));
	if (r) {
		if (i == nremotes && nremotes == REMOTES_MAX) {
			pthread_rwlock_unlock(&lock);
			buf_addf(msg, "at most %d remotes", REMOTES_MAX);
			errno = EINVAL;
			return AIS_ERR;
		}
		remotes[i] = *r;
		if (i == nremotes)
			nremotes++;
	} else {
		if (i == nremotes) {
			pthread_rwlock_unlock(&lock);
			buf_addf(msg, "no remote \"%s\"", alias);
			errno = ENOENT;
			return AIS_ERR;
		}
		memmove(&remotes[i], &remotes[i + 1], (nremotes - i - 1) * sizeof(remotes[0]));
		nremotes--;
	}
	rc = save(msg);
	if (rc != AIS_OK) {
		memcpy(remotes, saved, sizeof(saved));
		nremotes = nsaved;
		errno = EIO;
	}
	pthread_rwlock_unlock(&lock);
	if (rc == AIS_OK)
		log_info("remote \"%s\" %s%s%s", alias, r ? "attached: " : "detached", r ? bk_kind_name(r->kind) : "",
			 r ? (r->virtual_host ? " virtual-hosted" : " path-style") : "");
	return rc;
}

/* Is alias named by a bucket's backend? Fills bck with the first. */
static bool in_use(cluster_t *cl, const char *alias, char *bck, size_t bsz)
{
	const bmd_t *b;
	bool used = false;
	if (!cl)
		return false;
	cluster_read_lock(cl, NULL, &b);
	for (size_t i = 0; b && i < bmd_size(b) && !used; i++) {
		const bmd_bucket_t *k = bmd_bucket(b, i);
		if (k->props.backend.provider[0] && !strcmp(k->props.backend.remote, alias)) {
			snprintf(bck, bsz, "%s", k->name);
			used = true;
		}
	}
	cluster_read_unlock(cl);
	return used;
}

struct rop {
	char alias[BK_ALIAS_MAX + 1];
	bk_remote_t r;
	bool put, all;
	int err;
	buf_t msg;
	buf_t body;
};

static void rop_cleanup(void *arg)
{
	struct rop *o = arg;
	buf_free(&o->msg);
	buf_free(&o->body);
}

/* Pool: here, then on every other node of the map (rule 3). */
static void rop_work(http_req_t *req)
{
	struct rop *o = req->state;
	cluster_t *cl = ((node_base_t *)req->ctx)->cl;
	if (apply(o->alias, o->put ? &o->r : NULL, &o->msg) != AIS_OK) {
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
		snprintf(calls[n].url, sizeof(calls[n].url), "%s/v1/remotes/%s?local=true", nd->intra_url, o->alias);
		calls[n].method = o->put ? "PUT" : "DELETE";
		calls[n].body = o->put ? &o->body : NULL;
		calls[n++].timeout_ms = 10000;
	}
	cluster_read_unlock(cl);
	size_t ok = cluster_call_all(calls, n);
	for (size_t i = 0; i < n; i++) {
		if (calls[i].status < 200 || calls[i].status > 299)
			buf_addf(&o->msg, "%s%s: %s", o->msg.len ? "; " : "", calls[i].url,
				 calls[i].status ? "refused" : "no answer");
		buf_free(&calls[i].resp);
	}
	free(calls);
	if (ok != n)
		o->err = EIO;
}

static void rop_done(http_req_t *req)
{
	struct rop *o = req->state;
	if (o->err == ENOENT)
		http_resp_error(req, 404, "%s", o->msg.ptr);
	else if (o->err == EINVAL)
		http_resp_error(req, 400, "%s", o->msg.ptr);
	else if (o->err)
		http_resp_error(req, 502, "remote \"%s\" not applied everywhere: %s", o->alias,
				o->msg.ptr ? o->msg.ptr : "");
	else
		http_resp_send(req, "", 0);
}

int bk_h_remotes(http_req_t *req)
{
	cluster_t *cl = ((node_base_t *)req->ctx)->cl;
	sv_t local;
	if (req->method == HTTP_GET) {
		buf_t out = BUF_INIT;
		buf_addstr(&out, "{\"remotes\":");
		bk_remotes_json(&out);
		buf_addch(&out, '}');
		http_resp_header(req, "Content-Type", "application/json");
		http_resp_send_buf(req, &out);
		return AIS_OK;
	}
	if (!bk_alias_valid(req->subpath.ptr, req->subpath.len)) {
		http_resp_error(req, 400, "want /v1/remotes/ALIAS (1..%d of [A-Za-z0-9_-])", BK_ALIAS_MAX);
		return AIS_OK;
	}
	struct rop *o = arena_zalloc(req->arena, sizeof(*o));
	arena_cleanup_add(req->arena, rop_cleanup, o);
	snprintf(o->alias, sizeof(o->alias), "%.*s", (int)req->subpath.len, req->subpath.ptr);
	o->put = req->method == HTTP_PUT;
	o->all = !(http_query_get(req, "local", &local) && sv_eqstr(local, "true")) && !((node_base_t *)req->ctx)->store;
	if (o->put) {
		json_error_t je;
		json_t *doc = json_loadb(req->body.ptr ? req->body.ptr : "", req->body.len, 0, &je);
		int rc = remote_parse(doc, o->alias, &o->r, &o->msg);
		json_decref(doc);
		if (rc != AIS_OK) {
			http_resp_error(req, 400, "%s", o->msg.ptr);
			return AIS_OK;
		}
		buf_addsv(&o->body, sv_of(&req->body));
	} else {
		char bck[NAME_BUCKET_MAX + 1];
		if (in_use(cl, o->alias, bck, sizeof(bck))) {
			http_resp_error(req, 409, "remote \"%s\" is the backend of bucket \"%s\": change or destroy the bucket first",
					o->alias, bck);
			return AIS_OK;
		}
	}
	req->state = o;
	http_offload_net(req, rop_work, rop_done);
	return AIS_OK;
}
