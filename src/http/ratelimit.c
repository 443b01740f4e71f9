/*
 * ratelimit.c - requests per second per client address (net.rate_limit):
 * a token bucket per address, kept by each worker in a table of its own,
 * so the check takes no lock and touches no shared memory.
 *
 * Guarantees: with the limit off nothing is allocated or looked up; a
 * client over its rate gets 429 with Retry-After (whole seconds until a
 * token is back) and the request is not handed to any handler; the table
 * has a fixed size (RL_SLOTS): when full, the address seen least recently
 * in the probe window gives up its slot (so a flood of addresses can cost
 * a client its history, never memory). The limit is per worker: a client
 * whose connections land on k workers may get up to k times the rate.
 * The cluster's own calls (the server's is_cluster_call hook: a gateway's
 * fan-out, keepalives) are neither counted nor refused.
 */
#include <string.h>

#include "internal.h"
#include "aisd/util.h"
#include "aisd/banned.h"

#define RL_SLOTS 4096 /* power of two */
#define RL_PROBE 8

struct rl_slot {
	unsigned char key[16];
	bool used;
	double tokens;
	int64_t last_ns;
};

static uint32_t rl_hash(const unsigned char *k)
{
	uint32_t h = 2166136261u; /* FNV-1a */
	for (int i = 0; i < 16; i++)
		h = (h ^ k[i]) * 16777619u;
	return h;
}

void http_server_set_rate_limit(http_server_t *s, uint64_t per_sec, uint64_t burst)
{
	atomic_store(&s->burst, burst ? burst : per_sec);
	atomic_store(&s->rate, per_sec);
}

void http_server_rate_limit(http_server_t *s, uint64_t *per_sec, uint64_t *burst)
{
	*per_sec = atomic_load(&s->rate);
	*burst = atomic_load(&s->burst);
}

bool http_rate_check(http_conn_t *c)
{
	struct worker *w = c->w;
	uint64_t rate = atomic_load_explicit(&w->srv->rate, memory_order_relaxed);
	if (!rate || (w->srv->o.is_cluster_call && w->srv->o.is_cluster_call(&c->req)))
		return false; /* the cluster's own calls are not a client's */
	double burst = (double)atomic_load_explicit(&w->srv->burst, memory_order_relaxed);
	if (burst < 1)
		burst = 1;
	if (!w->rl)
		w->rl = xcalloc(RL_SLOTS, sizeof(*w->rl));

	int64_t now = time_mono_ns();
	uint32_t h = rl_hash(c->peer_key);
	struct rl_slot *slot = NULL, *oldest = NULL;
	for (int i = 0; i < RL_PROBE; i++) {
		struct rl_slot *e = &w->rl[(h + (uint32_t)i) & (RL_SLOTS - 1)];
		if (e->used && !memcmp(e->key, c->peer_key, 16)) {
			slot = e;
			break;
		}
		if (!oldest || !e->used || (oldest->used && e->last_ns < oldest->last_ns))
			oldest = e;
	}
	if (!slot) {
		slot = oldest;
		memcpy(slot->key, c->peer_key, 16);
		slot->used = true;
		slot->tokens = burst;
		slot->last_ns = now;
	}
	slot->tokens += (double)(now - slot->last_ns) / 1e9 * (double)rate;
	if (slot->tokens > burst)
		slot->tokens = burst;
	slot->last_ns = now;
	if (slot->tokens >= 1) {
		slot->tokens -= 1;
		return false;
	}
	HM_INC(w->st.rate_limited, 1);
	uint64_t wait_s = (uint64_t)((1 - slot->tokens) / (double)rate) + 1;
	http_resp_header(&c->req, "Retry-After", "%llu", (unsigned long long)wait_s);
	conn_refuse(&c->req, 429, "SlowDown", "too many requests from %s (net.rate_limit is %llu per second)",
		    c->peer, (unsigned long long)rate);
	return true;
}
