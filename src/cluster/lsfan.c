/*
 * lsfan.c - a listing's fan-out to the targets, and what the answers may
 * lack (cluster.h: cluster_lsfan_*). The native listing (gateway.c) and
 * the S3 listings (src/s3/list.c) both ask every target in the map for a
 * page and merge what each target holds; this file decides once, for
 * both, whether that union can be short.
 *
 * Rules:
 *  1. A target is missing when the map names it active and it gave no
 *     answer (no connection, timeout: status 0), or when the map lists it
 *     as lost (dropped by the keepalive, not decommissioned: cmap_drop):
 *     its objects were never moved off, and a rebalance cannot read them
 *     from a node that is down. A target in maintenance or decommissioning
 *     still holds what was not drained (all of it without a drain): it is
 *     asked too, and is missing when it does not answer, as an active one
 *     (the gateway cannot tell that a drain left it empty; being taken
 *     out by an administrator does not make its objects any less there).
 *  2. Every object of a bucket has place_copies(props) copies on distinct
 *     targets (the rebalance deletes a copy only once every new holder has
 *     it). So while fewer targets are missing than that, every object has
 *     a copy among the answers: the listing is complete. Otherwise it may
 *     lack objects (incomplete), and the caller answers an error naming
 *     the missing targets, or a page marked partial when asked for one.
 *  3. A remote bucket listed from its remote (not only its cached copies)
 *     is complete when any target answered: each lists the remote's page.
 *     A lost target changes nothing there.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "aisd/cluster.h"
#include "aisd/place.h"
#include "aisd/util.h"
#include "aisd/banned.h"

void cluster_lsfan_init(cluster_t *cl, const char *bucket, bool cached_only, cluster_lsfan_t *f)
{
	const cmap_t *m;
	const bmd_t *b;

	memset(f, 0, sizeof(*f));
	cluster_read_lock(cl, &m, &b);
	size_t nn = m ? cmap_size(m) : 0, nl = m ? cmap_lost_count(m) : 0;
	const bmd_bucket_t *bk = b ? bmd_get(b, bucket, strlen(bucket)) : NULL;
	f->copies = place_copies(bk ? &bk->props : NULL);
	f->remote = bk && bk->props.backend.provider[0] && !cached_only;
	f->calls = xcalloc(nn + 1, sizeof(*f->calls));
	f->ids = xcalloc(nn + 1, sizeof(*f->ids));
	f->urls = xcalloc(nn + 1, sizeof(*f->urls));
	f->gone = xcalloc(nn + 1, sizeof(*f->gone));
	f->optional = xcalloc(nn + 1, sizeof(*f->optional));
	f->lost = xcalloc(nl + 1, sizeof(*f->lost));
	f->miss = xcalloc(nn + nl + 1, sizeof(*f->miss));
	for (size_t i = 0; i < nn; i++) {
		const cmap_node_t *nd = cmap_node(m, i);
		if (nd->role != CMAP_TARGET)
			continue;
		f->optional[f->n] = nd->state != CMAP_ACTIVE; /* rule 1 */
		snprintf(f->ids[f->n], sizeof(f->ids[0]), "%s", nd->id);
		snprintf(f->urls[f->n], sizeof(f->urls[0]), "%s", nd->intra_url);
		f->n++;
	}
	for (size_t i = 0; i < nl; i++)
		snprintf(f->lost[f->nlost++], sizeof(f->lost[0]), "%s", cmap_lost(m, i));
	cluster_read_unlock(cl);
}

static void add_missing(cluster_lsfan_t *f, const char *id, const char *why)
{
	buf_addstr(&f->missing, f->nmissing ? ", " : "");
	buf_addf(&f->missing, "%s (%s)", id, why);
	snprintf(f->miss[f->nmissing++], sizeof(f->miss[0]), "%s", id);
}

void cluster_lsfan_call(cluster_lsfan_t *f)
{
	size_t answered = 0;

	cluster_call_all(f->calls, f->n);
	for (size_t i = 0; i < f->n; i++) {
		f->gone[i] = f->calls[i].status == 0;
		answered += !f->gone[i];
		if (f->gone[i])
			add_missing(f, f->ids[i], f->optional[i] ? "in maintenance, no answer" : "no answer");
	}
	if (f->remote) { /* rule 3 */
		f->incomplete = f->n && !answered;
		return;
	}
	for (size_t i = 0; i < f->nlost; i++)
		add_missing(f, f->lost[i], "out of the cluster map, not decommissioned");
	f->incomplete = f->nmissing >= f->copies; /* rule 2 */
}

void cluster_lsfan_free(cluster_lsfan_t *f)
{
	for (size_t i = 0; i < f->n; i++)
		buf_free(&f->calls[i].resp);
	free(f->calls);
	free(f->ids);
	free(f->urls);
	free(f->gone);
	free(f->optional);
	free(f->lost);
	free(f->miss);
	buf_free(&f->missing);
	memset(f, 0, sizeof(*f));
}
