/*
 * status.c - the errno -> client answer map of status.h: one table, used by
 * the target's native API (tgt_resp_errno, ol_open_failed), the gateway's
 * bucket answers, the node actions, S3 (s3_error_errno, s3_error_read) and
 * the remote backends' errors, so that the same failure gets the same
 * status whichever API the client speaks.
 */
#include <errno.h>
#include <stddef.h>
#include <string.h>

#include "aisd/status.h"
#include "aisd/banned.h"

static const struct {
	int err;
	ais_errno_t e;
} map[] = {
	{ENOENT, {404, "NoSuchKey", " does not exist", false}},
	{EEXIST, {409, "BucketAlreadyExists", " already exists", false}},
	{EBUSY, {409, "OperationAborted", ": busy, try again later", false}},
	{EBADMSG, {400, "BadDigest", ": checksum mismatch, nothing stored", false}},
	{EINVAL, {400, "InvalidRequest", ": invalid request", false}},
	{ENOSPC, {507, "InsufficientStorage", ": insufficient storage", false}},
	{ENOTEMPTY, {409, "BucketNotEmpty", " is not empty", false}},
	{EAGAIN, {503, "ServiceUnavailable", ": not now, try again", false}},
	{EPERM, {503, "ServiceUnavailable", ": refused by this node", false}},
	{EACCES, {403, "AccessDenied", ": locked (S3 object lock: a retention period or a legal hold)", false}},
	{EHOSTDOWN, {503, "ServiceUnavailable", ": a target that may hold a copy could not be reached", false}},
	{EHOSTUNREACH, {503, "ServiceUnavailable", ": the remote backend could not be reached", true}},
	{ETIMEDOUT, {504, "GatewayTimeout", ": the remote backend did not answer in time", true}},
	{EREMOTEIO, {502, "BadGateway", ": the remote backend failed", true}},
	{ESTALE, {502, "BadGateway", ": the remote object changed while it was read", true}},
	{EKEYREJECTED, {403, "AccessDenied", ": the remote backend refused the credentials", true}},
};

static const ais_errno_t other = {500, "InternalError", NULL, false};

static const ais_errno_t damaged = {500, "InternalError", " is damaged: its data does not match its checksum", false};
static const ais_errno_t no_copy = {502, "BadGateway", ": no good copy could be fetched", false};

const ais_errno_t *ais_errno_read(int err, bool with_msg)
{
	if (err == EBADMSG)
		return &damaged;
	if (err == EIO && with_msg)
		return &no_copy;
	return ais_errno(err);
}

const ais_errno_t *ais_errno(int err)
{
	for (size_t i = 0; i < sizeof(map) / sizeof(map[0]); i++)
		if (map[i].err == err)
			return &map[i].e;
	return &other;
}

int ais_errno_of_remote(int status)
{
	for (size_t i = 0; i < sizeof(map) / sizeof(map[0]); i++)
		if (map[i].e.remote && map[i].e.status == status)
			return map[i].err;
	return 0;
}

void ais_errno_msg(buf_t *out, const ais_errno_t *e, int err, const char *what, const char *msg)
{
	buf_addstr(out, what);
	if (e->phrase)
		buf_addstr(out, e->phrase);
	else
		buf_addf(out, ": %s", strerror(err));
	if (msg && *msg)
		buf_addf(out, ": %s", msg);
}
