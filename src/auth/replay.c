/*
 * replay.c - the intra-cluster signatures this node took lately
 * (authz.h, authz_replay_take): a signature seen on the network cannot be
 * sent again, within the AUTH_INTRA_SKEW window in which its time would
 * still pass.
 *
 * An open-addressing table of (key, expiry) under one mutex: a key is the
 * first 64 bits of the signature mixed with the nonce's; an entry is live
 * until its signing time + AUTH_INTRA_SKEW + 1, and dead entries are
 * reused and dropped when the table is rebuilt. Memory follows the rate of
 * intra-cluster calls (16 bytes per call of the last ~60 s, twice that in
 * slots); past REPLAY_MAX live entries new calls are refused (503 by the
 * caller's 401, the sender retries) rather than forgetting one that is
 * still live.
 */
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "aisd/auth.h"
#include "aisd/authz.h"
#include "aisd/status.h"
#include "aisd/util.h"
#include "aisd/banned.h"

#define REPLAY_MIN 4096
#define REPLAY_MAX (1u << 22) /* live entries at most (64 MiB of slots) */

struct slot {
	uint64_t key;
	int64_t until; /* 0: empty */
};

static pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;
static struct slot *tab;
static size_t cap, used; /* used: non-empty slots, live or dead */

static size_t home(uint64_t key)
{
	key ^= key >> 33;
	key *= 0xff51afd7ed558ccdULL;
	key ^= key >> 33;
	return (size_t)key & (cap - 1);
}

/* Rebuilds with the live entries only, in a table of ncap slots. */
static void rebuild(size_t ncap, int64_t now)
{
	struct slot *old = tab;
	size_t ocap = cap;
	tab = xcalloc(ncap, sizeof(*tab));
	cap = ncap;
	used = 0;
	for (size_t i = 0; i < ocap; i++) {
		if (old[i].until <= now)
			continue;
		size_t h = home(old[i].key);
		while (tab[h].until)
			h = (h + 1) & (cap - 1);
		tab[h] = old[i];
		used++;
	}
	free(old);
}

int authz_replay_take(uint64_t key, int64_t ts, int64_t now)
{
	int rc = AIS_OK;
	pthread_mutex_lock(&mu);
	if (!tab)
		rebuild(REPLAY_MIN, now);
	if (used + 1 > cap / 2) {
		rebuild(cap, now); /* drop the dead first */
		if (used + 1 > cap / 4 && cap < 2 * (size_t)REPLAY_MAX)
			rebuild(cap * 2, now);
	}
	if (used + 1 > cap / 2) {
		rc = AIS_AGAIN; /* full of live signatures */
		goto out;
	}
	size_t h = home(key), free_at = SIZE_MAX;
	for (; tab[h].until; h = (h + 1) & (cap - 1)) {
		if (tab[h].until <= now) {
			if (free_at == SIZE_MAX)
				free_at = h;
		} else if (tab[h].key == key) {
			rc = AIS_ERR;
			goto out;
		}
	}
	if (free_at == SIZE_MAX) {
		free_at = h;
		used++;
	}
	tab[free_at] = (struct slot){key, ts + AUTH_INTRA_SKEW + 1};
out:
	pthread_mutex_unlock(&mu);
	return rc;
}
