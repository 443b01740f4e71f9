/*
 * pool.c - thread pool for blocking work (see pool.h). One mutex-protected
 * FIFO, a condition variable, N threads. Simple on purpose: tasks are
 * coarse (a disk write of up to store.put_buffer bytes, an fsync, a commit),
 * so queue contention is never the bottleneck.
 */
#include <pthread.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>

#include "aisd/log.h"
#include "aisd/pool.h"
#include "aisd/util.h"
#include "aisd/banned.h"

struct pool {
	pthread_mutex_t mu;
	pthread_cond_t cv;
	pool_task_t *head, *tail;
	bool stopping;
	int n;
	pthread_t *threads;
	char name[16];
};

static void *pool_main(void *arg)
{
	pool_t *p = arg;
	log_set_action(p->name);
	pthread_mutex_lock(&p->mu);
	for (;;) {
		while (!p->head && !p->stopping)
			pthread_cond_wait(&p->cv, &p->mu);
		pool_task_t *t = p->head;
		if (!t)
			break; /* stopping and drained */
		p->head = t->next;
		if (!p->head)
			p->tail = NULL;
		pthread_mutex_unlock(&p->mu);
		t->next = NULL;
		t->fn(t);
		pthread_mutex_lock(&p->mu);
	}
	pthread_mutex_unlock(&p->mu);
	return NULL;
}

pool_t *pool_new(int nthreads, const char *name)
{
	pool_t *p = xcalloc(1, sizeof(*p));
	pthread_mutex_init(&p->mu, NULL);
	pthread_cond_init(&p->cv, NULL);
	snprintf(p->name, sizeof(p->name), "%s", name ? name : "pool");
	p->n = nthreads > 0 ? nthreads : 1;
	p->threads = xcalloc((size_t)p->n, sizeof(pthread_t));
	for (int i = 0; i < p->n; i++) {
		if (pthread_create(&p->threads[i], NULL, pool_main, p))
			fatal("pthread_create");
		char tn[32];
		snprintf(tn, sizeof(tn), "%.8s%d", p->name, i % 1000);
		tn[15] = '\0';
		pthread_setname_np(p->threads[i], tn);
	}
	return p;
}

void pool_submit(pool_t *p, pool_task_t *t, pool_fn fn)
{
	t->fn = fn;
	t->next = NULL;
	pthread_mutex_lock(&p->mu);
	if (p->tail)
		p->tail->next = t;
	else
		p->head = t;
	p->tail = t;
	pthread_cond_signal(&p->cv);
	pthread_mutex_unlock(&p->mu);
}

void pool_destroy(pool_t *p)
{
	if (!p)
		return;
	pthread_mutex_lock(&p->mu);
	p->stopping = true;
	pthread_cond_broadcast(&p->cv);
	pthread_mutex_unlock(&p->mu);
	for (int i = 0; i < p->n; i++)
		pthread_join(p->threads[i], NULL);
	pthread_mutex_destroy(&p->mu);
	pthread_cond_destroy(&p->cv);
	free(p->threads);
	free(p);
}
