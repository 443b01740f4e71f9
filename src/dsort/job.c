/*
 * job.c - the dsort job of a target (kind "dsort"; dsort.h has the rules):
 * phase 1 indexes the input shards assigned to this target and serves the
 * index to its peers (GET /v1/dsort/ID); every target then reads every
 * index, computes the same global order and cut (plan.c), and builds the
 * output shards it owns in place (staged writes of the object layer; a
 * .tgz one into a spool: memory up to dsort.memory_limit, then a temporary
 * file on a mountpath); once every target has built its shards, each is
 * committed as a client's write (commit.c). Members' bytes
 * come from this target's store or, with ranged GETs, from the input
 * shard's owner: target to target only.
 */
#include <errno.h>
#include <fcntl.h>
#include <jansson.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/sendfile.h>
#include <unistd.h>

#include "aisd/cluster.h"
#include "aisd/dsort.h"
#include "aisd/hrw.h"
#include "aisd/http.h"
#include "aisd/jobreg.h"
#include "aisd/larc.h"
#include "aisd/log.h"
#include "aisd/names.h"
#include "aisd/status.h"
#include "aisd/tar.h"
#include "aisd/tarw.h"
#include "aisd/tgzw.h"
#include "aisd/util.h"
#include "aisd/xp.h"
#include "dsort_int.h"
#include "aisd/banned.h"

#define PEER_WAIT_MS 10000      /* a peer unreachable, or not knowing the run, this long: the run fails */
#define INDEX_WAIT_MS (24 * 3600 * 1000LL) /* a peer still indexing or building (503): waited this long at most */

/* --- a run ----------------------------------------------------------------- */

dsort_env_t dsort_denv;

static jtruns_t runs = JTRUNS_INIT;

void dsort_fail(struct drun *x, const char *name, const char *why)
{
	pthread_mutex_lock(&x->r.mu);
	x->r.st.errors++;
	snprintf(x->r.st.last_error, sizeof(x->r.st.last_error), "%.100s: %.140s", name, why);
	pthread_mutex_unlock(&x->r.mu);
}

bool dsort_failed(struct drun *x)
{
	pthread_mutex_lock(&x->r.mu);
	bool f = x->r.st.errors != 0;
	pthread_mutex_unlock(&x->r.mu);
	return f || atomic_load(&x->r.abort);
}

static const char *obj_name(struct drun *x, size_t i) { return json_string_value(json_array_get(json_array_get(x->objs, i), 0)); }
static uint64_t obj_size(struct drun *x, size_t i) { return (uint64_t)json_integer_value(json_array_get(json_array_get(x->objs, i), 1)); }

/* A temporary file on a mountpath (unlinked: O_TMPFILE); -1 when none. */
static int mp_tmpfile(void)
{
	store_mp_info_t mp[16];
	int n = store_mp_list(dsort_denv.store, mp, 16);
	for (int i = 0; i < n; i++) {
		if (mp[i].faulted || mp[i].detaching)
			continue;
		int fd = open(mp[i].path, O_TMPFILE | O_RDWR, 0600);
		if (fd >= 0)
			return fd;
	}
	return -1;
}

static bool packed(struct drun *x, size_t i)
{
	const char *nm = obj_name(x, i);
	return larc_kind_of(nm, strlen(nm)) != LARC_NONE;
}

/* The tar of input shard i when this target can read it: the object in its
 * store, or the tar it made of a compressed shard (phase 1); -1 else. */
int dsort_shard_fd(struct drun *x, size_t i)
{
	if (packed(x, i))
		return ix_file(x->ix, i);
	if (x->fds[i] != -2)
		return x->fds[i];
	const char *nm = obj_name(x, i);
	store_meta_t m;
	int fd;
	x->fds[i] = -1;
	if (store_open_obj(dsort_denv.store, x->src, strlen(x->src), nm, strlen(nm), &fd, &m) == AIS_OK) {
		if (m.size == obj_size(x, i))
			x->fds[i] = fd;
		else
			close(fd); /* replaced since the listing: read through its owner, who says */
	}
	return x->fds[i];
}

struct sink {
	int fd;
	uint64_t n, max;
	int (*write)(void *arg, const char *p, size_t n);
	void *arg;
};

static int fd_write(int fd, const char *p, size_t n)
{
	while (n) {
		ssize_t w = write(fd, p, n);
		if (w < 0 && errno == EINTR)
			continue;
		if (w <= 0)
			return AIS_ERR;
		p += w;
		n -= (size_t)w;
	}
	return AIS_OK;
}

static int sink_write(void *arg, const char *p, size_t n)
{
	struct sink *s = arg;
	if (s->n + n > s->max)
		return AIS_ERR; /* more than asked for */
	s->n += n;
	return s->write(s->arg, p, n);
}

/* GETs bytes [off, off+len) of input shard i from its owner (the object
 * layer's map of the moment) into w(arg); len 0: the whole object. false
 * with x's error set. */
bool dsort_fetch(struct drun *x, size_t i, uint64_t off, uint64_t len, int (*w)(void *, const char *, size_t),
		  void *arg)
{
	const char *nm = obj_name(x, i);
	int64_t until = time_mono_ns() + (int64_t)PEER_WAIT_MS * 1000000;
	char range[64], why[240] = "";
	snprintf(range, sizeof(range), "Range: bytes=%llu-%llu", (unsigned long long)off,
		 (unsigned long long)(off + len - 1));
	const char *hdrs[] = {range, NULL};
	bool packed = len && larc_kind_of(nm, strlen(nm)) != LARC_NONE;
	for (int k = 0;; k++) {
		cluster_where_t wh;
		cluster_where(dsort_denv.cl, sv_from(x->src), sv_from(nm), true, &wh, NULL, 0);
		buf_t url = BUF_INIT, msg = BUF_INIT;
		int status = 0, rc = AIS_ERR;
		struct sink s = {.max = len ? len : obj_size(x, i), .write = w, .arg = arg};
		if (packed) { /* its tar is its holder's (phase 1) */
			json_t *tg = json_array_get(json_object_get(x->spec, "targets"),
						    (size_t)json_integer_value(json_array_get(json_array_get(x->objs, i), 2)));
			snprintf(wh.owner_intra, sizeof(wh.owner_intra), "%s", json_string_value(json_array_get(tg, 1)));
			wh.n = 1;
			buf_addf(&url, "%s/v1/dsort/%s?shard=%zu&off=%llu&len=%llu", wh.owner_intra, x->r.id, i,
				 (unsigned long long)off, (unsigned long long)len);
			rc = xs_get_to(url.ptr, NULL, DSORT_IO_TIMEOUT_MS, sink_write, &s, NULL, &status, &msg);
		} else if (wh.n && wh.owner_intra[0]) {
			buf_addf(&url, "%s/v1/objects/%s/", wh.owner_intra, x->src);
			buf_add_pct(&url, sv_from(nm), true);
			rc = xs_get_to(url.ptr, len ? hdrs : NULL, DSORT_IO_TIMEOUT_MS, sink_write, &s, NULL, &status, &msg);
		}
		snprintf(why, sizeof(why), "reading it from %.60s: %s%d %.120s", wh.n ? wh.owner_intra : "(no target)",
			 rc == AIS_OK ? "HTTP " : "", status, msg.ptr ? msg.ptr : rc == AIS_OK ? "" : strerror(errno));
		buf_free(&url);
		buf_free(&msg);
		if (rc == AIS_OK && (status == 200 || status == 206) && s.n == s.max)
			return true;
		if (rc == AIS_OK && status / 100 == 2) {
			dsort_fail(x, nm, packed ? "its holder's tar is shorter than its index" : "its size changed since the listing");
			return false;
		}
		/* s.n bytes went to w: no retry once bytes went (w cannot take them back) */
		if ((rc == AIS_OK && status < 500) || s.n || time_mono_ns() > until || atomic_load(&x->r.abort)) {
			dsort_fail(x, nm, why);
			return false;
		}
		if (k == 0)
			log_warnx("dsort %s: %s: %s (trying again)", x->r.id, nm, why);
		usleep(300 * 1000);
	}
}

static int fdw(void *arg, const char *p, size_t n) { return fd_write(*(int *)arg, p, n); }

/* --- phase 1: the index of this target's input shards ---------------------- */

struct mem {
	char *name;
	size_t klen;
	uint64_t off, size;
	uint32_t pos;
};

static int mem_cmp(const void *a, const void *b)
{
	const struct mem *x = a, *y = b;
	int c = memcmp(x->name, y->name, MIN(x->klen, y->klen));
	if (!c && x->klen != y->klen)
		c = x->klen < y->klen ? -1 : 1;
	return c ? c : (x->pos > y->pos) - (x->pos < y->pos);
}

/* The sort key of a content record: the member's text, trimmed. */
static json_t *content_key(struct drun *x, int fd, const char *shard, const struct mem *m)
{
	char b[DSORT_CONTENT_MAX + 1];
	char why[200];
	if (m->size > DSORT_CONTENT_MAX) {
		snprintf(why, sizeof(why), "member %.100s: more than %d bytes to sort by", m->name, DSORT_CONTENT_MAX);
		dsort_fail(x, shard, why);
		return NULL;
	}
	if (pread(fd, b, m->size, (off_t)m->off) != (ssize_t)m->size) {
		dsort_fail(x, shard, "reading a member to sort by");
		return NULL;
	}
	size_t a = 0, e = m->size;
	while (a < e && strchr(" \t\r\n", b[a]))
		a++;
	while (e > a && strchr(" \t\r\n", b[e - 1]))
		e--;
	bool ok = true;
	if (x->s.content_num)
		dsort_numcmp(b + a, e - a, b + a, e - a, &ok);
	json_t *v = ok ? json_stringn(b + a, e - a) : NULL;
	if (!v) {
		snprintf(why, sizeof(why), "member %.100s: its content is not %s", m->name,
			 x->s.content_num ? "a number (content_type \"number\")" : "text (UTF-8)");
		dsort_fail(x, shard, why);
	}
	return v;
}

/* Appends the records of input shard i (read from fd, size bytes). */
static bool index_shard(struct drun *x, size_t i, int fd, uint64_t size, json_t *recs)
{
	const char *nm = obj_name(x, i);
	tar_iter_t it;
	tar_member_t tm;
	struct mem *v = NULL;
	size_t n = 0, cap = 0;
	int rc;
	tar_iter_init(&it, fd, size);
	while ((rc = tar_iter_next(&it, &tm)) == AIS_OK) {
		if (n == cap)
			v = xrealloc(v, (cap = cap ? cap * 2 : 64) * sizeof(*v));
		v[n].name = xstrndup(tm.name, tm.name_len);
		v[n].klen = ishard_key_len(v[n].name);
		v[n].off = tm.offset;
		v[n].size = tm.size;
		v[n].pos = (uint32_t)n;
		n++;
	}
	bool ok = rc == AIS_DONE;
	if (!ok)
		dsort_fail(x, nm, it.err[0] ? it.err : "not a tar");
	tar_iter_free(&it);
	if (ok)
		qsort(v, n, sizeof(*v), mem_cmp);
	for (size_t a = 0, b; ok && a < n; a = b) {
		for (b = a + 1; b < n && v[b].klen == v[a].klen && !memcmp(v[a].name, v[b].name, v[a].klen);)
			b++;
		json_t *ms = json_array(), *sk = json_null();
		for (size_t j = a; j < b; j++) {
			json_array_append_new(ms, json_pack("[s,I,I]", v[j].name, (json_int_t)v[j].off,
							    (json_int_t)v[j].size));
			if (x->s.alg == DSORT_CONTENT && json_is_null(sk) &&
			    !strcmp(ishard_ext_of(v[j].name), x->s.content_ext)) {
				json_t *k = content_key(x, fd, nm, &v[j]);
				if (k)
					sk = k;
				else
					ok = false;
			}
		}
		if (ok && x->s.alg == DSORT_CONTENT && json_is_null(sk)) {
			char why[200];
			snprintf(why, sizeof(why), "sample %.*s has no member %s to sort by", (int)MIN(v[a].klen, 100),
				 v[a].name, x->s.content_ext);
			dsort_fail(x, nm, why);
			ok = false;
		}
		json_array_append_new(recs, json_pack("[I,I,s%,o,o]", (json_int_t)i, (json_int_t)v[a].pos, v[a].name,
						      v[a].klen, sk, ms));
	}
	for (size_t j = 0; j < n; j++)
		free(v[j].name);
	free(v);
	return ok;
}

/* The file of input shard i as stored here (the compressed bytes of a
 * compressed one), -1 when this target does not store it. The caller
 * closes a compressed one's. */
static int raw_fd(struct drun *x, size_t i)
{
	if (!packed(x, i))
		return dsort_shard_fd(x, i);
	const char *nm = obj_name(x, i);
	store_meta_t m;
	int fd;
	if (store_open_obj(dsort_denv.store, x->src, strlen(x->src), nm, strlen(nm), &fd, &m) != AIS_OK)
		return -1;
	if (m.size != obj_size(x, i)) {
		close(fd);
		return -1;
	}
	return fd;
}

/* A tar (a temporary file on a mountpath) of the regular files of
 * compressed input shard i, read from fd: its descriptor and *size, or -1
 * with x's error set. */
static int unpack(struct drun *x, size_t i, int fd, uint64_t *size)
{
	const char *nm = obj_name(x, i), *mn;
	size_t mlen;
	uint64_t msz;
	larc_t *a = larc_open(fd, obj_size(x, i), larc_kind_of(nm, strlen(nm)));
	int out = mp_tmpfile(), rc = AIS_ERR;
	buf_t h = BUF_INIT;
	char b[65536];
	if (!a || out < 0) {
		dsort_fail(x, nm, "cannot decompress it (no memory or no temporary file)");
		goto out;
	}
	while ((rc = larc_next(a, &mn, &mlen, &msz)) == AIS_OK) {
		h.len = 0;
		tarw_header(&h, mn, mlen, msz, 0);
		if (fd_write(out, h.ptr, h.len) != AIS_OK)
			break;
		uint64_t got = 0;
		ssize_t r;
		while ((r = larc_read(a, b, sizeof(b))) > 0 && fd_write(out, b, (size_t)r) == AIS_OK)
			got += (uint64_t)r;
		h.len = 0;
		tarw_pad(&h, msz);
		if (r < 0 || got != msz || fd_write(out, h.ptr, h.len) != AIS_OK) {
			rc = AIS_ERR;
			break;
		}
	}
	if (rc == AIS_DONE) {
		h.len = 0;
		tarw_end(&h);
		rc = fd_write(out, h.ptr, h.len);
	} else {
		rc = AIS_ERR;
	}
	if (rc != AIS_OK) {
		char why[200];
		snprintf(why, sizeof(why), "decompressing it: %.150s", larc_error(a)[0] ? larc_error(a) : "write error");
		dsort_fail(x, nm, why);
	}
out:
	if (a)
		larc_close(a);
	buf_free(&h);
	if (rc != AIS_OK) {
		if (out >= 0)
			close(out);
		return -1;
	}
	off_t end = lseek(out, 0, SEEK_END);
	*size = end > 0 ? (uint64_t)end : 0;
	return out;
}

/* The run failed (or stopped): its peers learn it from its index (500 with
 * the reason) instead of waiting for it. */
static void publish_failure(struct drun *x)
{
	char why[300];
	pthread_mutex_lock(&x->r.mu);
	snprintf(why, sizeof(why), "dsort %.20s: target %.40s: %.200s", x->r.id, cluster_self(dsort_denv.cl)->id,
		 x->r.st.last_error[0] ? x->r.st.last_error : "stopped");
	pthread_mutex_unlock(&x->r.mu);
	ix_set(x->ix, IX_FAILED, NULL, x->cause[0] ? x->cause : why);
}

/* Rule 2: indexes the input shards assigned to this target and publishes
 * the index. false with x's error set. */
static bool phase1(struct drun *x)
{
	json_t *recs = json_array(), *mine = json_array();
	bool ok = true;
	size_t nobj = json_array_size(x->objs);
	ix_files(x->ix, nobj);
	for (size_t i = 0; ok && i < json_array_size(x->objs) && !atomic_load(&x->r.abort); i++) {
		if ((size_t)json_integer_value(json_array_get(json_array_get(x->objs, i), 2)) != x->me)
			continue;
		int fd = raw_fd(x, i), tmp = -1;
		if (fd < 0) { /* not here (a map change since the gateway's): a copy from its owner */
			tmp = mp_tmpfile();
			ok = tmp >= 0 && dsort_fetch(x, i, 0, 0, fdw, &tmp);
			if (tmp < 0)
				dsort_fail(x, obj_name(x, i), "cannot make a temporary file on a mountpath");
			fd = tmp;
		}
		if (ok && packed(x, i)) { /* a tar of it, which peers read here */
			uint64_t tsize = 0;
			int tar = unpack(x, i, fd, &tsize);
			ok = tar >= 0 && index_shard(x, i, tar, tsize, recs);
			ix_set_file(x->ix, i, tar);
		} else {
			ok = ok && index_shard(x, i, fd, obj_size(x, i), recs);
		}
		if (tmp >= 0)
			close(tmp);
		else if (fd >= 0 && packed(x, i))
			close(fd);
		json_array_append_new(mine, json_integer((json_int_t)i));
	}
	buf_t body = BUF_INIT;
	if (ok && !atomic_load(&x->r.abort)) {
		json_t *doc = json_pack("{s:s,s:o,s:o}", "target", cluster_self(dsort_denv.cl)->id, "shards", mine, "records", recs);
		char *js = json_dumps(doc, JSON_COMPACT);
		json_decref(doc);
		buf_addstr(&body, js);
		free(js);
		if (body.len > dsort_denv.memory_limit) {
			char why[200];
			snprintf(why, sizeof(why), "its index (%zu bytes) exceeds dsort.memory_limit", body.len);
			dsort_fail(x, x->src, why);
			ok = false;
		}
	} else {
		json_decref(mine);
		json_decref(recs);
	}
	ok = ok && !atomic_load(&x->r.abort);
	if (ok)
		ix_set(x->ix, IX_READY, &body, NULL);
	buf_free(&body);
	return ok;
}

int dsort_buf_sink(void *arg, const char *p, size_t n)
{
	buf_add(arg, p, n);
	return AIS_OK;
}

/* The index of target t (its id and intra URL): parsed, or NULL with x's
 * error set. stage: waits for t to have reached it instead (an empty
 * object). */
static json_t *peer_index(struct drun *x, size_t t, enum ix_stage stage)
{
	static const char *const what[] = {"index", "barrier", "commit"};
	json_t *tg = json_array_get(json_object_get(x->spec, "targets"), t);
	const char *tid = json_string_value(json_array_get(tg, 0)), *base = json_string_value(json_array_get(tg, 1));
	if (t == x->me) {
		return ix_parse(x->ix);
	}
	int64_t t0 = time_mono_ns(), unreach = 0;
	char why[300] = "";
	buf_t url = BUF_INIT;
	buf_addf(&url, "%s/v1/dsort/%s%s", base ? base : "", x->r.id,
		 stage == IX_STAGE_BUILT ? "?stage=built" : stage == IX_STAGE_COMMITTED ? "?stage=committed" : "");
	for (int k = 0; !atomic_load(&x->r.abort); k++) {
		buf_t body = BUF_INIT, msg = BUF_INIT;
		int status = 0;
		int rc = xs_get_to(url.ptr, NULL, DSORT_IO_TIMEOUT_MS, dsort_buf_sink, &body, NULL, &status, &msg);
		json_t *d = NULL;
		if (rc == AIS_OK && status == 200)
			d = json_loadb(body.ptr ? body.ptr : "", body.len, 0, NULL);
		snprintf(why, sizeof(why), "target %.40s: %s%d %.200s", tid ? tid : "?", rc == AIS_OK ? "HTTP " : "",
			 status, msg.ptr ? msg.ptr : rc == AIS_OK ? "" : strerror(errno));
		buf_free(&body);
		if (d) {
			buf_free(&msg);
			buf_free(&url);
			return d;
		}
		int64_t now = time_mono_ns();
		if (rc == AIS_OK && status == 503) {
			unreach = 0;
		} else if (rc != AIS_OK || status == 404) { /* gone, or not (yet) told of the run */
			unreach = unreach ? unreach : now;
			if (now - unreach > (int64_t)PEER_WAIT_MS * 1000000) {
				char was[sizeof(why)];
				snprintf(was, sizeof(was), "%s", why);
				snprintf(why, sizeof(why), "lost (%s for %d s): %.240s",
					 rc == AIS_OK ? "not in the run" : "no answer", PEER_WAIT_MS / 1000, was);
				buf_free(&msg);
				break;
			}
		} else { /* its run failed (500: the reason passed on as it is), or an answer not understood */
			json_t *e = status == 500 ? json_loadb(msg.ptr ? msg.ptr : "", msg.len, 0, NULL) : NULL;
			const char *m = json_string_value(json_object_get(e, "message"));
			if (m) {
				snprintf(x->cause, sizeof(x->cause), "%s", m);
				snprintf(why, sizeof(why), "%s", m);
			}
			json_decref(e);
			buf_free(&msg);
			break;
		}
		buf_free(&msg);
		if (now - t0 > (int64_t)INDEX_WAIT_MS * 1000000)
			break;
		usleep(k < 10 ? 50 * 1000 : 250 * 1000);
	}
	buf_free(&url);
	if (!atomic_load(&x->r.abort))
		dsort_fail(x, what[stage], why);
	return NULL;
}

/* --- phase 2: the output shards this target builds ------------------------ */

/* Appends to the run's spool: a memfd up to the memory limit, then a
 * temporary file on a mountpath that takes what the memfd held (rule 5). */
static int spool_write(struct drun *x, const char *p, size_t n)
{
	if (x->spfd < 0 && (x->spfd = memfd_create("dsort", MFD_CLOEXEC)) < 0)
		return AIS_ERR;
	if (!x->spfile && x->splen + n > dsort_denv.memory_limit - dsort_ahead_max()) { /* (the read-ahead's share) */
		int f = mp_tmpfile();
		off_t o = 0;
		if (f < 0)
			return AIS_ERR;
		while (o < (off_t)x->splen) {
			ssize_t w = sendfile(f, x->spfd, &o, (size_t)(x->splen - (uint64_t)o));
			if (w <= 0) {
				close(f);
				return AIS_ERR;
			}
		}
		close(x->spfd);
		x->spfd = f;
		x->spfile = true;
	}
	if (fd_write(x->spfd, p, n) != AIS_OK)
		return AIS_ERR;
	x->splen += n;
	return AIS_OK;
}

/* Bytes gathered before one write to a staged output shard. */
#define STAGE_BUF (1u << 20)
/* Output shards of a run built in place at most (each holds a file open
 * until the commit); the others go to the spool. */
#define STAGE_MAX 512

static bool stage_flush(struct drun *x)
{
	bool ok = !x->wb.len || dsort_denv.stage_write(x->cur, x->wb.ptr, x->wb.len) == AIS_OK;
	x->wb.len = 0;
	return ok;
}

/* Appends to the output shard being built: its staged write (x->cur), or
 * the spool. */
static int out_write(struct drun *x, const char *p, size_t n)
{
	if (!x->cur)
		return spool_write(x, p, n);
	x->curlen += n;
	if (x->wb.len + n > STAGE_BUF && !stage_flush(x))
		return AIS_ERR;
	if (n >= STAGE_BUF)
		return dsort_denv.stage_write(x->cur, p, n);
	buf_add(&x->wb, p, n);
	return AIS_OK;
}

static int spw(void *arg, const char *p, size_t n) { return out_write(arg, p, n); }

/* Member data: size bytes at off of input shard i, into the spool. */
static bool member_data(struct drun *x, size_t i, uint64_t off, uint64_t size)
{
	if (!size)
		return true;
	int fd = dsort_shard_fd(x, i);
	for (uint64_t n; fd < 0 && size; off += n, size -= n) {
		n = MIN(size, DSORT_READ_MAX);
		if (!dsort_fetch(x, i, off, n, spw, x))
			return false;
	}
	char b[65536];
	while (size) {
		ssize_t r = pread(fd, b, MIN(size, sizeof(b)), (off_t)off);
		if (r <= 0 || out_write(x, b, (size_t)r) != AIS_OK) {
			dsort_fail(x, obj_name(x, i), r <= 0 ? "reading a member"
						       : x->cur ? "writing it in place (a staged object)"
								: "writing the spool");
			return false;
		}
		off += (uint64_t)r;
		size -= (uint64_t)r;
	}
	return true;
}

static ssize_t spool_cookie_write(void *arg, const char *p, size_t n)
{
	return spool_write(arg, p, n) == AIS_OK ? (ssize_t)n : -1;
}

/* A .tgz/.tar.gz output shard: the tar just built at [start, splen) of the
 * spool is compressed (tgzw.h) and takes its place. false with x's error
 * set. */
static bool compress_built(struct drun *x, const char *name, uint64_t start)
{
	uint64_t tlen = x->splen - start, zat = x->splen;
	int rfd = dup(x->spfd); /* the spool may move to a file while it grows: the tar stays readable here */
	cookie_io_functions_t io = {.write = spool_cookie_write};
	FILE *out = rfd >= 0 ? fopencookie(x, "w", io) : NULL;
	buf_t err = BUF_INIT;
	bool ok = out && tgzw_compress_at(rfd, start, tlen, out, &err) == AIS_OK;
	if (out && fclose(out) != 0)
		ok = false;
	if (rfd >= 0)
		close(rfd);
	uint64_t zlen = x->splen - zat, done = 0;
	char b[65536];
	while (ok && done < zlen) { /* moved down over the tar (zat > start: no overlap forward) */
		size_t k = (size_t)MIN(zlen - done, sizeof(b));
		ok = pread(x->spfd, b, k, (off_t)(zat + done)) == (ssize_t)k &&
		     pwrite(x->spfd, b, k, (off_t)(start + done)) == (ssize_t)k;
		done += k;
	}
	ok = ok && ftruncate(x->spfd, (off_t)(start + zlen)) == 0 && lseek(x->spfd, 0, SEEK_END) == (off_t)(start + zlen);
	if (ok)
		x->splen = start + zlen;
	else
		dsort_fail(x, name, err.len ? err.ptr : "compressing the shard in the spool");
	buf_free(&err);
	return ok;
}

/* Records built shard name: staged (x->cur, curlen bytes) or at [start,
 * splen) of the spool. */
static void built(struct drun *x, const char *name, uint64_t start)
{
	size_t i = json_array_size(x->built);
	x->stage = xrealloc(x->stage, (i + 1) * sizeof(*x->stage));
	x->stage[i] = x->cur;
	json_array_append_new(x->built, json_pack("[s,I,I]", name, (json_int_t)(x->cur ? 0 : start),
						  (json_int_t)(x->cur ? x->curlen : x->splen - start)));
	x->cur = NULL;
}

/* Builds output shard o (named name) in place (a staged write of DST/name:
 * rule 5) or, for a compressed one or past STAGE_MAX, into the spool; its
 * records taken from the read-ahead a (whose position is o's first
 * record). */
static void build(struct drun *x, const dsort_rec_t *recs, const size_t *order, const dsort_out_t *o,
		  const char *name, struct ahead *a)
{
	buf_t h = BUF_INIT;
	bool ok = true;
	uint64_t start = x->splen;
	x->cur = NULL;
	x->curlen = 0;
	x->wb.len = 0;
	if (!tgzw_is_tgz(name, strlen(name)) && x->nstaged < STAGE_MAX) {
		buf_t why = BUF_INIT;
		if ((x->cur = dsort_denv.stage_open(dsort_denv.arg, x->dst, name, &why)))
			x->nstaged++;
		else /* (the commit's PUT says what is wrong, if anything) */
			log_info("dsort %s: %s/%s: built in the spool: %s", x->r.id, x->dst, name,
				 why.len ? why.ptr : "no staged write");
		buf_free(&why);
	}
	for (size_t k = 0; k < o->n && ok && !dsort_failed(x); k++, dsort_ahead_next(a)) {
		const dsort_rec_t *r = &recs[order[o->first + k]];
		json_t *m;
		size_t j;
		uint64_t s0 = 0;
		bool bad;
		const buf_t *span = dsort_ahead_take(a, &s0, &bad);
		if (bad) {
			ok = false;
			break;
		}
		json_array_foreach(r->members, j, m) {
			if (!ok)
				break;
			const char *mn = json_string_value(json_array_get(m, 0));
			uint64_t off = (uint64_t)json_integer_value(json_array_get(m, 1));
			uint64_t sz = (uint64_t)json_integer_value(json_array_get(m, 2));
			h.len = 0;
			tarw_header(&h, mn, strlen(mn), sz, 0);
			ok = out_write(x, h.ptr, h.len) == AIS_OK &&
			     (span ? out_write(x, span->ptr + (off - s0), sz) == AIS_OK
				   : member_data(x, r->shard, off, sz));
			h.len = 0;
			tarw_pad(&h, sz);
			ok = ok && out_write(x, h.ptr, h.len) == AIS_OK;
			if (!ok)
				break;
		}
		pthread_mutex_lock(&x->r.mu);
		x->r.st.walked++;
		pthread_mutex_unlock(&x->r.mu);
	}
	h.len = 0;
	tarw_end(&h);
	ok = ok && !dsort_failed(x) && out_write(x, h.ptr, h.len) == AIS_OK && (!x->cur || stage_flush(x));
	buf_free(&h);
	if (ok && !x->cur && tgzw_is_tgz(name, strlen(name)) && !compress_built(x, name, start))
		return;
	if (ok) {
		built(x, name, start);
		return;
	}
	if (!dsort_failed(x))
		dsort_fail(x, name, x->cur ? "writing it in place (a staged object)"
					   : "writing the spool (a temporary file on a mountpath)");
	if (x->cur) {
		dsort_denv.stage_free(x->cur);
		x->cur = NULL;
	}
}

/* Waits for every peer to reach stage: built (the barrier of rule 5),
 * committed (the confirmation of rule 6). x's error set when one fails
 * or is lost. */
static void await_peers(struct drun *x, enum ix_stage stage)
{
	size_t nt = json_array_size(json_object_get(x->spec, "targets"));
	for (size_t t = 0; t < nt && !dsort_failed(x); t++)
		if (t != x->me)
			json_decref(peer_index(x, t, stage));
}

/* Rules 3-5: every index read, the order computed and cut, the output
 * shards this target owns built. */
static void phase2(struct drun *x)
{
	json_t *targets = json_object_get(x->spec, "targets");
	size_t nt = json_array_size(targets), nobj = json_array_size(x->objs), n = 0, cap = 0;
	json_t **docs = xcalloc(nt + 1, sizeof(*docs));
	int *seen = xcalloc(nobj + 1, sizeof(*seen));
	dsort_rec_t *recs = NULL;
	size_t *order = NULL;
	dsort_out_t *outs = NULL;
	size_t nouts = 0;
	uint64_t *dig = xcalloc(nt + 1, sizeof(*dig));
	buf_t err = BUF_INIT, un = BUF_INIT;
	for (size_t t = 0; t < nt && !dsort_failed(x); t++) {
		const char *tid = json_string_value(json_array_get(json_array_get(targets, t), 0));
		dig[t] = hrw_digest(tid, strlen(tid));
		if (!(docs[t] = peer_index(x, t, IX_STAGE_NONE)))
			break;
		json_t *e;
		size_t i;
		json_array_foreach(json_object_get(docs[t], "shards"), i, e) {
			size_t s = (size_t)json_integer_value(e);
			if (s < nobj && (size_t)json_integer_value(json_array_get(json_array_get(x->objs, s), 2)) == t)
				seen[s]++;
		}
		json_array_foreach(json_object_get(docs[t], "records"), i, e) {
			if (n == cap)
				recs = xrealloc(recs, (cap = cap ? cap * 2 : 1024) * sizeof(*recs));
			dsort_rec_t *r = &recs[n];
			json_t *sk = json_array_get(e, 3), *m;
			size_t j;
			r->shard = (uint32_t)json_integer_value(json_array_get(e, 0));
			r->pos = (uint32_t)json_integer_value(json_array_get(e, 1));
			r->key = json_string_value(json_array_get(e, 2));
			r->skey = json_string_value(sk);
			r->sklen = json_string_length(sk);
			r->members = json_array_get(e, 4);
			r->bytes = 0;
			if (!r->key || r->shard >= nobj || !json_is_array(r->members)) {
				dsort_fail(x, "index", "a peer's index is not understood");
				break;
			}
			json_array_foreach(r->members, j, m) r->bytes += ishard_member_bytes(
				json_string_value(json_array_get(m, 0)) ? json_string_value(json_array_get(m, 0)) : "",
				(uint64_t)json_integer_value(json_array_get(m, 2)));
			n++;
		}
	}
	for (size_t s = 0; s < nobj && !dsort_failed(x); s++)
		if (seen[s] != 1) {
			dsort_fail(x, obj_name(x, s), seen[s] ? "indexed twice" : "indexed by no target (the cluster changed?)");
			break;
		}
	if (!dsort_failed(x)) {
		order = xcalloc(n + 1, sizeof(*order));
		dsort_order(&x->s, recs, n, order);
		if (dsort_cut(&x->s, recs, order, n, &outs, &nouts, &err) != 0)
			dsort_fail(x, x->s.tpl, err.ptr);
	}
	char name[ISHARD_NAME_MAX + 1];
	const char *self = cluster_self(dsort_denv.cl)->id;
	size_t mine = 0;
	bool *own = xcalloc(nouts + 1, sizeof(*own));
	for (size_t i = 0; i < nouts && !dsort_failed(x); i++) {
		dsort_out_name(&x->s, outs, i, name);
		un.len = 0;
		buf_addf(&un, "%s/%s", x->dst, name);
		size_t b = hrw_owner(hrw_name_hash(un.ptr, un.len), dig, nt);
		own[i] = !strcmp(json_string_value(json_array_get(json_array_get(targets, b), 0)), self);
		mine += own[i];
	}
	pthread_mutex_lock(&x->r.mu);
	x->r.st.total = mine;
	pthread_mutex_unlock(&x->r.mu);
	x->ms[1] = time_mono_ns();
	size_t nseq = 0;
	const dsort_rec_t **seq = xcalloc(n + 1, sizeof(*seq));
	for (size_t i = 0; i < nouts && !dsort_failed(x); i++)
		for (size_t k = 0; own[i] && k < outs[i].n; k++)
			seq[nseq++] = &recs[order[outs[i].first + k]];
	struct ahead ah;
	dsort_ahead_start(&ah, x, seq, nseq);
	for (size_t i = 0; i < nouts && !dsort_failed(x); i++) /* (one cut short by a failure ends the run) */
		if (own[i]) {
			dsort_out_name(&x->s, outs, i, name);
			build(x, recs, order, &outs[i], name, &ah);
		}
	dsort_ahead_stop(&ah);
	free(seq);
	x->ms[2] = time_mono_ns();
	if (!dsort_failed(x)) {
		ix_reach(x->ix, IX_STAGE_BUILT);
		await_peers(x, IX_STAGE_BUILT);
	}
	x->ms[3] = time_mono_ns();
	if (!dsort_failed(x)) { /* rule 6: done only once every peer committed too */
		x->committing = true;
		dsort_commit(x);
		x->ms[4] = time_mono_ns();
		if (!dsort_failed(x))
			ix_reach(x->ix, IX_STAGE_COMMITTED);
		await_peers(x, IX_STAGE_COMMITTED);
	}
	x->ms[5] = time_mono_ns();
	free(own);
	for (size_t t = 0; t < nt; t++)
		json_decref(docs[t]);
	free(docs);
	free(seen);
	free(recs);
	free(order);
	free(outs);
	free(dig);
	buf_free(&err);
	buf_free(&un);
}

static void *run(void *arg)
{
	struct drun *x = arg;
	log_set_action("dsort");
	int64_t t0 = time_mono_ns();
	if (phase1(x)) {
		x->ms[0] = time_mono_ns();
		phase2(x);
	}
	if (dsort_failed(x))
		publish_failure(x);
	if (dsort_failed(x) && !atomic_load(&runs.stopping))
		dsort_undo(x);
	ix_end(x->ix);
	for (size_t i = 0; i < json_array_size(x->objs); i++)
		if (x->fds[i] >= 0)
			close(x->fds[i]);
	if (x->spfd >= 0)
		close(x->spfd);
	for (size_t i = 0; x->stage && i < json_array_size(x->built); i++)
		if (x->stage[i])
			dsort_denv.stage_free(x->stage[i]); /* (one not committed goes) */
	free(x->stage);
	buf_free(&x->wb);
	xs_release();
	pthread_mutex_lock(&x->r.mu);
	x->r.st.state = atomic_load(&x->r.abort) ? JOB_ABORTED : x->r.st.errors ? JOB_FAILED : JOB_DONE;
	x->r.st.end_ns = time_now_ns();
	job_stats_t fin = x->r.st;
	pthread_mutex_unlock(&x->r.mu);
	log_info("dsort %s %s -> %s: %s: %llu shards (%llu bytes) of %llu, %llu samples, %llu errors%s%s", x->r.id,
		 x->src, x->dst, job_state_name(fin.state), (unsigned long long)fin.moved,
		 (unsigned long long)fin.moved_bytes, (unsigned long long)fin.total, (unsigned long long)fin.walked,
		 (unsigned long long)fin.errors, fin.errors ? ": " : "", fin.errors ? fin.last_error : "");
	char steps[160] = "";
	for (int k = 0, at = 0; k < 6 && x->ms[k] && at < (int)sizeof(steps); k++) {
		at += snprintf(steps + at, sizeof(steps) - (size_t)at, "%s%lld", k ? " " : "",
			       (long long)((x->ms[k] - (k ? x->ms[k - 1] : t0)) / 1000000));
	}
	log_info("dsort %s: steps (ms: index, plan, build, barrier, commit, confirmation): %s", x->r.id, steps);
	jtruns_end(&runs, &x->r, &fin);
	pthread_mutex_destroy(&x->r.mu);
	json_decref(x->spec);
	json_decref(x->written);
	json_decref(x->built);
	dsort_ofile_free(&x->of);
	free(x->fds);
	free(x);
	httpc_sync_release();
	return NULL;
}

/* The registry's start: the gateway's spec (dsort.h), with "bucket", "to",
 * "objects" and "targets". A run cut by a restart starts again from its
 * spec (rule 6): the same index, plan and shards. */
static int kind_start(void *arg, const char *id, json_t *spec, bool resume, buf_t *err)
{
	(void)arg;
	const char *src = json_string_value(json_object_get(spec, "bucket"));
	const char *dst = json_string_value(json_object_get(spec, "to"));
	json_t *objs = json_object_get(spec, "objects"), *targets = json_object_get(spec, "targets"), *e;
	size_t i, me = SIZE_MAX;
	if (!src || !dst || !name_bucket_valid(src, strlen(src)) || !name_bucket_valid(dst, strlen(dst)) ||
	    !json_is_array(objs) || !json_is_array(targets) || json_array_size(objs) > UINT32_MAX) {
		buf_addstr(err, "dsort: value wants \"bucket\":SRC,\"to\":DST, the input shards and the targets");
		return 400;
	}
	json_array_foreach(targets, i, e) {
		const char *tid = json_string_value(json_array_get(e, 0));
		if (!tid || !json_is_string(json_array_get(e, 1))) {
			buf_addstr(err, "dsort: value.targets wants [[ID,URL],..]");
			return 400;
		}
		if (!strcmp(tid, cluster_self(dsort_denv.cl)->id))
			me = i;
	}
	json_array_foreach(objs, i, e) {
		if (!json_is_string(json_array_get(e, 0)) || json_integer_value(json_array_get(e, 1)) < 0 ||
		    (size_t)json_integer_value(json_array_get(e, 2)) >= json_array_size(targets)) {
			buf_addstr(err, "dsort: value.objects wants [[NAME,SIZE,TARGET],..]");
			return 400;
		}
	}
	struct drun *x = xcalloc(1, sizeof(*x));
	int rc = dsort_spec_parse(spec, &x->s, err);
	if (rc) {
		free(x);
		return rc;
	}
	if (x->s.alg == DSORT_ORDER) {
		json_t *ot = json_object_get(spec, "order_text");
		if (!json_is_string(ot)) {
			buf_addstr(err, "dsort: algorithm \"order\" without the order file's text");
			free(x);
			return 400;
		}
		if ((rc = dsort_ofile_parse(json_string_value(ot), json_string_length(ot), x->s.tpl, &x->of, err))) {
			free(x);
			return rc;
		}
	}
	x->s.of = &x->of;
	if (me == SIZE_MAX) { /* joined after the gateway's start: the others do without it */
		buf_addstr(err, "dsort: this target is not among the job's targets");
		dsort_ofile_free(&x->of);
		free(x);
		return 409;
	}
	jtrun_init(&x->r, "dsort", id);
	snprintf(x->src, sizeof(x->src), "%s", src);
	snprintf(x->dst, sizeof(x->dst), "%s", dst);
	x->spec = json_deep_copy(spec);
	json_object_del(x->spec, "id");
	x->objs = json_object_get(x->spec, "objects");
	x->me = me;
	x->fds = xcalloc(json_array_size(x->objs) + 1, sizeof(*x->fds));
	for (i = 0; i < json_array_size(x->objs); i++)
		x->fds[i] = -2;
	x->written = json_array();
	x->built = json_array();
	x->spfd = -1;
	x->resumed = resume;
	x->ix = ix_add(id);
	rc = jtruns_start(&runs, &x->r, src, x->spec, run, x, err);
	if (rc) {
		ix_set(x->ix, IX_FAILED, NULL, "dsort: the run did not start on a target");
		ix_end(x->ix);
		pthread_mutex_destroy(&x->r.mu);
		json_decref(x->spec);
		json_decref(x->written);
		json_decref(x->built);
		dsort_ofile_free(&x->of);
		free(x->fds);
		free(x);
	}
	return rc;
}

static const jreg_kind_t kind = {
	.name = "dsort", .arg = &runs, .start = kind_start, .stop = jtruns_kind_stop,
	.progress = jtruns_kind_progress, .resumes = true};

void dsort_register(const dsort_env_t *env)
{
	dsort_denv = *env;
	jtruns_open(&runs);
	jreg_register(&kind);
}

void dsort_stop(void)
{
	jtruns_stop(&runs);
	ix_free_ended();
}
