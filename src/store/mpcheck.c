/*
 * mpcheck.c - mountpaths that fail at run time: a disk unmounted, its
 * directory removed or replaced, its file system remounted read-only.
 *
 * A thread checks every active or detaching mountpath each
 * store.check_interval: the path must still name the directory opened
 * (same device and inode) and its file system must be writable; a write
 * that cannot create its temporary file for one of those reasons reports
 * it too (write.c). A failed mountpath becomes MP_FAULTED (store_int.h):
 *
 *  1. It leaves placement at once: store_mp_of picks among the active
 *     slots only, so new writes land on the others, and objects on the
 *     others keep their HRW mountpath (HRW moves only the failed one's).
 *  2. Nothing reads it: store_mp_open is false for it, so lookups, lists
 *     and the resilver skip it; its database stays open (a reader may be
 *     in it) until a detach closes it under mp_rw held for writing.
 *  3. The last active mountpath is never taken out (the store would have
 *     nowhere to write): the failure is logged once instead.
 *  4. The bucket slot moves to the first active one.
 * The reason is kept for `aisctl storage mountpath show` and /metrics.
 */
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <time.h>

#include "aisd/log.h"
#include "aisd/status.h"
#include "aisd/util.h"
#include "store_int.h"
#include "aisd/banned.h"

void store_mp_fault(store_t *s, store_mp_t *mp, const char *why)
{
	pthread_mutex_lock(&s->mp_mu);
	int st = atomic_load(&mp->state);
	if (st != MP_ACTIVE && st != MP_DETACHING) {
		pthread_mutex_unlock(&s->mp_mu);
		return;
	}
	if (st == MP_ACTIVE && store_count_state(s, MP_ACTIVE) == 1) {
		if (strcmp(mp->fault, why)) { /* rule 3: once per reason */
			snprintf(mp->fault, sizeof(mp->fault), "%s", why);
			log_errx("mountpath %s failed (%s), but it is the last one: it stays in use", mp->path, why);
		}
		pthread_mutex_unlock(&s->mp_mu);
		return;
	}
	snprintf(mp->fault, sizeof(mp->fault), "%s", why);
	atomic_store_explicit(&mp->state, MP_FAULTED, memory_order_release);
	store_pick_bmp(s);
	store_hot_clear(s);
	log_errx("mountpath %s failed (%s): it is out of use, the other mountpaths keep serving "
		   "(detach it; attach it again once repaired)",
		   mp->path, why);
	pthread_mutex_unlock(&s->mp_mu);
}

/* Why mp is unusable now, or false if it looks fine. */
static bool mp_broken(const store_mp_t *mp, char *why, size_t sz)
{
	struct stat st;
	struct statvfs sv;
	if (stat(mp->path, &st) != 0) {
		snprintf(why, sz, "its directory is gone: %s", strerror(errno));
		return true;
	}
	if (st.st_dev != mp->dev || st.st_ino != mp->ino) {
		snprintf(why, sz, "its path names another directory now (unmounted or replaced)");
		return true;
	}
	if (statvfs(mp->path, &sv) == 0 && (sv.f_flag & ST_RDONLY)) {
		snprintf(why, sz, "its file system is read-only");
		return true;
	}
	return false;
}

static void check_all(store_t *s)
{
	char why[256];
	for (int i = 0; i < store_nmp(s); i++) {
		store_mp_t *mp = &s->mp[i];
		int st = atomic_load(&mp->state);
		if ((st == MP_ACTIVE || st == MP_DETACHING) && mp_broken(mp, why, sizeof(why)))
			store_mp_fault(s, mp, why);
	}
}

static void *mpcheck_main(void *arg)
{
	store_t *s = arg;
	pthread_mutex_lock(&s->ck_mu);
	while (!s->ck_stop) {
		struct timespec ts;
		clock_gettime(CLOCK_REALTIME, &ts);
		uint64_t ns = (uint64_t)ts.tv_nsec + (s->check_ms % 1000) * 1000000ULL;
		ts.tv_sec += (time_t)(s->check_ms / 1000 + ns / 1000000000ULL);
		ts.tv_nsec = (long)(ns % 1000000000ULL);
		pthread_cond_timedwait(&s->ck_cond, &s->ck_mu, &ts);
		if (s->ck_stop)
			break;
		pthread_mutex_unlock(&s->ck_mu);
		check_all(s);
		struct timespec now;
		clock_gettime(CLOCK_MONOTONIC, &now);
		int64_t mono = (int64_t)now.tv_sec * 1000000000LL + now.tv_nsec;
		if (mono - s->tomb_swept_ns >= 60 * 1000000000LL) { /* tomb.c guarantee 2 */
			s->tomb_swept_ns = mono;
			store_tomb_sweep(s);
		}
		pthread_mutex_lock(&s->ck_mu);
	}
	pthread_mutex_unlock(&s->ck_mu);
	return NULL;
}

int store_mpcheck_start(store_t *s)
{
	if (pthread_mutex_init(&s->ck_mu, NULL) || pthread_cond_init(&s->ck_cond, NULL))
		fatalx("pthread init");
	if (s->check_ms == 0)
		return AIS_OK;
	if (pthread_create(&s->ck_thread, NULL, mpcheck_main, s) != 0)
		return AIS_ERR;
	s->ck_started = true;
	return AIS_OK;
}

void store_mpcheck_stop(store_t *s)
{
	if (!s->ck_started)
		return;
	pthread_mutex_lock(&s->ck_mu);
	s->ck_stop = true;
	pthread_cond_signal(&s->ck_cond);
	pthread_mutex_unlock(&s->ck_mu);
	pthread_join(s->ck_thread, NULL);
	s->ck_started = false;
}
