/*
 * atime.c - access times, recorded off the reader's thread.
 *
 * store_touch is called on event loops (a GET's open) and must never wait
 * there: not for a commit's mutex, which a commit holds across its synced
 * LevelDB write, and not in LevelDB's writer queue, where even an unsynced
 * put waits for the synced write ahead of it. So store_touch only queues
 * the object and the time; the store's atime thread writes the records.
 *
 * Guarantees:
 *  1. store_touch takes one mutex under which nothing but the queue is
 *     touched: it never waits on a disk, a commit or LevelDB.
 *  2. At most STORE_ATIME_QUEUE updates wait; more are dropped (atime is
 *     lazy: a later read asks again).
 *  3. A record is rewritten under its commit mutex, only while it exists
 *     and its atime is older than store.atime_interval, so an update never
 *     brings back an older gen's record over a newer commit. With the
 *     interval 0 reads queue nothing: no metadata write on any read.
 *  4. store_close writes what is queued before the databases close.
 */
#include <stdlib.h>
#include <string.h>

#include "aisd/log.h"
#include "aisd/status.h"
#include "aisd/util.h"
#include "store_int.h"
#include "aisd/banned.h"

struct store_atime {
	struct store_atime *next;
	int64_t now;
	size_t blen, olen;
	char name[]; /* bucket, then object */
};

/* Rule 3: writes one queued access time. */
static void atime_write(store_t *s, const struct store_atime *a)
{
	const char *bck = a->name, *obj = a->name + a->blen;
	buf_t k = BUF_INIT, v = BUF_INIT;
	store_rec_t r;

	store_rd(s);
	store_mp_t *mp = store_mp_of(s, bck, a->blen, obj, a->olen);
	store_key_obj(&k, bck, a->blen, obj, a->olen);
	pthread_mutex_lock(&mp->commit_mu);
	if (store_rec_get(s, mp, &k, &r) == AIS_OK) {
		char *err = NULL;
		if (a->now - r.m.atime_ns >= s->atime_ns) {
			int64_t was = r.m.atime_ns;
			r.m.atime_ns = a->now;
			store_rec_encode(&v, &r);
			leveldb_put(mp->db, s->wo_lazy, k.ptr, k.len, v.ptr, v.len, &err);
			if (err) {
				log_warnx("%s: leveldb put (atime): %s", mp->path, err);
				leveldb_free(err);
				r.m.atime_ns = was;
			}
		}
		/* the hot cache's copy takes the record's atime, written now or
		 * by an earlier touch it was filled before (hot.c rule 1) */
		store_hot_touch(s, k.ptr, k.len, r.m.atime_ns);
	}
	pthread_mutex_unlock(&mp->commit_mu);
	store_unrd(s);
	buf_free(&k);
	buf_free(&v);
}

static void *atime_main(void *arg)
{
	store_t *s = arg;
	log_set_action("atime");
	pthread_mutex_lock(&s->at_mu);
	for (;;) {
		while (!s->at_head && !s->at_stop)
			pthread_cond_wait(&s->at_cond, &s->at_mu);
		struct store_atime *list = s->at_head;
		if (!list)
			break; /* stopping, and nothing queued */
		s->at_head = s->at_tail = NULL;
		s->at_n = 0;
		pthread_mutex_unlock(&s->at_mu);
		while (list) {
			struct store_atime *a = list;
			list = a->next;
			atime_write(s, a);
			free(a);
		}
		pthread_mutex_lock(&s->at_mu);
	}
	pthread_mutex_unlock(&s->at_mu);
	return NULL;
}

void store_touch(store_t *s, const char *bck, size_t blen, const char *obj, size_t olen,
		 const store_meta_t *m)
{
	int64_t now = time_now_ns();
	if (!s->atime_ns || (m && now - m->atime_ns < s->atime_ns))
		return;
	struct store_atime *a = xmalloc(sizeof(*a) + blen + olen);
	a->next = NULL;
	a->now = now;
	a->blen = blen;
	a->olen = olen;
	memcpy(a->name, bck, blen);
	memcpy(a->name + blen, obj, olen);
	pthread_mutex_lock(&s->at_mu);
	if (s->at_n >= STORE_ATIME_QUEUE || !s->at_started || s->at_stop) { /* rule 2 */
		pthread_mutex_unlock(&s->at_mu);
		free(a);
		return;
	}
	if (s->at_tail)
		s->at_tail->next = a;
	else
		s->at_head = a;
	s->at_tail = a;
	s->at_n++;
	pthread_cond_signal(&s->at_cond);
	pthread_mutex_unlock(&s->at_mu);
}

int store_atime_start(store_t *s)
{
	if (pthread_create(&s->at_thread, NULL, atime_main, s) != 0)
		return AIS_ERR;
	pthread_mutex_lock(&s->at_mu);
	s->at_started = true;
	pthread_mutex_unlock(&s->at_mu);
	return AIS_OK;
}

void store_atime_stop(store_t *s)
{
	pthread_mutex_lock(&s->at_mu);
	bool started = s->at_started;
	s->at_stop = true;
	pthread_cond_signal(&s->at_cond);
	pthread_mutex_unlock(&s->at_mu);
	if (started)
		pthread_join(s->at_thread, NULL); /* rule 4: it empties the queue first */
	s->at_started = false;
}
