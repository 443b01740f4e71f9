/*
 * climit.c - open connections per client address
 * (net.max_conns_per_client): one table for the whole server, since a
 * client's connections land on any worker, under one mutex taken once when
 * a connection is accepted and once when it closes. (The rate limiter's
 * tables, ratelimit.c, are per worker and may forget an address: right for
 * a rate, not for a count that must come back to zero.)
 *
 * Guarantees: a count is exact while its address has connections, and its
 * entry is freed when the count drops to 0, so the table holds at most one
 * entry per open connection; connections on the unix socket are not
 * counted; an address at its cap is asked once per connection whether it
 * is a node of the cluster (the server's is_peer hook), and a node's
 * connections are counted but never refused. The same entries count a
 * client's running jobs (http_req_client_job: GetBatch), each given back
 * when its request completes.
 */
#include <stdlib.h>
#include <string.h>

#include "internal.h"
#include "aisd/util.h"
#include "aisd/banned.h"

struct cl_entry {
	unsigned char key[16];
	uint64_t n;    /* open connections */
	uint64_t jobs; /* requests running that count as jobs (http_req_client_job) */
	struct cl_entry *next;
};

static uint32_t cl_hash(const unsigned char *k)
{
	uint32_t h = 2166136261u; /* FNV-1a */
	for (int i = 0; i < 16; i++)
		h = (h ^ k[i]) * 16777619u;
	return h & (CL_BUCKETS - 1);
}

/* Caller holds cl_mu. The entry of key, made (count 0) when absent. */
static struct cl_entry *do_entry(http_server_t *s, const unsigned char *key)
{
	struct cl_entry **head = &s->cl_tab[cl_hash(key)];
	for (struct cl_entry *e = *head; e; e = e->next)
		if (!memcmp(e->key, key, 16))
			return e;
	struct cl_entry *e = xcalloc(1, sizeof(*e));
	memcpy(e->key, key, 16);
	e->next = *head;
	*head = e;
	return e;
}

/* Caller holds cl_mu. Drops one connection (job: one job) of key; frees
 * the entry when it counts nothing. */
static void do_release(http_server_t *s, const unsigned char *key, bool job)
{
	for (struct cl_entry **p = &s->cl_tab[cl_hash(key)]; *p; p = &(*p)->next) {
		struct cl_entry *e = *p;
		if (memcmp(e->key, key, 16))
			continue;
		if (job)
			e->jobs--;
		else
			e->n--;
		if (!e->n && !e->jobs) {
			*p = e->next;
			free(e);
		}
		return;
	}
}

bool climit_take(http_conn_t *c)
{
	http_server_t *s = c->w->srv;
	if (c->local)
		return true;
	pthread_mutex_lock(&s->cl_mu);
	struct cl_entry *e = do_entry(s, c->peer_key);
	bool ok = ++e->n <= s->max_per_client;
	pthread_mutex_unlock(&s->cl_mu);
	/* at the cap: a node of the cluster (its calls, its relays) is not a
	 * client to hold back (the hook reads the cluster map: no lock of ours) */
	if (!ok && conn_is_node(c))
		ok = true;
	if (!ok) {
		pthread_mutex_lock(&s->cl_mu);
		do_release(s, c->peer_key, false);
		pthread_mutex_unlock(&s->cl_mu);
		return false;
	}
	c->counted = true;
	return true;
}

void climit_release(http_conn_t *c)
{
	http_server_t *s = c->w->srv;
	if (!c->counted)
		return;
	c->counted = false;
	pthread_mutex_lock(&s->cl_mu);
	do_release(s, c->peer_key, false);
	pthread_mutex_unlock(&s->cl_mu);
}

bool http_req_client_job(http_req_t *req, uint64_t max)
{
	http_conn_t *c = req->conn;
	http_server_t *s = c->w->srv;
	if (!max || c->local || c->job_counted || conn_is_node(c))
		return true;
	pthread_mutex_lock(&s->cl_mu);
	struct cl_entry *e = do_entry(s, c->peer_key); /* (there: the connection counts) */
	bool ok = e->jobs < max;
	if (ok)
		e->jobs++;
	pthread_mutex_unlock(&s->cl_mu);
	c->job_counted = ok;
	return ok;
}

void climit_job_release(http_conn_t *c)
{
	http_server_t *s = c->w->srv;
	if (!c->job_counted)
		return;
	c->job_counted = false;
	pthread_mutex_lock(&s->cl_mu);
	do_release(s, c->peer_key, true);
	pthread_mutex_unlock(&s->cl_mu);
}

void climit_free(http_server_t *s)
{
	for (size_t i = 0; i < CL_BUCKETS; i++) {
		while (s->cl_tab[i]) {
			struct cl_entry *e = s->cl_tab[i];
			s->cl_tab[i] = e->next;
			free(e);
		}
	}
}
