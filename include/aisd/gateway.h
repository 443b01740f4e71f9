/*
 * gateway.h - the gateway role: the cluster's stateless front door.
 *
 * A gateway owns nothing but cluster metadata. It answers object requests
 * with a 307 redirect to the owner target (HRW over the active targets of
 * the cluster map), so object bytes never pass through it; it answers
 * bucket requests from the BMD, sends bucket changes through the primary
 * gateway (which pushes them to every node), and lists a bucket by asking
 * every target and merging their pages in name order.
 */
#ifndef AISD_GATEWAY_H
#define AISD_GATEWAY_H

#include "aisd/cluster.h"
#include "aisd/conf.h"
#include "aisd/http.h"

typedef struct gateway {
	node_base_t base; /* first: the cluster handlers find it from req->ctx */
	const conf_t *conf;
	http_server_t *srv;
} gateway_t;

gateway_t *gateway_start(const conf_t *c, buf_t *err);
void gateway_stop(gateway_t *g);
int gateway_port(const gateway_t *g);

#endif
