/* stubs.c - temporary: operations not written yet answer 501. */
#include "aisd/status.h"
#include "s3_int.h"
#include "aisd/banned.h"

int s3_multipart(s3_req_t *r, sv_t upload_id) { s3_error(r, "NotImplemented", "multipart"); return AIS_OK; }
int s3_mpu_create(s3_req_t *r) { s3_error(r, "NotImplemented", "multipart"); return AIS_OK; }
int s3_mpu_list_uploads(s3_req_t *r) { s3_error(r, "NotImplemented", "multipart"); return AIS_OK; }
int s3_copy_object(s3_req_t *r, sv_t src) { s3_error(r, "NotImplemented", "copy"); return AIS_OK; }
int s3_delete_objects(s3_req_t *r) { s3_error(r, "NotImplemented", "delete"); return AIS_OK; }
int s3_mpu_gc(const struct conf *c) { return 0; }
