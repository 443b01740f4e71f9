/* stubs.c - temporary: operations not written yet answer 501. */
#include "aisd/status.h"
#include "s3_int.h"
#include "aisd/banned.h"





int s3_delete_objects(s3_req_t *r) { s3_error(r, "NotImplemented", "delete"); return AIS_OK; }

