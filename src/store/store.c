/*
 * store.c - opening and closing the store: mountpaths, their LevelDB
 * databases and directories, start-up cleanup, capacity stats.
 *
 * store_open guarantees that when it returns AIS_OK every mountpath has its
 * meta/ database open, its obj/00..obj/ff and tmp/ directories, an empty
 * tmp/ (writes interrupted by a crash are gone), and that a background
 * reconcile (reconcile.c) is removing object files that no record points to
 * (after counting the objects and bytes the records held at open).
 * Everything in store_t is immutable after open, except the atomics and what
 * the per-mountpath mutexes guard.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <unistd.h>

#include "aisd/hrw.h"
#include "aisd/log.h"
#include "aisd/status.h"
#include "aisd/util.h"
#include "store_int.h"
#include "aisd/banned.h"

static int io_open(const char *path, int flags, mode_t mode) { return open(path, flags, mode); }
static ssize_t io_splice(int pfd, int fd, size_t n)
{
	return splice(pfd, NULL, fd, NULL, n, SPLICE_F_MOVE | SPLICE_F_NONBLOCK);
}

store_io_t store_io = {
	.open = io_open,
	.write = write,
	.fsync = fsync,
	.rename = rename,
	.unlink = unlink,
	.close = close,
	.splice = io_splice,
	.link = link,
};

/* mkdir -p: creates path and its missing parents. */
static int mkdir_p(const char *path)
{
	char tmp[STORE_PATH_MAX];
	size_t n = strlen(path);
	if (n == 0 || n >= sizeof(tmp)) {
		errno = ENAMETOOLONG;
		return AIS_ERR;
	}
	if (mkdir(path, 0750) == 0 || errno == EEXIST)
		goto check; /* the common case: parent exists */
	memcpy(tmp, path, n + 1);
	for (size_t i = 1; i <= n; i++) {
		if (tmp[i] != '/' && tmp[i] != '\0')
			continue;
		char c = tmp[i];
		tmp[i] = '\0';
		if (mkdir(tmp, 0750) != 0 && errno != EEXIST)
			return AIS_ERR;
		tmp[i] = c;
	}
check:;
	struct stat st;
	if (stat(path, &st) != 0)
		return AIS_ERR;
	if (!S_ISDIR(st.st_mode)) {
		errno = ENOTDIR;
		return AIS_ERR;
	}
	return AIS_OK;
}

/* Removes every file in <mp>/tmp: writes that a crash interrupted; and
 * the obj/ name of each that no record names (reconcile.c rule 1).
 * Called once mp's database is open, before anything writes. */
static void clean_tmp(store_mp_t *mp)
{
	char h[STORE_HASH_HEX + 1], path[STORE_PATH_MAX];
	unsigned long gone = 0;
	char dir[STORE_PATH_MAX];
	snprintf(dir, sizeof(dir), "%s/tmp", mp->path);
	DIR *d = opendir(dir);
	if (!d) {
		log_warn("opendir %s", dir);
		return;
	}
	store_t *probe = xcalloc(1, sizeof(*probe)); /* the lookups read only its read options */
	probe->ro = leveldb_readoptions_create();
	struct dirent *de;
	unsigned long n = 0;
	while ((de = readdir(d))) {
		uint64_t gen;
		if (de->d_name[0] == '.')
			continue;
		if (store_parse_name(de->d_name, h, &gen)) {
			atomic_fetch_add(&mp->rc_hints, 1);
			store_path_obj(path, sizeof(path), mp, h, gen);
			if (store_file_live(probe, mp, h, gen) == 0 && unlink(path) == 0) {
				log_info("%s: removed %s (a crash cut its write; no record uses it)", mp->path, path);
				gone++;
			}
		}
		if (unlinkat(dirfd(d), de->d_name, 0) != 0)
			log_warn("unlink %s/%s", dir, de->d_name);
		else
			n++;
	}
	closedir(d);
	leveldb_readoptions_destroy(probe->ro);
	free(probe);
	atomic_fetch_add(&mp->rc_removed, gone);
	if (n)
		log_info("%s: removed %lu temp files of interrupted writes", mp->path, n);
}

static int gen_init(store_mp_t *mp, buf_t *err);

int store_mp_open_at(const store_t *s, store_mp_t *mp, const char *path, buf_t *err)
{
	char p[STORE_PATH_MAX];
	char *lerr = NULL;

	mp->hint_done = NULL;
	mp->hint_done_n = 0;
	if (pthread_mutex_init(&mp->commit_mu, NULL) != 0 || pthread_mutex_init(&mp->gen_mu, NULL) != 0 ||
	    pthread_mutex_init(&mp->hint_mu, NULL) != 0)
		fatalx("pthread_mutex_init");
	snprintf(mp->path, sizeof(mp->path), "%s", path);
	bool made = access(path, F_OK) != 0;
	if (mkdir_p(path) != AIS_OK) {
		buf_addf(err, "mountpath %s: %s", path, strerror(errno));
		return AIS_ERR;
	}
	if (made) /* 0750 past the umask (077): a target's local-read socket may live here; inside, 0700 */
		chmod(path, 0750);
	for (int i = 0; i < 256; i++) {
		snprintf(p, sizeof(p), "%s/obj/%02x", path, i);
		if (mkdir_p(p) != AIS_OK) {
			buf_addf(err, "mountpath %s: mkdir %s: %s", path, p, strerror(errno));
			return AIS_ERR;
		}
	}
	snprintf(p, sizeof(p), "%s/tmp", path);
	if (mkdir_p(p) != AIS_OK) {
		buf_addf(err, "mountpath %s: mkdir %s: %s", path, p, strerror(errno));
		return AIS_ERR;
	}
	struct stat st;
	if (stat(path, &st) != 0) {
		buf_addf(err, "mountpath %s: %s", path, strerror(errno));
		return AIS_ERR;
	}
	mp->dev = st.st_dev;
	mp->ino = st.st_ino;
	mp->fault[0] = '\0';

	mp->opts = leveldb_options_create();
	mp->cache = leveldb_cache_create_lru((size_t)s->ldb_cache);
	mp->bloom = s->ldb_bloom_bits ? leveldb_filterpolicy_create_bloom((int)s->ldb_bloom_bits) : NULL;
	leveldb_options_set_create_if_missing(mp->opts, 1);
	leveldb_options_set_cache(mp->opts, mp->cache);
	if (mp->bloom)
		leveldb_options_set_filter_policy(mp->opts, mp->bloom);
	leveldb_options_set_write_buffer_size(mp->opts, (size_t)s->ldb_write_buffer);
	leveldb_options_set_max_open_files(mp->opts, (int)s->ldb_max_open_files);
	snprintf(p, sizeof(p), "%s/meta", path);
	mp->db = leveldb_open(mp->opts, p, &lerr);
	if (lerr) {
		buf_addf(err, "mountpath %s: leveldb open %s: %s", path, p, lerr);
		leveldb_free(lerr);
		mp->db = NULL;
		return AIS_ERR;
	}
	clean_tmp(mp);
	return gen_init(mp, err);
}

/* Persists the generation limit of mp. Caller holds gen_mu (or is open). */
static int gen_reserve(store_mp_t *mp, uint64_t limit)
{
	unsigned char v[8];
	char *lerr = NULL;
	leveldb_writeoptions_t *wo = leveldb_writeoptions_create();
	leveldb_writeoptions_set_sync(wo, 1);
	for (int i = 0; i < 8; i++)
		v[i] = (unsigned char)(limit >> (56 - 8 * i));
	leveldb_put(mp->db, wo, "g", 1, (const char *)v, sizeof(v), &lerr);
	leveldb_writeoptions_destroy(wo);
	if (lerr) {
		log_warnx("%s: leveldb put (generation limit): %s", mp->path, lerr);
		errno = store_db_errno(lerr);
		leveldb_free(lerr);
		return AIS_ERR;
	}
	atomic_store(&mp->gen_limit, limit);
	return AIS_OK;
}

/* gen0 = max(wall clock in us, the last run's limit): every gen of this run
 * is above every gen of any earlier run, whatever the clock did. */
static int gen_init(store_mp_t *mp, buf_t *err)
{
	char *lerr = NULL;
	size_t vl = 0;
	uint64_t last = 0;
	leveldb_readoptions_t *ro = leveldb_readoptions_create();
	char *v = leveldb_get(mp->db, ro, "g", 1, &vl, &lerr);
	leveldb_readoptions_destroy(ro);
	if (lerr) {
		buf_addf(err, "mountpath %s: leveldb get: %s", mp->path, lerr);
		leveldb_free(lerr);
		return AIS_ERR;
	}
	if (v && vl == 8)
		for (size_t i = 0; i < 8; i++)
			last = (last << 8) | (unsigned char)v[i];
	leveldb_free(v);
	mp->gen0 = MAX((uint64_t)(time_now_ns() / 1000), last);
	atomic_init(&mp->next_gen, mp->gen0);
	if (gen_reserve(mp, mp->gen0 + STORE_GEN_RESERVE) != AIS_OK) {
		buf_addf(err, "mountpath %s: cannot persist the generation limit", mp->path);
		return AIS_ERR;
	}
	return AIS_OK;
}

int store_gen_alloc(store_t *s, store_mp_t *mp, uint64_t *gen)
{
	uint64_t g = atomic_fetch_add(&mp->next_gen, 1);
	int rc = AIS_OK;
	(void)s;
	if (g >= atomic_load(&mp->gen_limit)) {
		pthread_mutex_lock(&mp->gen_mu);
		while (rc == AIS_OK && g >= atomic_load(&mp->gen_limit))
			rc = gen_reserve(mp, atomic_load(&mp->gen_limit) + STORE_GEN_RESERVE);
		pthread_mutex_unlock(&mp->gen_mu);
	}
	*gen = g;
	return rc;
}

void store_mp_close(store_mp_t *mp)
{
	if (mp->db) {
		if (mp->hint_done_n) { /* the queued hint deletes (reconcile.c rule 2) */
			char *err = NULL;
			leveldb_writeoptions_t *wo = leveldb_writeoptions_create();
			leveldb_write(mp->db, wo, mp->hint_done, &err);
			leveldb_writeoptions_destroy(wo);
			if (err) {
				log_warnx("%s: leveldb write (crash hints done): %s", mp->path, err);
				leveldb_free(err);
			}
		}
		if (mp->count_snap)
			leveldb_release_snapshot(mp->db, mp->count_snap);
		leveldb_close(mp->db);
	}
	if (mp->hint_done)
		leveldb_writebatch_destroy(mp->hint_done);
	mp->hint_done = NULL;
	mp->hint_done_n = 0;
	mp->count_snap = NULL;
	pthread_mutex_destroy(&mp->hint_mu);
	pthread_mutex_destroy(&mp->commit_mu);
	pthread_mutex_destroy(&mp->gen_mu);
	if (mp->opts)
		leveldb_options_destroy(mp->opts);
	if (mp->bloom)
		leveldb_filterpolicy_destroy(mp->bloom);
	if (mp->cache)
		leveldb_cache_destroy(mp->cache);
	mp->db = NULL;
	mp->opts = NULL;
	mp->bloom = NULL;
	mp->cache = NULL;
}

uint64_t store_ldb_cache_auto(uint64_t phys, int nmp)
{
	uint64_t v = phys / 32 / (uint64_t)(nmp > 0 ? nmp : 1);
	return MIN(MAX(v, STORE_LDB_CACHE_MIN), STORE_LDB_CACHE_MAX);
}

/* The machine's memory in bytes (0 if unknown). */
static uint64_t phys_bytes(void)
{
	long pages = sysconf(_SC_PHYS_PAGES), psz = sysconf(_SC_PAGESIZE);
	return pages > 0 && psz > 0 ? (uint64_t)pages * (uint64_t)psz : 0;
}

int store_open(const conf_t *c, store_t **out, buf_t *err)
{
	if (c->n_mountpaths < 1 || c->n_mountpaths > CONF_MAX_MOUNTPATHS) {
		buf_addf(err, "store: %d mountpaths (need 1..%d)", c->n_mountpaths, CONF_MAX_MOUNTPATHS);
		errno = EINVAL;
		return AIS_ERR;
	}
	store_t *s = xcalloc(1, sizeof(*s));
	s->fsync = c->fsync;
	s->min_free_bytes = c->min_free_bytes;
	s->hot = store_hot_new(c->hot_cache, c->hot_object_max);
	s->atime_ns = (int64_t)c->atime_ms * 1000000LL;
	s->ldb_cache = c->ldb_cache ? c->ldb_cache : store_ldb_cache_auto(phys_bytes(), c->n_mountpaths);
	s->ldb_write_buffer = c->ldb_write_buffer;
	s->ldb_bloom_bits = c->ldb_bloom_bits;
	s->ldb_max_open_files = c->ldb_max_open_files;
	s->check_ms = c->mp_check_ms;
	s->tomb_ttl_ns = c->tomb_ttl_ms * 1000000ULL;
	s->start_ns = time_now_ns();
	s->wo_commit = leveldb_writeoptions_create();
	leveldb_writeoptions_set_sync(s->wo_commit, c->fsync == CONF_FSYNC_ALWAYS);
	s->wo_lazy = leveldb_writeoptions_create();
	s->ro = leveldb_readoptions_create();
	s->ro_scan = leveldb_readoptions_create();
	leveldb_readoptions_set_fill_cache(s->ro_scan, 0);
	/* mp_rw stays reader-preferring (the default): read locks nest, and a
	 * commit that holds a commit mutex may take it while a detach waits */
	if (pthread_mutex_init(&s->rc_mu, NULL) || pthread_cond_init(&s->rc_cond, NULL) ||
	    pthread_rwlock_init(&s->mp_rw, NULL) || pthread_mutex_init(&s->mp_mu, NULL) ||
	    pthread_mutex_init(&s->bucket_mu, NULL) || pthread_mutex_init(&s->tidx_mu, NULL) ||
	    pthread_mutex_init(&s->destroy_mu, NULL) ||
	    pthread_mutex_init(&s->at_mu, NULL) || pthread_cond_init(&s->at_cond, NULL))
		fatalx("pthread init");
	for (int i = 0; i < c->n_mountpaths; i++) {
		for (int j = 0; j < i; j++)
			if (!strcmp(c->mountpaths[i], c->mountpaths[j])) {
				buf_addf(err, "store: mountpath %s given twice", c->mountpaths[i]);
				goto out_close;
			}
		s->n_mp = i + 1; /* so store_close cleans what was opened */
		if (store_mp_open_at(s, &s->mp[i], c->mountpaths[i], err) != AIS_OK)
			goto out_close;
		s->digests[i] = hrw_digest(c->mountpaths[i], strlen(c->mountpaths[i]));
		/* The records as of now, for the reconcile thread to count:
		 * every later change is in the delta counters. */
		s->mp[i].count_snap = leveldb_create_snapshot(s->mp[i].db);
	}
	store_tomb_sweep(s);
	struct timespec now;
	clock_gettime(CLOCK_MONOTONIC, &now);
	s->tomb_swept_ns = (int64_t)now.tv_sec * 1000000000LL + now.tv_nsec;
	if (store_mpcheck_start(s) != AIS_OK) {
		buf_addf(err, "store: cannot start the mountpath check thread");
		goto out_close;
	}
	if (store_reconcile_start(s) != AIS_OK) {
		buf_addf(err, "store: cannot start the reconcile thread");
		goto out_close;
	}
	if (store_atime_start(s) != AIS_OK) {
		buf_addf(err, "store: cannot start the atime thread");
		goto out_close;
	}
	*out = s;
	return AIS_OK;
out_close:
	store_close(s);
	errno = EIO;
	return AIS_ERR;
}

void store_close(store_t *s)
{
	if (!s)
		return;
	store_mpcheck_stop(s);
	store_reconcile_stop(s);
	store_atime_stop(s);
	for (int i = 0; i < s->n_mp; i++)
		if (s->mp[i].state != MP_OFF)
			store_mp_close(&s->mp[i]);
	leveldb_writeoptions_destroy(s->wo_commit);
	leveldb_writeoptions_destroy(s->wo_lazy);
	leveldb_readoptions_destroy(s->ro);
	leveldb_readoptions_destroy(s->ro_scan);
	pthread_mutex_destroy(&s->rc_mu);
	pthread_cond_destroy(&s->rc_cond);
	pthread_rwlock_destroy(&s->mp_rw);
	pthread_mutex_destroy(&s->mp_mu);
	pthread_mutex_destroy(&s->bucket_mu);
	pthread_mutex_destroy(&s->destroy_mu);
	pthread_mutex_destroy(&s->at_mu);
	pthread_cond_destroy(&s->at_cond);
	store_tidx_cache_free(s);
	pthread_mutex_destroy(&s->tidx_mu);
	store_hot_free(s->hot);
	free(s);
}

int store_stats(store_t *s, store_mp_stats_t *out, int max, int *n)
{
	int k = 0, rc = AIS_OK;
	store_rd(s);
	for (int i = 0; i < store_nmp(s) && k < max; i++) {
		struct statvfs sv;
		int state = atomic_load(&s->mp[i].state);
		if (state == MP_OFF)
			continue;
		out[k].detaching = state == MP_DETACHING;
		out[k].faulted = state == MP_FAULTED;
		out[k].fault[0] = '\0';
		snprintf(out[k].path, sizeof(out[k].path), "%s", s->mp[i].path);
		if (out[k].faulted) {
			pthread_mutex_lock(&s->mp_mu);
			snprintf(out[k].fault, sizeof(out[k].fault), "%s", s->mp[i].fault);
			pthread_mutex_unlock(&s->mp_mu);
			out[k].total_bytes = out[k].free_bytes = 0; /* not its file system any more */
		} else if (statvfs(s->mp[i].path, &sv) != 0) {
			log_warn("statvfs %s", s->mp[i].path);
			rc = AIS_ERR;
			break;
		} else {
			out[k].total_bytes = (uint64_t)sv.f_blocks * sv.f_frsize;
			out[k].free_bytes = (uint64_t)sv.f_bavail * sv.f_frsize;
		}
		const store_mp_t *mp = &s->mp[i];
		out[k].counting = !atomic_load(&mp->count_done);
		out[k].reconciling = !atomic_load(&mp->rc_finished);
		out[k].rc_walked = atomic_load(&mp->rc_walked);
		out[k].rc_hints = atomic_load(&mp->rc_hints);
		out[k].rc_removed = atomic_load(&mp->rc_removed);
		int64_t o = (int64_t)atomic_load(&mp->base_objects) + atomic_load(&mp->delta_objects);
		int64_t b = (int64_t)atomic_load(&mp->base_bytes) + atomic_load(&mp->delta_bytes);
		out[k].objects = o > 0 ? (uint64_t)o : 0; /* < 0 only while counting */
		out[k].bytes = b > 0 ? (uint64_t)b : 0;
		k++;
	}
	store_unrd(s);
	*n = k;
	return rc;
}
