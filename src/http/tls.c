/*
 * tls.c - HTTPS for the server: the listener's SSL_CTX (certificate, key,
 * optional client-certificate verification), its reload, and the
 * connection's reads and writes through OpenSSL.
 *
 * Guarantees:
 *  1. A plain-HTTP server never reaches this file: every call site tests
 *     c->ssl first, so TLS off costs one branch per read or write.
 *  2. The handshake is not a state of its own: the first SSL_read of
 *     CS_HEAD performs it, and a read that needs to write (or a write that
 *     needs to read) leaves c->tls_want set so that wait_for() waits for the
 *     direction OpenSSL asked for. Data OpenSSL already decrypted but the
 *     connection did not take yet (SSL_has_pending) makes wait_for() wake
 *     the connection at once instead of waiting for the socket.
 *  3. Reload (SIGHUP) builds a whole new SSL_CTX from the files; only if
 *     that succeeds does it replace the current one. New connections take
 *     the new context; open ones keep a reference to the one they started
 *     with (SSL_new holds it), so nothing is dropped. A failed reload keeps
 *     the old certificate and says why.
 *  4. A client speaking plain HTTP to the TLS port gets a plain
 *     "400 ... use https://" answer and a close, not a hang or a reset.
 *  5. With kTLS (the kernel's "tls" ULP and net.tls.ktls on) OpenSSL hands
 *     record encryption to the kernel after the handshake and file bodies
 *     go out with SSL_sendfile (no copy to user space); otherwise they are
 *     pread into the connection's output buffer and SSL_write'n.
 */
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <openssl/err.h>
#include <openssl/ssl.h>

#include "internal.h"
#include "aisd/log.h"
#include "aisd/status.h"
#include "aisd/util.h"
#include "aisd/banned.h"

struct http_tls {
	pthread_mutex_t mu;
	SSL_CTX *ctx; /* current: new connections use it (under mu) */
	char *cert, *key, *client_ca;
	bool ktls;
};

/* Appends OpenSSL's queued errors to err (or "unknown error"). */
static void ssl_errors(buf_t *err)
{
	unsigned long e;
	bool any = false;
	while ((e = ERR_get_error()) != 0) {
		char line[256];
		ERR_error_string_n(e, line, sizeof(line));
		buf_addf(err, "%s%s", any ? "; " : "", line);
		any = true;
	}
	if (!any)
		buf_addstr(err, "unknown error");
}

static SSL_CTX *ctx_build(const struct http_tls *t, buf_t *err)
{
	SSL_CTX *ctx = SSL_CTX_new(TLS_server_method());
	if (!ctx) {
		buf_addstr(err, "SSL_CTX_new: ");
		ssl_errors(err);
		return NULL;
	}
	SSL_CTX_set_min_proto_version(ctx, TLS1_2_VERSION);
	uint64_t opts = SSL_OP_IGNORE_UNEXPECTED_EOF | SSL_OP_NO_RENEGOTIATION | SSL_OP_CIPHER_SERVER_PREFERENCE;
	if (t->ktls)
		opts |= SSL_OP_ENABLE_KTLS;
	SSL_CTX_set_options(ctx, opts);
	/* Partial writes, retries from a moved buffer (c->out may grow between
	 * a WANT_WRITE and its retry), and no idle read/write buffers. */
	SSL_CTX_set_mode(ctx, SSL_MODE_ENABLE_PARTIAL_WRITE | SSL_MODE_ACCEPT_MOVING_WRITE_BUFFER |
				      SSL_MODE_RELEASE_BUFFERS);
	static const unsigned char sid[] = "aisd";
	SSL_CTX_set_session_id_context(ctx, sid, sizeof(sid) - 1);
	if (SSL_CTX_use_certificate_chain_file(ctx, t->cert) != 1) {
		buf_addf(err, "net.tls.cert %s: ", t->cert);
		goto fail;
	}
	if (SSL_CTX_use_PrivateKey_file(ctx, t->key, SSL_FILETYPE_PEM) != 1) {
		buf_addf(err, "net.tls.key %s: ", t->key);
		goto fail;
	}
	if (SSL_CTX_check_private_key(ctx) != 1) {
		buf_addstr(err, "net.tls.key does not match net.tls.cert: ");
		goto fail;
	}
	if (t->client_ca) {
		STACK_OF(X509_NAME) *names = SSL_load_client_CA_file(t->client_ca);
		if (!names || SSL_CTX_load_verify_locations(ctx, t->client_ca, NULL) != 1) {
			if (names)
				sk_X509_NAME_pop_free(names, X509_NAME_free);
			buf_addf(err, "net.tls.client_ca %s: ", t->client_ca);
			goto fail;
		}
		SSL_CTX_set_client_CA_list(ctx, names);
		SSL_CTX_set_verify(ctx, SSL_VERIFY_PEER | SSL_VERIFY_FAIL_IF_NO_PEER_CERT, NULL);
	}
	return ctx;
fail:
	ssl_errors(err);
	SSL_CTX_free(ctx);
	return NULL;
}

/* Whether the kernel offers the "tls" upper-layer protocol (kTLS). */
static bool kernel_has_ktls(void)
{
	char b[256];
	int fd = open("/proc/sys/net/ipv4/tcp_available_ulp", O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return false;
	ssize_t n = read(fd, b, sizeof(b) - 1);
	close(fd);
	if (n <= 0)
		return false;
	b[n] = '\0';
	for (char *p = b; (p = strstr(p, "tls")) != NULL; p += 3)
		if ((p == b || p[-1] == ' ') && (p[3] == ' ' || p[3] == '\n' || p[3] == '\0'))
			return true;
	return false;
}

http_tls_t *http_tls_new(const char *cert, const char *key, const char *client_ca, bool ktls, buf_t *err)
{
	http_tls_t *t = xcalloc(1, sizeof(*t));
	pthread_mutex_init(&t->mu, NULL);
	t->cert = xstrdup(cert);
	t->key = xstrdup(key);
	t->client_ca = client_ca && *client_ca ? xstrdup(client_ca) : NULL;
	t->ktls = ktls;
	t->ctx = ctx_build(t, err);
	if (!t->ctx) {
		http_tls_free(t);
		return NULL;
	}
	if (ktls)
		log_info("TLS: kTLS %s", kernel_has_ktls() ? "offered by the kernel: file bodies use SSL_sendfile"
							  : "not offered by the kernel (no \"tls\" in "
							    "tcp_available_ulp; modprobe tls): user-space encryption");
	return t;
}

int http_tls_reload(http_tls_t *t, buf_t *err)
{
	SSL_CTX *ctx = ctx_build(t, err);
	if (!ctx)
		return AIS_ERR;
	pthread_mutex_lock(&t->mu);
	SSL_CTX *old = t->ctx;
	t->ctx = ctx;
	pthread_mutex_unlock(&t->mu);
	SSL_CTX_free(old); /* open connections hold their own references */
	return AIS_OK;
}

void http_tls_free(http_tls_t *t)
{
	if (!t)
		return;
	SSL_CTX_free(t->ctx);
	pthread_mutex_destroy(&t->mu);
	free(t->cert);
	free(t->key);
	free(t->client_ca);
	free(t);
}

bool http_tls_ktls_offered(void) { return kernel_has_ktls(); }

int tls_conn_start(http_conn_t *c, http_tls_t *t)
{
	pthread_mutex_lock(&t->mu);
	SSL *ssl = SSL_new(t->ctx);
	pthread_mutex_unlock(&t->mu);
	if (!ssl || SSL_set_fd(ssl, c->fd) != 1) {
		SSL_free(ssl);
		ERR_clear_error();
		return AIS_ERR;
	}
	SSL_set_accept_state(ssl);
	c->ssl = ssl;
	return AIS_OK;
}

/* A plain-HTTP request reached the TLS port: answer it in plain text. */
static void plain_refusal(http_conn_t *c)
{
#define PLAIN_BODY "{\"message\":\"plain HTTP request sent to an HTTPS port: use https://\",\"status\":400}"
	static const char msg[] = "HTTP/1.1 400 Bad Request\r\nContent-Type: application/json\r\n"
				  "Connection: close\r\nContent-Length: 81\r\n\r\n" PLAIN_BODY;
	_Static_assert(sizeof(PLAIN_BODY) - 1 == 81, "plain refusal body length");
	ssize_t n = send(c->fd, msg, sizeof(msg) - 1, MSG_NOSIGNAL);
	(void)n;
}

/* The outcome of a failed SSL call, errno-style (see internal.h). */
static ssize_t ssl_fail(http_conn_t *c, int r, const char *what)
{
	int e = SSL_get_error(c->ssl, r);
	switch (e) {
	case SSL_ERROR_WANT_READ:
		c->tls_want = EV_READ;
		errno = EAGAIN;
		return -1;
	case SSL_ERROR_WANT_WRITE:
		c->tls_want = EV_WRITE;
		errno = EAGAIN;
		return -1;
	case SSL_ERROR_ZERO_RETURN:
		c->tls_dead = true; /* close_notify received */
		return 0;
	case SSL_ERROR_SYSCALL:
		c->tls_dead = true;
		if (errno == 0)
			errno = ECONNRESET;
		ERR_clear_error();
		return -1;
	default: {
		unsigned long err = ERR_peek_error();
		c->tls_dead = true;
		if (ERR_GET_LIB(err) == ERR_LIB_SSL && ERR_GET_REASON(err) == SSL_R_HTTP_REQUEST) {
			plain_refusal(c);
			c->tls_plain = true;
			log_debug("TLS: plain HTTP from %s refused", c->peer);
		} else if (log_get_level() <= LOG_INFO) {
			buf_t m = BUF_INIT;
			ssl_errors(&m);
			log_info("TLS %s with %s failed: %s", SSL_is_init_finished(c->ssl) ? what : "handshake",
				 c->peer, m.ptr);
			buf_free(&m);
		}
		ERR_clear_error();
		errno = EPROTO;
		return -1;
	}
	}
}

ssize_t tls_read(http_conn_t *c, void *p, size_t n)
{
	c->tls_want = 0;
	if (c->tls_dead) {
		errno = EPROTO;
		return -1;
	}
	int r = SSL_read(c->ssl, p, (int)MIN(n, (size_t)INT32_MAX));
	if (r > 0)
		return r;
	return ssl_fail(c, r, "read");
}

ssize_t tls_write(http_conn_t *c, const void *p, size_t n)
{
	c->tls_want = 0;
	if (c->tls_dead) {
		errno = EPIPE;
		return -1;
	}
	if (n == 0)
		return 0;
	int r = SSL_write(c->ssl, p, (int)MIN(n, (size_t)INT32_MAX));
	if (r > 0)
		return r;
	return ssl_fail(c, r, "write");
}

bool tls_ktls_send(http_conn_t *c) { return BIO_get_ktls_send(SSL_get_wbio(c->ssl)) != 0; }

ssize_t tls_sendfile(http_conn_t *c, int fd, off_t off, size_t n)
{
	c->tls_want = 0;
	if (c->tls_dead) {
		errno = EPIPE;
		return -1;
	}
	ossl_ssize_t r = SSL_sendfile(c->ssl, fd, off, n, 0);
	if (r > 0)
		return (ssize_t)r;
	if (r == 0) {
		errno = EIO;
		return -1;
	}
	if (errno == EAGAIN) {
		c->tls_want = EV_WRITE;
		ERR_clear_error();
		return -1;
	}
	return ssl_fail(c, (int)r, "sendfile");
}

void tls_conn_end(http_conn_t *c)
{
	if (!c->ssl)
		return;
	/* close_notify, best effort and never waiting: the socket closes next */
	if (!c->tls_dead && SSL_is_init_finished(c->ssl))
		SSL_shutdown(c->ssl);
	ERR_clear_error();
	SSL_free(c->ssl);
	c->ssl = NULL;
}
