/*
 * metrics.c - the metrics registry (see metrics.h).
 *
 * Guarantees: updating a variable is one relaxed atomic add, with no lock;
 * registration and scrapes take one mutex; a variable, once registered,
 * stays at the same address until the process exits; a family's HELP and
 * TYPE lines are written once, before all of its series.
 */
#include <pthread.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "aisd/metrics.h"
#include "aisd/util.h"
#include "aisd/banned.h"

struct mvar {
	struct mvar *next;
	char *name, *labels, *help;
	bool gauge;
	_Atomic uint64_t u;
	_Atomic int64_t i;
};

struct mcoll {
	struct mcoll *next;
	metrics_collect_fn fn;
	void *arg;
};

static pthread_mutex_t g_mu = PTHREAD_MUTEX_INITIALIZER;
static struct mvar *g_vars, **g_vars_tail = &g_vars;
static struct mcoll *g_colls;

static char *dupstr(const char *s)
{
	size_t n = strlen(s ? s : "");
	char *p = xmalloc(n + 1);
	memcpy(p, s ? s : "", n + 1);
	return p;
}

static struct mvar *var_get(const char *name, const char *labels, const char *help, bool gauge)
{
	labels = labels ? labels : "";
	pthread_mutex_lock(&g_mu);
	struct mvar *v;
	for (v = g_vars; v; v = v->next)
		if (!strcmp(v->name, name) && !strcmp(v->labels, labels))
			break;
	if (!v) {
		v = xcalloc(1, sizeof(*v));
		v->name = dupstr(name);
		v->labels = dupstr(labels);
		v->help = dupstr(help);
		v->gauge = gauge;
		*g_vars_tail = v;
		g_vars_tail = &v->next;
	}
	pthread_mutex_unlock(&g_mu);
	return v;
}

_Atomic uint64_t *metrics_counter(const char *name, const char *labels, const char *help)
{
	return &var_get(name, labels, help, false)->u;
}

_Atomic int64_t *metrics_gauge(const char *name, const char *labels, const char *help)
{
	return &var_get(name, labels, help, true)->i;
}

void metrics_collector_add(metrics_collect_fn fn, void *arg)
{
	struct mcoll *c = xcalloc(1, sizeof(*c));
	c->fn = fn;
	c->arg = arg;
	pthread_mutex_lock(&g_mu);
	c->next = g_colls;
	g_colls = c;
	pthread_mutex_unlock(&g_mu);
}

void metrics_collector_remove(metrics_collect_fn fn, void *arg)
{
	pthread_mutex_lock(&g_mu);
	for (struct mcoll **pp = &g_colls; *pp; pp = &(*pp)->next) {
		if ((*pp)->fn == fn && (*pp)->arg == arg) {
			struct mcoll *c = *pp;
			*pp = c->next;
			free(c);
			break;
		}
	}
	pthread_mutex_unlock(&g_mu);
}

void metrics_family(buf_t *out, const char *name, const char *type, const char *help)
{
	buf_addf(out, "# HELP %s ", name);
	for (const char *p = help; *p; p++) {
		if (*p == '\\')
			buf_addstr(out, "\\\\");
		else if (*p == '\n')
			buf_addstr(out, "\\n");
		else
			buf_addch(out, *p);
	}
	buf_addf(out, "\n# TYPE %s %s\n", name, type);
}

void metrics_label(buf_t *out, const char *name, const char *value, size_t len)
{
	buf_addf(out, "%s=\"", name);
	for (size_t i = 0; i < len; i++) {
		char ch = value[i];
		if (ch == '\\' || ch == '"')
			buf_addch(out, '\\'), buf_addch(out, ch);
		else if (ch == '\n')
			buf_addstr(out, "\\n");
		else
			buf_addch(out, ch);
	}
	buf_addch(out, '"');
}

void metrics_write(buf_t *out)
{
	pthread_mutex_lock(&g_mu);
	for (struct mvar *v = g_vars; v; v = v->next) {
		bool first = true;
		for (struct mvar *w = g_vars; w != v; w = w->next)
			if (!strcmp(w->name, v->name)) {
				first = false;
				break;
			}
		if (!first)
			continue; /* written with the family's first series */
		metrics_family(out, v->name, v->gauge ? "gauge" : "counter", v->help);
		for (struct mvar *w = v; w; w = w->next) {
			if (strcmp(w->name, v->name))
				continue;
			buf_addstr(out, w->name);
			if (w->labels[0])
				buf_addf(out, "{%s}", w->labels);
			if (w->gauge)
				buf_addf(out, " %lld\n", (long long)atomic_load_explicit(&w->i, memory_order_relaxed));
			else
				buf_addf(out, " %llu\n",
					 (unsigned long long)atomic_load_explicit(&w->u, memory_order_relaxed));
		}
	}
	/* Collectors run under the lock, so a remove waits for a scrape. */
	for (struct mcoll *c = g_colls; c; c = c->next)
		c->fn(c->arg, out);
	pthread_mutex_unlock(&g_mu);
}
