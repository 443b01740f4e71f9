/*
 * owncfg.c - a bucket's ownership controls (PutBucketOwnershipControls'
 * OwnershipControls document): the pure parser and the one-line XML
 * writer. What is served with them and what they change: ownop.c.
 *
 * Guarantees: a document that parses has exactly one Rule with exactly
 * one ObjectOwnership, ObjectWriter, BucketOwnerPreferred or
 * BucketOwnerEnforced, and nothing S3's schema does not have; what
 * s3_owncfg_xml writes parses back to the same value.
 */
#include <string.h>

#include "aisd/status.h"
#include "aisd/util.h"
#include "s3api.h"
#include "aisd/banned.h"

#define ROOT "OwnershipControls"
#define RULE ROOT "/Rule"

struct oc_st {
	s3acl_own_t own;
	unsigned rules, owns;
	bool root;
	const char *why;
};

static int oc_cb(void *arg, const char *path, const char *text, size_t len)
{
	struct oc_st *c = arg;
	sv_t t = sv_trim((sv_t){text, len});
	if (!strcmp(path, ROOT)) {
		c->root = true;
	} else if (!strcmp(path, RULE)) {
		if (++c->rules > 1) {
			c->why = "OwnershipControls takes exactly one Rule";
			return AIS_ERR;
		}
	} else if (!strcmp(path, RULE "/ObjectOwnership")) {
		c->own = s3acl_own_parse(t.ptr, t.len);
		if (++c->owns > 1 || c->own == S3ACL_OWN_NONE) {
			c->why = "ObjectOwnership is one of ObjectWriter, BucketOwnerPreferred, BucketOwnerEnforced";
			return AIS_ERR;
		}
	} else {
		return AIS_ERR; /* an element S3's schema does not have */
	}
	return AIS_OK;
}

int s3_owncfg_parse(const char *p, size_t n, s3acl_own_t *out, const char **why)
{
	struct oc_st c = {.own = S3ACL_OWN_NONE};
	*out = S3ACL_OWN_NONE;
	*why = NULL;
	if (n > 4096) {
		*why = "The ownership controls are larger than 4 KB";
		return AIS_ERR;
	}
	if (s3_xml_parse(p, n, oc_cb, &c) != AIS_OK || !c.root || c.rules != 1 || c.owns != 1) {
		*why = c.why;
		return AIS_ERR;
	}
	*out = c.own;
	return AIS_OK;
}

void s3_owncfg_xml(s3acl_own_t own, buf_t *b)
{
	buf_addstr(b, "<" ROOT " xmlns=\"http://s3.amazonaws.com/doc/2006-03-01/\">");
	s3_xml_open(b, "Rule");
	s3_xml_elemstr(b, "ObjectOwnership", s3acl_own_name(own));
	s3_xml_close(b, "Rule");
	s3_xml_close(b, ROOT);
}
