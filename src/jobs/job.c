/*
 * job.c - what every background job shares: state names, the JSON of its
 * progress, and merging the states of many targets. Pure.
 */
#include <stddef.h>
#include <string.h>

#include "aisd/jobs.h"
#include "aisd/banned.h"

const char *job_state_name(enum job_state s)
{
	static const char *const names[] = {"idle", "running", "done", "aborted", "failed"};
	return (unsigned)s < sizeof(names) / sizeof(names[0]) ? names[s] : "unknown";
}

uint64_t job_remaining(const job_stats_t *s)
{
	if (s->state != JOB_RUNNING || s->walked >= s->total)
		return 0;
	return s->total - s->walked;
}

void job_stats_json(const job_stats_t *s, const char *kind, buf_t *out)
{
	buf_addstr(out, "{\"kind\":");
	buf_add_json_str(out, kind, strlen(kind));
	buf_addf(out,
	         ",\"state\":\"%s\",\"cmap_version\":%llu,\"runs\":%llu,\"total\":%llu,\"walked\":%llu,"
	         "\"remaining\":%llu,\"moved\":%llu,\"moved_bytes\":%llu,\"deleted\":%llu,\"errors\":%llu,"
	         "\"objects\":%llu,\"start\":%lld,\"end\":%lld,\"last_error\":",
	         job_state_name(s->state), (unsigned long long)s->cmap_version, (unsigned long long)s->runs,
	         (unsigned long long)s->total, (unsigned long long)s->walked,
	         (unsigned long long)job_remaining(s), (unsigned long long)s->moved,
	         (unsigned long long)s->moved_bytes, (unsigned long long)s->deleted,
	         (unsigned long long)s->errors, (unsigned long long)s->objects, (long long)s->start_ns,
	         (long long)s->end_ns);
	buf_add_json_str(out, s->last_error, strlen(s->last_error));
	buf_addch(out, '}');
}

enum job_state job_state_merge(const enum job_state *st, size_t n)
{
	static const enum job_state order[] = {JOB_RUNNING, JOB_FAILED, JOB_ABORTED, JOB_DONE};
	for (size_t k = 0; k < sizeof(order) / sizeof(order[0]); k++)
		for (size_t i = 0; i < n; i++)
			if (st[i] == order[k])
				return order[k];
	return JOB_IDLE;
}
