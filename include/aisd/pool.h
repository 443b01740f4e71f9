/*
 * pool.h - a fixed set of threads for blocking work (disk I/O, fsync,
 * LevelDB writes), so event loops never block on a disk.
 *
 * Tasks are intrusive: the caller embeds a pool_task_t in its own struct and
 * keeps it alive until the task has run. Tasks run in FIFO order on any
 * pool thread. Knows nothing of HTTP; completions back to an event loop are
 * the caller's business (see http.h http_offload).
 */
#ifndef AISD_POOL_H
#define AISD_POOL_H

typedef struct pool pool_t;
typedef struct pool_task pool_task_t;
typedef void (*pool_fn)(pool_task_t *t);

struct pool_task {
	pool_task_t *next;
	pool_fn fn;
};

pool_t *pool_new(int nthreads, const char *name);
void pool_submit(pool_t *p, pool_task_t *t, pool_fn fn);
/* Finishes queued tasks, then joins the threads. */
void pool_destroy(pool_t *p);

#endif
