/*
 * io.c - the object transfers of the jobs that build shards in the cluster
 * (ishard, archive) and of copy-bck's uncached remote objects: one
 * object's bytes appended to a temporary file, read from this target's
 * store or fetched from its holder (a GET through the holder's object
 * layer: for a remote bucket, its cold read), and a finished file PUT to
 * its owner as a client's write. Both retry while the peer is away
 * (a restart: the map of the moment is asked again), up to ISHARD_RETRY_MS,
 * and give up at once on an answer that will not change (a 4xx) or when the
 * job is stopped.
 */
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "aisd/cluster.h"
#include "aisd/ishard.h"
#include "aisd/log.h"
#include "aisd/status.h"
#include "aisd/util.h"
#include "aisd/xp.h"
#include "aisd/banned.h"

#define IO_TIMEOUT_MS 120000

struct sink {
	FILE *f;
	uint64_t n;
};

static int sink_write(void *arg, const char *p, size_t n)
{
	struct sink *s = arg;
	s->n += n;
	return fwrite(p, 1, n, s->f) == n ? AIS_OK : AIS_ERR;
}

int ishard_fetch(struct cluster *cl, store_t *store, const char *bck, const char *name, FILE *f,
		 atomic_bool *abort, const char *job, uint64_t *n, char *why, size_t whysz)
{
	size_t nlen = strlen(name);
	store_meta_t meta;
	int fd;
	struct sink s = {f, 0};
	*n = 0;
	if (store_open_obj(store, bck, strlen(bck), name, nlen, &fd, &meta) == AIS_OK) {
		char b[65536];
		ssize_t r = 0;
		while ((r = read(fd, b, sizeof(b))) > 0 && sink_write(&s, b, (size_t)r) == AIS_OK)
			;
		close(fd);
		*n = s.n;
		if (r != 0) {
			snprintf(why, whysz, "reading it: %s", strerror(errno ? errno : EIO));
			return 500;
		}
		return 0;
	}
	long at = ftell(f);
	int64_t until = time_mono_ns() + (int64_t)ISHARD_RETRY_MS * 1000000;
	for (int k = 0;; k++) { /* the holder may be restarting: again, under the map of the moment */
		cluster_where_t w;
		cluster_where(cl, sv_from(bck), (sv_t){name, nlen}, true, &w, NULL, 0);
		buf_t url = BUF_INIT, msg = BUF_INIT;
		int status = 0, rc = AIS_ERR;
		if (w.n && w.owner_intra[0]) {
			buf_addf(&url, "%s/v1/objects/%s/", w.owner_intra, bck);
			buf_add_pct(&url, (sv_t){name, nlen}, true);
			s.n = 0;
			fseek(f, at, SEEK_SET);
			rc = xs_get_to(url.ptr, NULL, IO_TIMEOUT_MS, sink_write, &s, NULL, &status, &msg);
		}
		snprintf(why, whysz, "fetching from %.60s: %d %.120s", w.n ? w.owner_intra : "(no target)", status,
			 msg.ptr ? msg.ptr : rc == AIS_OK ? "" : strerror(errno));
		buf_free(&url);
		buf_free(&msg);
		if (rc == AIS_OK && status == 200) {
			*n = s.n;
			return 0;
		}
		if ((rc == AIS_OK && status < 500) || time_mono_ns() > until || atomic_load(abort))
			return rc == AIS_OK && status >= 400 ? status : 503;
		if (k == 0)
			log_warnx("%s: %s: %s (trying again)", job, name, why);
		usleep(300 * 1000);
	}
}

int ishard_put(struct cluster *cl, const char *bck, const char *name, FILE *f, const char *custom,
	       atomic_bool *abort, const char *job, char *why, size_t whysz)
{
	if (fflush(f) != 0 || fseek(f, 0, SEEK_END) != 0) {
		snprintf(why, whysz, "writing the temporary file: %s", strerror(errno));
		return 500;
	}
	long len = ftell(f);
	buf_t md = BUF_INIT;
	if (custom)
		buf_addf(&md, "Ais-Custom-Md: %s", custom);
	const char *hdrs[] = {md.ptr, NULL};
	int64_t until = time_mono_ns() + (int64_t)ISHARD_RETRY_MS * 1000000;
	for (int k = 0;; k++) { /* the destination's owner may be restarting: again */
		cluster_where_t d;
		cluster_where(cl, sv_from(bck), sv_from(name), false, &d, NULL, 0);
		buf_t url = BUF_INIT, rh = BUF_INIT, msg = BUF_INIT;
		int status = 0, rc = AIS_ERR;
		bool sent = true;
		if (d.n && d.owner_intra[0]) {
			buf_addf(&url, "%s/v1/objects/%s/", d.owner_intra, bck);
			buf_add_pct(&url, sv_from(name), true);
			rc = xs_put_file(url.ptr, custom ? hdrs : NULL, fileno(f), (uint64_t)len, IO_TIMEOUT_MS, &status,
					 &sent, &rh, &msg);
		}
		snprintf(why, whysz, "writing the shard: %s%d %.150s", rc == AIS_OK ? "HTTP " : "", status,
			 msg.ptr ? msg.ptr : d.n ? "no answer" : "no active target");
		buf_free(&url);
		buf_free(&rh);
		buf_free(&msg);
		if (rc == AIS_OK && status == 200)
			break;
		if ((rc == AIS_OK && status < 500) || time_mono_ns() > until || atomic_load(abort)) {
			buf_free(&md);
			return rc == AIS_OK && status >= 400 ? status : 503;
		}
		if (k == 0)
			log_warnx("%s: %s: %s (trying again)", job, name, why);
		usleep(300 * 1000);
	}
	buf_free(&md);
	return 0;
}
