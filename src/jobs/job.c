/*
 * job.c - what every background job shares: state names, the JSON of its
 * progress, and merging the states of many targets. Pure.
 */
#include <stddef.h>
#include <stdio.h>
#include <string.h>

#include "aisd/jobs.h"
#include "aisd/metrics.h"
#include "aisd/banned.h"

const char *job_state_name(enum job_state s)
{
	static const char *const names[] = {"idle", "running", "done", "aborted", "failed"};
	return (unsigned)s < sizeof(names) / sizeof(names[0]) ? names[s] : "unknown";
}

enum job_state job_state_of(const char *name)
{
	for (int k = JOB_IDLE; name && k <= JOB_FAILED; k++)
		if (!strcmp(name, job_state_name((enum job_state)k)))
			return (enum job_state)k;
	return JOB_IDLE;
}

uint64_t job_remaining(const job_stats_t *s)
{
	if (s->state != JOB_RUNNING || s->walked >= s->total)
		return 0;
	return s->total - s->walked;
}

uint64_t job_remaining_bytes(const job_stats_t *s)
{
	if (s->state != JOB_RUNNING || s->walked_bytes >= s->total_bytes)
		return 0;
	return s->total_bytes - s->walked_bytes;
}

void job_metrics(const job_stats_t *st, const char *const *kinds, size_t n, buf_t *out)
{
	static const struct {
		const char *name, *type, *help;
	} fams[] = {
		{"aisd_job_state", "gauge", "state of the job's last run: 0 idle, 1 running, 2 done, 3 aborted, 4 failed"},
		{"aisd_job_runs_total", "counter", "runs started since this process started"},
		{"aisd_job_objects_walked", "gauge", "objects looked at by the current (or last) run"},
		{"aisd_job_objects_remaining", "gauge", "objects the current run has yet to look at (0 when not running)"},
		{"aisd_job_bytes_remaining", "gauge", "bytes of the objects the current run has yet to look at"},
		{"aisd_job_objects_moved", "gauge", "copies the current (or last) run sent or moved"},
		{"aisd_job_bytes_moved", "gauge", "bytes of those copies"},
		{"aisd_job_objects_deleted", "gauge", "local copies the run removed once moved"},
		{"aisd_job_errors", "gauge", "errors of the current (or last) run"},
	};
	for (size_t f = 0; f < sizeof(fams) / sizeof(fams[0]); f++) {
		metrics_family(out, fams[f].name, fams[f].type, fams[f].help);
		for (size_t i = 0; i < n; i++) {
			const job_stats_t *s = &st[i];
			uint64_t v[] = {(uint64_t)s->state, s->runs,           s->walked,
			                job_remaining(s),   job_remaining_bytes(s), s->moved,
			                s->moved_bytes,     s->deleted,        s->errors};
			buf_addf(out, "%s{", fams[f].name);
			metrics_label(out, "job", kinds[i], strlen(kinds[i]));
			buf_addf(out, "} %llu\n", (unsigned long long)v[f]);
		}
	}
}

void job_stats_json(const job_stats_t *s, const char *kind, buf_t *out)
{
	buf_addstr(out, "{\"kind\":");
	buf_add_json_str(out, kind, strlen(kind));
	buf_addf(out,
	         ",\"state\":\"%s\",\"cmap_version\":%llu,\"runs\":%llu,\"total\":%llu,"
	         "\"total_bytes\":%llu,\"walked\":%llu,\"remaining\":%llu,\"remaining_bytes\":%llu,"
	         "\"moved\":%llu,\"moved_bytes\":%llu,\"deleted\":%llu,\"errors\":%llu,"
	         "\"objects\":%llu,\"peer_streams_max\":%llu,\"start\":%lld,\"end\":%lld,\"last_error\":",
	         job_state_name(s->state), (unsigned long long)s->cmap_version, (unsigned long long)s->runs,
	         (unsigned long long)s->total, (unsigned long long)s->total_bytes,
	         (unsigned long long)s->walked, (unsigned long long)job_remaining(s),
	         (unsigned long long)job_remaining_bytes(s), (unsigned long long)s->moved,
	         (unsigned long long)s->moved_bytes, (unsigned long long)s->deleted,
	         (unsigned long long)s->errors, (unsigned long long)s->objects,
	         (unsigned long long)s->peer_streams_max, (long long)s->start_ns,
	         (long long)s->end_ns);
	buf_add_json_str(out, s->last_error, strlen(s->last_error));
	buf_addstr(out, ",\"error_list\":[");
	for (const char *p = s->error_list, *nl; *p; p = nl + 1) {
		if (!(nl = strchr(p, '\n')))
			break;
		if (p != s->error_list)
			buf_addch(out, ',');
		buf_add_json_str(out, p, (size_t)(nl - p));
	}
	buf_addstr(out, "]}");
}

void job_error_add(job_stats_t *s, const char *what, const char *why)
{
	s->errors++;
	snprintf(s->last_error, sizeof(s->last_error), "%.100s: %.150s", what, why);
	size_t n = 0, len = strlen(s->error_list);
	for (const char *p = s->error_list; *p; p++)
		n += *p == '\n';
	char line[300];
	int ll = snprintf(line, sizeof(line), "%s", s->last_error);
	for (char *p = line; *p; p++)
		if (*p == '\n')
			*p = ' ';
	if (n >= JOB_ERRORS_LISTED || ll <= 0 || len + 2 >= sizeof(s->error_list))
		return;
	size_t room = sizeof(s->error_list) - len - 2; /* the line, '\n', NUL */
	size_t take = (size_t)ll < room ? (size_t)ll : room;
	memcpy(s->error_list + len, line, take);
	s->error_list[len + take] = '\n';
	s->error_list[len + take + 1] = '\0';
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
