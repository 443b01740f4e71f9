/*
 * arena.c - per-request memory pool with cleanups (contract in arena.h).
 *
 * Memory comes in blocks chained from the arena; big requests get a block of
 * their own. Cleanups are a singly linked list run newest first.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "aisd/arena.h"
#include "aisd/util.h"
#include "aisd/banned.h"

struct block {
	struct block *next;
	size_t size, used;
	_Alignas(16) unsigned char data[];
};

struct cleanup {
	struct cleanup *next;
	arena_cleanup_fn fn;
	void *arg;
};

struct arena {
	struct block *blocks; /* newest first; big blocks go behind the head */
	struct block *first;  /* kept by arena_reset, freed by arena_destroy; made
			       * at the first allocation (an idle connection's
			       * arena holds no block) */
	struct cleanup *cleanups;
	size_t block_size;
};

static struct block *block_new(size_t size)
{
	struct block *b = xmalloc(sizeof(*b) + size);
	b->next = NULL;
	b->size = size;
	b->used = 0;
	return b;
}

arena_t *arena_new(size_t block_size)
{
	arena_t *a = xcalloc(1, sizeof(*a));
	a->block_size = block_size ? block_size : 4096;
	return a;
}

static void run_cleanups(arena_t *a)
{
	while (a->cleanups) {
		struct cleanup *c = a->cleanups;
		a->cleanups = c->next;
		if (c->fn)
			c->fn(c->arg);
	}
}

void arena_reset(arena_t *a)
{
	run_cleanups(a);
	/* Free every block but the first: a big block may sit anywhere in the
	 * chain (even last), and must not outlive the request that made it. */
	struct block *b = a->blocks;
	while (b) {
		struct block *next = b->next;
		if (b != a->first)
			free(b);
		b = next;
	}
	if (a->first) {
		a->first->next = NULL;
		a->first->used = 0;
	}
	a->blocks = a->first;
}

void arena_destroy(arena_t *a)
{
	if (!a)
		return;
	arena_reset(a);
	free(a->blocks);
	free(a);
}

void *arena_alloc(arena_t *a, size_t n)
{
	n = (n + 15) & ~(size_t)15;
	if (!a->first)
		a->blocks = a->first = block_new(a->block_size);
	struct block *b = a->blocks;
	if (b->size - b->used < n) {
		if (n > a->block_size / 4) {
			/* Big: own block, linked behind the current one. */
			struct block *big = block_new(n);
			big->used = n;
			big->next = b->next;
			b->next = big;
			return big->data;
		}
		b = block_new(a->block_size);
		b->next = a->blocks;
		a->blocks = b;
	}
	void *p = b->data + b->used;
	b->used += n;
	return p;
}

void *arena_zalloc(arena_t *a, size_t n)
{
	void *p = arena_alloc(a, n);
	memset(p, 0, n);
	return p;
}

char *arena_strndup(arena_t *a, const char *s, size_t n)
{
	char *p = arena_alloc(a, n + 1);
	if (n)
		memcpy(p, s, n);
	p[n] = '\0';
	return p;
}

char *arena_svdup(arena_t *a, sv_t s) { return arena_strndup(a, s.ptr, s.len); }

char *arena_printf(arena_t *a, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	int n = vsnprintf(NULL, 0, fmt, ap);
	va_end(ap);
	char *p = arena_alloc(a, (size_t)(n < 0 ? 0 : n) + 1);
	va_start(ap, fmt);
	vsnprintf(p, (size_t)n + 1, fmt, ap);
	va_end(ap);
	return p;
}

void *arena_cleanup_add(arena_t *a, arena_cleanup_fn fn, void *arg)
{
	struct cleanup *c = arena_alloc(a, sizeof(*c));
	c->fn = fn;
	c->arg = arg;
	c->next = a->cleanups;
	a->cleanups = c;
	return c;
}

void arena_cleanup_cancel(void *handle)
{
	struct cleanup *c = handle;
	if (c)
		c->fn = NULL;
}
