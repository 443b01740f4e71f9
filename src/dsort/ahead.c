/*
 * ahead.c - the read-ahead of a dsort run's phase 2 (dsort.h rule 5): the
 * remote samples of the output shards this target builds, fetched by
 * DSORT_AHEAD_THREADS threads in build order ahead of the builder (each
 * sample's members in one ranged GET when they lie together: span_of), at
 * most DSORT_AHEAD_SLOTS samples and dsort_ahead_max() bytes ahead; the
 * builder takes them in order. Local samples are read by the builder
 * meanwhile, so peers' disks, the loopback and this target's writes work
 * at once. A failed fetch fails the run (x's error) and wakes the builder.
 */
#include <jansson.h>
#include <pthread.h>
#include <stdlib.h>

#include "aisd/log.h"
#include "aisd/tar.h"
#include "aisd/xp.h"
#include "dsort_int.h"
#include "aisd/banned.h"

/* A remote sample's members are read in one GET when at most SPAN_SLACK
 * bytes lie between them and the whole is at most SPAN_MAX (and a quarter
 * of the memory limit); no GET reads more than SPAN_MAX (a larger member
 * comes in pieces: job.c). */
#define SPAN_SLACK 65536
#define SPAN_MAX DSORT_READ_MAX

/* The range [*lo, *hi) of input shard r->shard that holds r's members
 * when one GET may read them (they lie together and it is small). */
static bool span_of(const dsort_rec_t *r, uint64_t *lo, uint64_t *hi)
{
	uint64_t a = UINT64_MAX, b = 0, sum = 0;
	json_t *m;
	size_t j;
	json_array_foreach(r->members, j, m) {
		uint64_t off = (uint64_t)json_integer_value(json_array_get(m, 1));
		uint64_t sz = (uint64_t)json_integer_value(json_array_get(m, 2));
		a = MIN(a, off);
		b = MAX(b, off + sz);
		sum += sz + 2 * TAR_BLOCK;
	}
	*lo = a;
	*hi = b;
	return b > a && b - a <= sum + SPAN_SLACK && b - a <= MIN(dsort_denv.memory_limit / 4, SPAN_MAX);
}

enum { SLOT_FREE, SLOT_FETCHING, SLOT_READY, SLOT_FAILED };

static void *ahead_main(void *arg)
{
	struct ahead *a = arg;
	log_set_action("dsort read-ahead");
	pthread_mutex_lock(&a->mu);
	while (!a->stop) {
		while (a->next < a->n && !a->hi[a->next])
			a->next++;
		if (a->next >= a->n)
			break;
		size_t k = a->next;
		uint64_t sz = a->hi[k] - a->lo[k];
		if (k - a->pos >= DSORT_AHEAD_SLOTS || (a->inflight && a->inflight + sz > dsort_ahead_max())) {
			pthread_cond_wait(&a->cv, &a->mu);
			continue;
		}
		a->next++;
		a->inflight += sz;
		size_t s = k % DSORT_AHEAD_SLOTS;
		a->slot[s].k = k;
		a->slot[s].state = SLOT_FETCHING;
		a->slot[s].b.len = 0;
		pthread_mutex_unlock(&a->mu);
		bool ok = dsort_fetch(a->x, a->seq[k]->shard, a->lo[k], sz, dsort_buf_sink, &a->slot[s].b);
		pthread_mutex_lock(&a->mu);
		a->slot[s].state = ok ? SLOT_READY : SLOT_FAILED;
		pthread_cond_broadcast(&a->cv);
		if (!ok)
			break;
	}
	pthread_mutex_unlock(&a->mu);
	xs_release();
	return NULL;
}

/* The read-ahead of records seq[0..n) (started when any is remote). */
void dsort_ahead_start(struct ahead *a, struct drun *x, const dsort_rec_t **seq, size_t n)
{
	*a = (struct ahead){.x = x, .seq = seq, .n = n};
	a->lo = xcalloc(n + 1, sizeof(*a->lo));
	a->hi = xcalloc(n + 1, sizeof(*a->hi));
	pthread_mutex_init(&a->mu, NULL);
	pthread_cond_init(&a->cv, NULL);
	for (size_t s = 0; s < DSORT_AHEAD_SLOTS; s++)
		a->slot[s].k = SIZE_MAX;
	size_t remote = 0;
	for (size_t k = 0; k < n; k++) /* (shard_fd opens files: here, before the threads) */
		if (dsort_shard_fd(x, seq[k]->shard) >= 0 || !span_of(seq[k], &a->lo[k], &a->hi[k]))
			a->hi[k] = 0;
		else
			remote++;
	for (int i = 0; remote && i < DSORT_AHEAD_THREADS; i++)
		if (pthread_create(&a->th[a->nth], NULL, ahead_main, a) == 0)
			a->nth++;
}

/* The builder's record a->pos: its span's bytes (at *lo of its shard) when
 * fetched ahead, else NULL (the builder reads it itself); *failed when the
 * fetch failed (x's error set). */
const buf_t *dsort_ahead_take(struct ahead *a, uint64_t *lo, bool *failed)
{
	size_t k = a->pos;
	*failed = false;
	if (k >= a->n || !a->hi[k] || !a->nth)
		return NULL;
	size_t s = k % DSORT_AHEAD_SLOTS;
	pthread_mutex_lock(&a->mu);
	while (!(a->slot[s].k == k && a->slot[s].state >= SLOT_READY) && !a->stop && !dsort_failed(a->x))
		pthread_cond_wait(&a->cv, &a->mu);
	bool ok = a->slot[s].k == k && a->slot[s].state == SLOT_READY;
	pthread_mutex_unlock(&a->mu);
	*failed = !ok;
	*lo = a->lo[k];
	return ok ? &a->slot[s].b : NULL;
}

/* The builder is done with record a->pos: the next. */
void dsort_ahead_next(struct ahead *a)
{
	pthread_mutex_lock(&a->mu);
	size_t k = a->pos++;
	if (k < a->n && a->hi[k] && a->nth) {
		a->inflight -= a->hi[k] - a->lo[k];
		if (a->slot[k % DSORT_AHEAD_SLOTS].k == k)
			a->slot[k % DSORT_AHEAD_SLOTS].state = SLOT_FREE;
	}
	if (a->nth) /* (a fetcher may wait for the builder to move, past a local record too) */
		pthread_cond_broadcast(&a->cv);
	pthread_mutex_unlock(&a->mu);
}

void dsort_ahead_stop(struct ahead *a)
{
	pthread_mutex_lock(&a->mu);
	a->stop = true;
	pthread_cond_broadcast(&a->cv);
	pthread_mutex_unlock(&a->mu);
	for (int i = 0; i < a->nth; i++)
		pthread_join(a->th[i], NULL);
	for (size_t s = 0; s < DSORT_AHEAD_SLOTS; s++)
		buf_free(&a->slot[s].b);
	pthread_cond_destroy(&a->cv);
	pthread_mutex_destroy(&a->mu);
	free(a->lo);
	free(a->hi);
}
