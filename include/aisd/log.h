/*
 * log.h - leveled logging, one line per event.
 *
 * A line reads: "2026-12-02T11:38:29.123Z W t1[42] req=ID <action>: message".
 * log_set_action() sets, per thread, what is being done, so every line says
 * what was going on (nginx's log->action); log_set_request() the id of the
 * request being served (the HTTP server sets it around every handler call
 * and every offloaded task). fatal() logs and exits(1).
 * log_error_count() lets tests fail on any error line.
 *
 * The access log has lines with the letter A in place of the level:
 *   TIME A node[tid] req=ID CLIENT "METHOD TARGET" STATUS IN OUT MICROSECONDS
 * (IN: request body bytes, OUT: response bytes with the head), written to
 * the main log or to a file of its own.
 */
#ifndef AISD_LOG_H
#define AISD_LOG_H

#include <stdarg.h>
#include <stdbool.h>

enum log_level { LOG_DEBUG = 0, LOG_INFO, LOG_WARN, LOG_ERROR };

void log_init(const char *node_id, enum log_level level, const char *path);
void log_set_level(enum log_level level);
int log_parse_level(const char *s, enum log_level *out);
enum log_level log_get_level(void);
/* Reopens the log file (after rotation, on SIGHUP). */
void log_reopen(void);
void log_set_action(const char *action);
void log_set_request(const char *id);
/* The id log_set_request set on this thread (NULL: none): what the node's
 * own calls made for that request carry on (httpc). */
const char *log_request(void);
/* The header that carries a request's id, to clients and between nodes. */
#define LOG_REQID_HDR "X-Request-Id"
/* Access log: on or off, and where ("" the main log, "-" standard error,
 * else a file, reopened by log_reopen). Returns AIS_ERR if the file cannot
 * be opened. log_access_set switches it at run time. */
int log_access_init(bool on, const char *path);
void log_access_set(bool on);
bool log_access_on(void);
void log_access(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
unsigned long log_warn_count(void);
/* Number of error-level lines logged so far (tests assert it stays 0). */
unsigned long log_error_count(void);

void log_msg(enum log_level level, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
void log_vmsg(enum log_level level, const char *fmt, va_list ap);
/* Like log_msg at LOG_ERROR/LOG_WARN, appending ": strerror(errno)". */
void log_warn(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
void log_err(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
void fatal(const char *fmt, ...) __attribute__((format(printf, 1, 2), noreturn));
void fatalx(const char *fmt, ...) __attribute__((format(printf, 1, 2), noreturn));

#define log_debug(...) do { if (log_get_level() <= LOG_DEBUG) log_msg(LOG_DEBUG, __VA_ARGS__); } while (0)
#define log_info(...) log_msg(LOG_INFO, __VA_ARGS__)
#define log_warnx(...) log_msg(LOG_WARN, __VA_ARGS__)
#define log_errx(...) log_msg(LOG_ERROR, __VA_ARGS__)

#endif
