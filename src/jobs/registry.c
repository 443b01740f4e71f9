/*
 * registry.c - the node's job registry (jobreg.h): the kinds and their
 * hooks, the live runs and the bounded history of finished ones, each run
 * persisted as DIR/jobs/ID.json so a restarted node reports and resumes it,
 * and the per-kind counters of /metrics. The rules are in jobreg.h.
 *
 * Locking: one mutex guards the tables. A kind's hooks take the kind's own
 * locks and a kind calls jreg_begin/jreg_end under them, so the registry
 * never calls a hook with its mutex held: it copies what it needs and lets
 * go first.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <unistd.h>

#include "aisd/jobreg.h"
#include "aisd/log.h"
#include "aisd/metrics.h"
#include "aisd/names.h"
#include "aisd/status.h"
#include "aisd/util.h"
#include "aisd/banned.h"

struct jrun {
	char id[JREG_ID_MAX + 1];
	char kind[32];
	char bucket[NAME_BUCKET_MAX + 1];
	json_t *spec;     /* the start's value (resume), or NULL */
	job_stats_t st;   /* final (history), or as last recorded (live) */
	bool live;
	bool resume;      /* read running from its file: jreg_resume's */
	struct jrun *next;
};

struct kstat {
	char kind[32];
	uint64_t started, done, failed, aborted, objects, bytes;
};

static pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;
static const jreg_kind_t *kinds[JREG_KINDS_MAX];
static struct kstat kstats[JREG_KINDS_MAX];
static struct jrun *runs; /* live first, then history; each newest first */
static char jdir[1100];   /* DIR/jobs, "" when in memory only */

/* --- records -------------------------------------------------------------------------- */

static struct kstat *kstat_of(const char *kind)
{
	for (size_t i = 0; i < JREG_KINDS_MAX; i++)
		if (!strcmp(kstats[i].kind, kind))
			return &kstats[i];
	for (size_t i = 0; i < JREG_KINDS_MAX; i++)
		if (!kstats[i].kind[0]) {
			snprintf(kstats[i].kind, sizeof(kstats[i].kind), "%s", kind);
			return &kstats[i];
		}
	return NULL;
}

static const jreg_kind_t *kind_of(const char *name, size_t len)
{
	for (size_t i = 0; i < JREG_KINDS_MAX; i++)
		if (kinds[i] && strlen(kinds[i]->name) == len && !memcmp(kinds[i]->name, name, len))
			return kinds[i];
	return NULL;
}

static void run_free(struct jrun *r)
{
	json_decref(r->spec);
	free(r);
}

static uint64_t done_bytes(const job_stats_t *st)
{
	return st->walked_bytes ? st->walked_bytes : st->moved_bytes;
}

static void path_of(const char *id, char *out, size_t outsz)
{
	snprintf(out, outsz, "%s/%s.json", jdir, id);
}

/* Rule 1: the record as DIR/jobs/ID.json, atomically. Under mu. */
static void persist(const struct jrun *r)
{
	if (!jdir[0])
		return;
	char path[1200];
	path_of(r->id, path, sizeof(path));
	const job_stats_t *s = &r->st;
	json_t *o = json_pack("{s:s,s:s,s:s,s:s,s:I,s:I,s:I,s:I,s:I,s:I,s:I,s:I,s:I,s:I,s:I,s:s}", "id", r->id,
			      "kind", r->kind, "bucket", r->bucket, "state", job_state_name(s->state), "start",
			      (json_int_t)s->start_ns, "end", (json_int_t)s->end_ns, "total", (json_int_t)s->total,
			      "total_bytes", (json_int_t)s->total_bytes, "walked", (json_int_t)s->walked,
			      "walked_bytes", (json_int_t)s->walked_bytes, "moved", (json_int_t)s->moved,
			      "moved_bytes", (json_int_t)s->moved_bytes, "deleted", (json_int_t)s->deleted, "errors",
			      (json_int_t)s->errors, "cmap_version", (json_int_t)s->cmap_version, "last_error",
			      s->last_error);
	json_object_set_new(o, "error_list", json_string(s->error_list));
	if (r->spec)
		json_object_set(o, "spec", r->spec);
	char *js = json_dumps(o, JSON_COMPACT);
	json_decref(o);
	buf_t err = BUF_INIT;
	if (file_write_atomic(path, js, strlen(js), &err) != AIS_OK)
		log_warnx("%s (the %s run %s will not be reported after a restart)", err.ptr, r->kind, r->id);
	buf_free(&err);
	free(js);
}

static void unpersist(const char *id)
{
	if (!jdir[0])
		return;
	char path[1200];
	path_of(id, path, sizeof(path));
	if (unlink(path) && errno != ENOENT)
		log_warn("unlink %s", path);
}

/* Unlinks r (under mu). */
static void unlink_run(struct jrun *r)
{
	for (struct jrun **p = &runs; *p; p = &(*p)->next)
		if (*p == r) {
			*p = r->next;
			return;
		}
}

/* Inserts r: live runs first, then finished ones by end time, newest
 * first; trims the history of r's kind to JREG_HISTORY (rule 3). Under
 * mu. */
static void insert_run(struct jrun *r)
{
	struct jrun **p = &runs;
	if (!r->live)
		while (*p && ((*p)->live || (*p)->st.end_ns > r->st.end_ns))
			p = &(*p)->next;
	r->next = *p;
	*p = r;
	size_t n = 0;
	char kind[sizeof(r->kind)];
	memcpy(kind, r->kind, sizeof(kind));
	for (p = &runs; *p;) {
		if ((*p)->live || strcmp((*p)->kind, kind) || ++n <= JREG_HISTORY) {
			p = &(*p)->next;
			continue;
		}
		struct jrun *old = *p;
		*p = old->next;
		unpersist(old->id);
		run_free(old);
	}
}

static struct jrun *find(const char *id, bool live)
{
	for (struct jrun *r = runs; r; r = r->next)
		if (r->live == live && !strcmp(r->id, id))
			return r;
	return NULL;
}

/* --- start and load -------------------------------------------------------------------- */

static void load_one(const char *path)
{
	json_error_t jerr;
	json_t *o = json_load_file(path, 0, &jerr);
	const char *id = json_string_value(json_object_get(o, "id"));
	const char *kind = json_string_value(json_object_get(o, "kind"));
	const char *bck = json_string_value(json_object_get(o, "bucket"));
	if (!id || !kind || !jreg_id_valid(id, strlen(id)) || find(id, false) || find(id, true)) {
		log_warnx("%s: not a job record (ignored)", path);
		json_decref(o);
		return;
	}
	struct jrun *r = xcalloc(1, sizeof(*r));
	snprintf(r->id, sizeof(r->id), "%s", id);
	snprintf(r->kind, sizeof(r->kind), "%s", kind);
	snprintf(r->bucket, sizeof(r->bucket), "%s", bck ? bck : "");
	job_stats_t *s = &r->st;
#define GETN(k) ((uint64_t)json_integer_value(json_object_get(o, k)))
	s->state = job_state_of(json_string_value(json_object_get(o, "state")));
	s->start_ns = (int64_t)GETN("start");
	s->end_ns = (int64_t)GETN("end");
	s->total = GETN("total");
	s->total_bytes = GETN("total_bytes");
	s->walked = GETN("walked");
	s->walked_bytes = GETN("walked_bytes");
	s->moved = GETN("moved");
	s->moved_bytes = GETN("moved_bytes");
	s->deleted = GETN("deleted");
	s->errors = GETN("errors");
	s->cmap_version = GETN("cmap_version");
#undef GETN
	const char *le = json_string_value(json_object_get(o, "last_error"));
	snprintf(s->last_error, sizeof(s->last_error), "%s", le ? le : "");
	const char *el = json_string_value(json_object_get(o, "error_list"));
	snprintf(s->error_list, sizeof(s->error_list), "%s", el ? el : "");
	json_t *spec = json_object_get(o, "spec");
	r->spec = spec ? json_incref(spec) : NULL;
	json_decref(o);
	if (s->state == JOB_RUNNING || s->state == JOB_IDLE) {
		r->resume = true; /* jreg_resume decides */
		r->live = true;
	}
	insert_run(r);
}

void jreg_init(const char *dir)
{
	pthread_mutex_lock(&mu);
	snprintf(jdir, sizeof(jdir), "%s/jobs", dir);
	if (mkdir(jdir, 0700) && errno != EEXIST) {
		log_warn("%s (job runs are not persisted)", jdir);
		jdir[0] = 0;
	}
	DIR *d = jdir[0] ? opendir(jdir) : NULL;
	struct dirent *e;
	while (d && (e = readdir(d))) {
		size_t n = strlen(e->d_name);
		char path[1400];
		snprintf(path, sizeof(path), "%s/%s", jdir, e->d_name);
		if (n > 4 && !strcmp(e->d_name + n - 4, ".tmp"))
			unlink(path); /* a write cut by a crash */
		else if (n > 5 && !strcmp(e->d_name + n - 5, ".json"))
			load_one(path);
	}
	if (d)
		closedir(d);
	pthread_mutex_unlock(&mu);
}

void jreg_register(const jreg_kind_t *k)
{
	pthread_mutex_lock(&mu);
	size_t free_at = JREG_KINDS_MAX;
	for (size_t i = 0; i < JREG_KINDS_MAX; i++) {
		if (kinds[i] && !strcmp(kinds[i]->name, k->name)) {
			kinds[i] = k;
			pthread_mutex_unlock(&mu);
			return;
		}
		if (!kinds[i] && free_at == JREG_KINDS_MAX)
			free_at = i;
	}
	if (free_at == JREG_KINDS_MAX)
		fatal("job registry: more than %d kinds", JREG_KINDS_MAX);
	kinds[free_at] = k;
	kstat_of(k->name);
	pthread_mutex_unlock(&mu);
}

void jreg_unregister(const char *name)
{
	pthread_mutex_lock(&mu);
	for (size_t i = 0; i < JREG_KINDS_MAX; i++)
		if (kinds[i] && !strcmp(kinds[i]->name, name))
			kinds[i] = NULL;
	pthread_mutex_unlock(&mu);
}

void jreg_resume(void)
{
	for (;;) {
		char id[JREG_ID_MAX + 1], kind[32];
		json_t *spec = NULL;
		jreg_kind_t k = {0};
		bool found = false;
		pthread_mutex_lock(&mu);
		for (struct jrun *r = runs; r && !found; r = r->next) {
			if (!r->resume)
				continue;
			r->resume = false;
			found = true;
			snprintf(id, sizeof(id), "%s", r->id);
			snprintf(kind, sizeof(kind), "%s", r->kind);
			const jreg_kind_t *kp = kind_of(kind, strlen(kind));
			if (kp && kp->resumes && kp->start) {
				k = *kp;
				spec = r->spec ? json_incref(r->spec) : json_object();
			} else { /* rule 2: recorded aborted */
				unlink_run(r);
				r->live = false;
				r->st.state = JOB_ABORTED;
				r->st.end_ns = time_now_ns();
				snprintf(r->st.last_error, sizeof(r->st.last_error),
					 "interrupted by a restart of this node%s",
					 kp ? " (the kind starts its next run by itself)" : "");
				insert_run(r);
				persist(r);
			}
		}
		pthread_mutex_unlock(&mu);
		if (!found)
			return;
		if (!k.start)
			continue;
		buf_t err = BUF_INIT;
		log_info("%s %s: resuming the run interrupted before this start", kind, id);
		int st = k.start(k.arg, id, spec, true, &err);
		if (st) {
			log_warnx("%s %s: cannot resume: %s", kind, id, err.ptr ? err.ptr : "?");
			job_stats_t s = {.state = JOB_FAILED, .start_ns = time_now_ns(), .end_ns = time_now_ns(), .errors = 1};
			snprintf(s.last_error, sizeof(s.last_error), "cannot resume after a restart: %s",
				 err.ptr ? err.ptr : "?");
			jreg_end(id, &s);
		}
		buf_free(&err);
		json_decref(spec);
	}
}

void jreg_shutdown(void)
{
	pthread_mutex_lock(&mu);
	while (runs) {
		struct jrun *r = runs;
		runs = r->next;
		run_free(r);
	}
	memset(kinds, 0, sizeof(kinds));
	jdir[0] = 0;
	pthread_mutex_unlock(&mu);
}

/* --- runs ------------------------------------------------------------------------------ */

void jreg_new_id(char *out)
{
	static const char al[] = "abcdefghijkmnopqrstuvwxyzABCDEFGHJKLMNPQRSTUVWXYZ23456789";
	unsigned char rnd[8];
	if (getrandom(rnd, sizeof(rnd), 0) != (ssize_t)sizeof(rnd)) {
		uint64_t t = (uint64_t)time_now_ns();
		memcpy(rnd, &t, sizeof(rnd));
	}
	for (size_t i = 0; i < sizeof(rnd); i++)
		out[i] = al[rnd[i] % (sizeof(al) - 1)];
	out[sizeof(rnd)] = 0;
}

bool jreg_id_valid(const char *s, size_t len)
{
	if (!len || len > JREG_ID_MAX || s[0] == '.')
		return false;
	for (size_t i = 0; i < len; i++)
		if (!((s[i] >= 'a' && s[i] <= 'z') || (s[i] >= 'A' && s[i] <= 'Z') || (s[i] >= '0' && s[i] <= '9') ||
		      s[i] == '.' || s[i] == '_' || s[i] == '-'))
			return false;
	return true;
}

void jreg_begin(const char *kind, const char *id, const char *bucket, json_t *spec)
{
	pthread_mutex_lock(&mu);
	struct jrun *r = find(id, true);
	struct jrun *old = find(id, false);
	if (old) { /* rule 4 */
		unlink_run(old);
		run_free(old);
	}
	if (r)
		unlink_run(r);
	else
		r = xcalloc(1, sizeof(*r));
	json_decref(r->spec);
	memset(r, 0, sizeof(*r));
	snprintf(r->id, sizeof(r->id), "%s", id);
	snprintf(r->kind, sizeof(r->kind), "%s", kind);
	snprintf(r->bucket, sizeof(r->bucket), "%s", bucket ? bucket : "");
	r->spec = spec ? json_deep_copy(spec) : NULL;
	r->live = true;
	r->st.state = JOB_RUNNING;
	r->st.start_ns = time_now_ns();
	insert_run(r);
	struct kstat *ks = kstat_of(kind);
	if (ks)
		ks->started++;
	persist(r);
	pthread_mutex_unlock(&mu);
}

void jreg_end(const char *id, const job_stats_t *st)
{
	pthread_mutex_lock(&mu);
	struct jrun *r = find(id, true);
	if (!r) {
		pthread_mutex_unlock(&mu);
		return;
	}
	unlink_run(r);
	int64_t start = r->st.start_ns;
	r->st = *st;
	if (!r->st.start_ns)
		r->st.start_ns = start;
	if (!r->st.end_ns)
		r->st.end_ns = time_now_ns();
	if (r->st.state == JOB_RUNNING || r->st.state == JOB_IDLE)
		r->st.state = JOB_DONE;
	r->live = false;
	insert_run(r);
	struct kstat *ks = kstat_of(r->kind);
	if (ks) {
		if (r->st.state == JOB_DONE)
			ks->done++;
		else if (r->st.state == JOB_ABORTED)
			ks->aborted++;
		else
			ks->failed++;
		ks->objects += r->st.walked;
		ks->bytes += done_bytes(&r->st);
	}
	persist(r);
	pthread_mutex_unlock(&mu);
}

int jreg_start(const char *kind, const char *id, json_t *spec, char *id_out, buf_t *err)
{
	char fresh[JREG_ID_MAX + 1];
	pthread_mutex_lock(&mu);
	const jreg_kind_t *kp = kind_of(kind, strlen(kind));
	jreg_kind_t k = kp ? *kp : (jreg_kind_t){0};
	bool busy = id && find(id, true);
	pthread_mutex_unlock(&mu);
	if (!kp) {
		buf_addf(err, "no job kind \"%s\" on this node", kind);
		return 404;
	}
	if (!k.start) {
		buf_addf(err, "a %s starts by itself, not on request", kind);
		return 400;
	}
	if (id && !jreg_id_valid(id, strlen(id))) {
		buf_addstr(err, "a job id is 1-63 of A-Z a-z 0-9 . _ -");
		return 400;
	}
	if (busy) {
		buf_addf(err, "job %s is running", id);
		return 409;
	}
	if (!id) {
		jreg_new_id(fresh);
		id = fresh;
	}
	if (id_out)
		snprintf(id_out, JREG_ID_MAX + 1, "%s", id);
	return k.start(k.arg, id, spec, false, err);
}

size_t jreg_stop(const char *kind, const char *id)
{
	jreg_kind_t todo[JREG_KINDS_MAX];
	char ids[JREG_KINDS_MAX][JREG_ID_MAX + 1];
	size_t n = 0;
	pthread_mutex_lock(&mu);
	if (id) {
		struct jrun *r = find(id, true);
		const jreg_kind_t *kp = r ? kind_of(r->kind, strlen(r->kind)) : NULL;
		if (kp && kp->stop && (!kind || !strcmp(kind, r->kind))) {
			todo[n] = *kp;
			snprintf(ids[n++], sizeof(ids[0]), "%s", id);
		}
	} else if (kind) {
		const jreg_kind_t *kp = kind_of(kind, strlen(kind));
		if (kp && kp->stop) {
			todo[n] = *kp;
			ids[n++][0] = 0;
		}
	}
	pthread_mutex_unlock(&mu);
	for (size_t i = 0; i < n; i++)
		todo[i].stop(todo[i].arg, ids[i][0] ? ids[i] : NULL);
	return n;
}

void jreg_progress_of(const job_stats_t *st, int64_t now_ns, jreg_progress_t *p)
{
	memset(p, 0, sizeof(*p));
	p->objects = st->walked;
	p->bytes = done_bytes(st);
	p->total = MAX(st->total, st->walked);
	p->total_bytes = st->total_bytes;
	int64_t end = st->end_ns ? st->end_ns : now_ns;
	double secs = st->start_ns && end > st->start_ns ? (double)(end - st->start_ns) / 1e9 : 0;
	if (secs > 0) {
		p->rate_objects = (double)p->objects / secs;
		p->rate_bytes = (double)p->bytes / secs;
	}
	p->eta_s = -1;
	if (st->state != JOB_RUNNING)
		p->eta_s = 0;
	else if (p->rate_objects > 0 && p->total >= p->objects)
		p->eta_s = (int64_t)((double)(p->total - p->objects) / p->rate_objects + 0.5);
}

/* One run's JSON (jreg_list_json). */
static void run_json(const struct jrun *r, const job_stats_t *st, int64_t now, buf_t *out)
{
	jreg_progress_t p;
	jreg_progress_of(st, now, &p);
	buf_addstr(out, "{\"id\":");
	buf_add_json_str(out, r->id, strlen(r->id));
	buf_addstr(out, ",\"bucket\":");
	buf_add_json_str(out, r->bucket, strlen(r->bucket));
	buf_addch(out, ',');
	size_t at = out->len;
	job_stats_json(st, r->kind, out);
	/* job_stats_json's object, its braces dropped: one object */
	memmove(out->ptr + at, out->ptr + at + 1, out->len - at - 1);
	out->len -= 2;
	buf_addf(out,
		 ",\"progress\":{\"objects\":%llu,\"bytes\":%llu,\"total\":%llu,\"total_bytes\":%llu,"
		 "\"rate_objects\":%.1f,\"rate_bytes\":%.0f,\"eta_s\":%lld}}",
		 (unsigned long long)p.objects, (unsigned long long)p.bytes, (unsigned long long)p.total,
		 (unsigned long long)p.total_bytes, p.rate_objects, p.rate_bytes, (long long)p.eta_s);
}

size_t jreg_list_json(const char *kind, const char *id, bool all, buf_t *out)
{
	/* a snapshot under mu; the live runs' progress asked without it */
	struct jrun *snap = NULL;
	jreg_kind_t *ks = NULL;
	size_t n = 0;
	pthread_mutex_lock(&mu);
	for (struct jrun *r = runs; r; r = r->next) {
		if ((kind && strcmp(kind, r->kind)) || (id && strcmp(id, r->id)) || (!r->live && !all && !id))
			continue;
		snap = xrealloc(snap, (n + 1) * sizeof(*snap));
		ks = xrealloc(ks, (n + 1) * sizeof(*ks));
		snap[n] = *r;
		snap[n].spec = NULL;
		const jreg_kind_t *kp = r->live ? kind_of(r->kind, strlen(r->kind)) : NULL;
		ks[n] = kp ? *kp : (jreg_kind_t){0};
		n++;
	}
	pthread_mutex_unlock(&mu);
	int64_t now = time_now_ns();
	buf_addch(out, '[');
	for (size_t i = 0; i < n; i++) {
		job_stats_t st = snap[i].st;
		if (ks[i].progress && ks[i].progress(ks[i].arg, snap[i].id, &st) && !st.start_ns)
			st.start_ns = snap[i].st.start_ns;
		if (snap[i].live && st.state != JOB_RUNNING) /* ended between the snapshot and now */
			st.state = JOB_RUNNING;
		if (i)
			buf_addch(out, ',');
		run_json(&snap[i], &st, now, out);
	}
	buf_addch(out, ']');
	free(snap);
	free(ks);
	return n;
}

bool jreg_latest(const char *kind, job_stats_t *st, char *id, size_t idsz)
{
	struct jrun best = {.st.start_ns = -1};
	jreg_kind_t k = {0};
	pthread_mutex_lock(&mu);
	for (struct jrun *r = runs; r; r = r->next)
		if (!strcmp(r->kind, kind) && r->st.start_ns > best.st.start_ns) {
			best = *r;
			const jreg_kind_t *kp = r->live ? kind_of(r->kind, strlen(r->kind)) : NULL;
			k = kp ? *kp : (jreg_kind_t){0};
		}
	pthread_mutex_unlock(&mu);
	if (best.st.start_ns < 0)
		return false;
	*st = best.st;
	if (k.progress && k.progress(k.arg, best.id, st) && !st->start_ns)
		st->start_ns = best.st.start_ns;
	if (best.live && st->state != JOB_RUNNING)
		st->state = JOB_RUNNING;
	if (id)
		snprintf(id, idsz, "%s", best.id);
	return true;
}

bool jreg_kind_known(const char *kind, size_t len)
{
	pthread_mutex_lock(&mu);
	bool k = kind_of(kind, len) != NULL;
	pthread_mutex_unlock(&mu);
	return k;
}

void jreg_metrics(buf_t *out)
{
	static const struct {
		const char *name, *help;
	} fams[] = {
		{"aisd_job_runs_started_total", "runs of the kind started (or resumed) since this process started"},
		{"aisd_job_runs_done_total", "runs of the kind that ended done"},
		{"aisd_job_runs_failed_total", "runs of the kind that ended failed"},
		{"aisd_job_runs_aborted_total", "runs of the kind that were stopped (or cut by a restart)"},
		{"aisd_job_run_objects_total", "objects the kind's finished runs walked"},
		{"aisd_job_run_bytes_total", "bytes the kind's finished runs walked or moved"},
	};
	struct kstat ks[JREG_KINDS_MAX];
	pthread_mutex_lock(&mu);
	memcpy(ks, kstats, sizeof(ks));
	pthread_mutex_unlock(&mu);
	for (size_t f = 0; f < ARRAY_SIZE(fams); f++) {
		metrics_family(out, fams[f].name, "counter", fams[f].help);
		for (size_t i = 0; i < JREG_KINDS_MAX; i++) {
			if (!ks[i].kind[0])
				continue;
			uint64_t v[] = {ks[i].started, ks[i].done, ks[i].failed, ks[i].aborted, ks[i].objects, ks[i].bytes};
			buf_addf(out, "%s{", fams[f].name);
			metrics_label(out, "job", ks[i].kind, strlen(ks[i].kind));
			buf_addf(out, "} %llu\n", (unsigned long long)v[f]);
		}
	}
}
