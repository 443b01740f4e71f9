/*
 * arena.h - per-request memory pool with cleanup callbacks.
 *
 * Every request owns an arena. Allocations live until arena_destroy, which
 * first runs the registered cleanups in reverse order (close a file, destroy
 * a LevelDB iterator, unlink a temp file), then frees all memory. So nothing
 * leaks on any error path: register the cleanup as soon as the resource
 * exists.
 */
#ifndef AISD_ARENA_H
#define AISD_ARENA_H

#include <stddef.h>
#include "aisd/buf.h"

typedef struct arena arena_t;
typedef void (*arena_cleanup_fn)(void *arg);

/* No memory is taken until the first allocation (a connection that never
 * sends a request costs no block). */
arena_t *arena_new(size_t block_size);
void arena_destroy(arena_t *a);
/* Runs the cleanups and frees the memory, but keeps the arena (and its first
 * block) for reuse: the next request on a keep-alive connection. */
void arena_reset(arena_t *a);

void *arena_alloc(arena_t *a, size_t n);  /* 16-byte aligned, uninitialised */
void *arena_zalloc(arena_t *a, size_t n); /* zeroed */
char *arena_strndup(arena_t *a, const char *s, size_t n);
char *arena_svdup(arena_t *a, sv_t s);
char *arena_printf(arena_t *a, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/* Registers fn(arg) to run when the arena is reset or destroyed. Returns a
 * handle that arena_cleanup_cancel() can disarm (when ownership moves on). */
void *arena_cleanup_add(arena_t *a, arena_cleanup_fn fn, void *arg);
void arena_cleanup_cancel(void *handle);

#endif
