/*
 * grow.h - a file that one thread fills from byte 0 while responses stream
 * what has landed: a cold read of a remote object (olremote.c) and a read
 * of an object kept as erasure-coded slices only (ecread.c) are sent to their
 * clients as their bytes arrive.
 *
 * Guarantees:
 *  1. A response sends only bytes below have, which the filler raises only
 *     after they are in the file; it sleeps (no busy loop) on an eventfd
 *     its filler pokes, at least every GROW_WAKE bytes and at the end.
 *  2. A fill that ends with an error cuts the responses that have not all
 *     their bytes: the client sees fewer bytes than Content-Length, never
 *     wrong ones.
 *  3. A response holds its owner (release is called once it ended), so
 *     the file outlives every response that reads it.
 */
#ifndef AISD_GROW_H
#define AISD_GROW_H

#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>

#include "aisd/buf.h"
#include "aisd/http.h"

typedef struct grow {
	int fd;                 /* the file (responses dup it); -1 none yet */
	_Atomic uint64_t have;  /* bytes in place from 0 */
	pthread_mutex_t mu;
	pthread_cond_t cv;
	bool done;              /* under mu: no more bytes come */
	int err;                /* under mu, once done: 0, or why it stopped */
	buf_t msg;              /* under mu, once done: what went wrong */
	struct grow_reader *readers; /* under mu */
} grow_t;

void grow_init(grow_t *g);
/* Closes fd and frees msg: no response left. */
void grow_destroy(grow_t *g);
/* The filler: the bytes in place are now at least have; wakes the
 * responses waiting. */
void grow_moved(grow_t *g, uint64_t have);
/* The filler: n more bytes in place. */
void grow_add(grow_t *g, uint64_t n);
/* The filler: no more bytes (err 0, or an errno with msg); wakes everyone. */
void grow_end(grow_t *g, int err, const char *msg);
/* Blocks until the end: AIS_OK, or AIS_ERR with errno = err and msg. */
int grow_wait(grow_t *g, buf_t *msg);
/* Loop: answers req with the bytes [start, start+len) of g's file as they
 * land (Content-Length len). release(arg) once the response ended; what
 * names the object in the log line of a response cut short. */
void grow_send(http_req_t *req, grow_t *g, uint64_t start, uint64_t len, void (*release)(void *), void *arg,
	       const char *what);

#endif
