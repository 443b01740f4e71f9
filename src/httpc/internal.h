/*
 * internal.h - what the files of src/httpc share. Not for use outside it.
 */
#ifndef AISD_HTTPC_INTERNAL_H
#define AISD_HTTPC_INTERNAL_H

#include <stdbool.h>
#include <curl/curl.h>
#include <openssl/ssl.h>

/* curl_global_init, once per process (thread-safe). */
void httpc_global_init(void);
/* The options every handle gets: no signals, TCP_NODELAY, keepalive,
 * http(s) only, no redirects, the "Expect:" suppression list is the
 * caller's. */
void httpc_easy_common(CURL *e, const char *user_agent);
/* The line "Ais-Hlc: N" with this node's hybrid logical clock (hlc.h), which
 * every intra-cluster request carries (httpc_intra_auth, xsync.c). */
void httpc_hlc_line(char *out, size_t outsz);
/* Adds (or, on a retry, replaces) the Ais-Hlc line and the signature of a
 * call with body (NULL: streamed or none) to hl: the registered signer's
 * line (httpc_set_signer), nothing when none signs. */
struct curl_slist *httpc_intra_auth(struct curl_slist *hl, const char *method, const char *url, const void *body,
				    size_t len);
/* A client TLS session on the connected socket fd (the handshake not yet
 * run) with the one client context of https peers (xp.c): the settings of
 * httpc_tls_set (CA bundle, client certificate for mTLS), host's name
 * verified. NULL (errno EPROTO) when that context could not be made (the
 * log says why). */
SSL *httpc_tls_client(int fd, const char *host);
/* This thread's libcurl handle for a blocking transfer (reset; a new one
 * when it is in use already), and back after the transfer (sync.c). */
CURL *httpc_easy_take(void);
void httpc_easy_keep(CURL *e);
/* True for methods that may be sent twice. */
int httpc_idempotent(const char *method);
/* True for methods that always carry a body. */
int httpc_body_method(const char *method);
/* True once httpc_stream_abort was called: the node is stopping, and
 * every blocking transfer fails at its next wait (xsync.c). */
bool httpc_stopping(void);

#endif
