/*
 * ssecfg.c - a bucket's default server-side encryption configuration
 * (PutBucketEncryption's ServerSideEncryptionConfiguration): the pure
 * parser and the canonical one-line XML writer. What is served with it:
 * ssecfgop.c.
 *
 * Guarantees: a configuration that parses has exactly one rule with a mode
 * (AES256 or aws:kms), a KMSMasterKeyID only with aws:kms, of 1 to
 * SSE_ID_MAX printable characters without XML specials; its canonical
 * form is one line of printable ASCII that parses back to the same.
 */
#include <stdio.h>
#include <string.h>

#include "aisd/sse.h"
#include "aisd/status.h"
#include "aisd/util.h"
#include "s3api.h"
#include "aisd/banned.h"

#define ROOT "ServerSideEncryptionConfiguration"
#define RULE ROOT "/Rule"
#define DEF RULE "/ApplyServerSideEncryptionByDefault"

struct sx_st {
	s3_ssecfg_t *out;
	unsigned rules;
	bool root, alg;
	const char *why;
};

static int sx_cb(void *arg, const char *path, const char *text, size_t len)
{
	struct sx_st *c = arg;
	sv_t t = sv_trim((sv_t){text, len});
	if (!strcmp(path, ROOT)) {
		c->root = true;
	} else if (!strcmp(path, RULE)) {
		if (++c->rules > 1) {
			c->why = "Only one encryption rule is supported";
			return AIS_ERR;
		}
	} else if (!strcmp(path, DEF)) {
		if (!c->alg)
			return AIS_ERR; /* MalformedXML: the algorithm is required */
	} else if (!strcmp(path, DEF "/SSEAlgorithm")) {
		if (sv_eqstr(t, "AES256"))
			c->out->mode = 'S';
		else if (sv_eqstr(t, "aws:kms"))
			c->out->mode = 'K';
		else {
			c->why = "The SSEAlgorithm is not valid (AES256 or aws:kms)";
			return AIS_ERR;
		}
		c->alg = true;
	} else if (!strcmp(path, DEF "/KMSMasterKeyID")) {
		if (!t.len || t.len > SSE_ID_MAX) {
			c->why = "The KMSMasterKeyID is not valid";
			return AIS_ERR;
		}
		for (size_t i = 0; i < t.len; i++)
			if (t.ptr[i] <= 0x20 || t.ptr[i] > 0x7e || t.ptr[i] == '<' || t.ptr[i] == '>' || t.ptr[i] == '&') {
				c->why = "The KMSMasterKeyID is not valid";
				return AIS_ERR;
			}
		memcpy(c->out->kid, t.ptr, t.len);
		c->out->kid[t.len] = '\0';
	} else if (!strcmp(path, RULE "/BucketKeyEnabled")) {
		if (sv_eqstr(t, "true"))
			c->out->bucket_key = true;
		else if (!sv_eqstr(t, "false"))
			return AIS_ERR;
	} else {
		return AIS_ERR; /* an element S3's schema does not have */
	}
	return AIS_OK;
}

int s3_ssecfg_parse(const char *p, size_t n, s3_ssecfg_t *out, const char **why)
{
	struct sx_st c = {.out = out};
	memset(out, 0, sizeof(*out));
	*why = NULL;
	if (n > 16384) {
		*why = "The encryption configuration is larger than 16 KB";
		return AIS_ERR;
	}
	if (s3_xml_parse(p, n, sx_cb, &c) != AIS_OK || !c.root || c.rules != 1 || !out->mode) {
		*why = c.why;
		memset(out, 0, sizeof(*out));
		return AIS_ERR;
	}
	if (out->mode == 'S' && out->kid[0]) {
		*why = "A KMSMasterKeyID is only valid with the aws:kms SSEAlgorithm";
		memset(out, 0, sizeof(*out));
		return AIS_ERR;
	}
	return AIS_OK;
}

void s3_ssecfg_xml(const s3_ssecfg_t *c, buf_t *b)
{
	/* no XML declaration: the canonical form is one line of printable ASCII */
	buf_addstr(b, "<" ROOT " xmlns=\"http://s3.amazonaws.com/doc/2006-03-01/\">");
	s3_xml_open(b, "Rule");
	s3_xml_open(b, "ApplyServerSideEncryptionByDefault");
	s3_xml_elemstr(b, "SSEAlgorithm", c->mode == 'S' ? "AES256" : "aws:kms");
	if (c->kid[0])
		s3_xml_elemstr(b, "KMSMasterKeyID", c->kid);
	s3_xml_close(b, "ApplyServerSideEncryptionByDefault");
	s3_xml_elemstr(b, "BucketKeyEnabled", c->bucket_key ? "true" : "false");
	s3_xml_close(b, "Rule");
	s3_xml_close(b, ROOT);
}

