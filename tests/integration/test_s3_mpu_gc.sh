#!/usr/bin/env bash
# test_s3_mpu_gc.sh - s3.mpu_max_age: an S3 multipart upload left neither
# completed nor aborted is removed once older than the limit (here 20 s, at
# the target's start), while a younger one stays and can be completed.
#  1. upload A is created and given a part; 21 s later upload B is created
#     and given a part; the target restarts at once.
#  2. A is gone: its directory under mp1/s3mpu/, ListMultipartUploads no
#     longer names it, UploadPart to it is 404 NoSuchUpload, and the log
#     says one upload was removed.
#  3. B stays: listed, and CompleteMultipartUpload makes the object.
# aisd-args: --set s3.auth=off --set s3.mpu_max_age=20s
# timeout: 120
set -u
source "$(dirname "$0")/lib.sh"

upload_id() { sed -n 's:.*<UploadId>\([^<]*\)</UploadId>.*:\1:p' "$R_BODY" | head -1; }
head -c 5000 /dev/urandom >"$TMPDIR/part"

req PUT /s3/mpugc
check_eq "CreateBucket mpugc" "$R_CODE" 200
req POST "/s3/mpugc/old?uploads"
A=$(upload_id)
check "CreateMultipartUpload A: an upload id" test -n "$A"
req PUT "/s3/mpugc/old?partNumber=1&uploadId=$A" -T "$TMPDIR/part"
check_eq "UploadPart A/1" "$R_CODE" 200
check "A has its directory" test -d "$AISD_DIR/mp1/s3mpu/$A"
sleep 21 # A must be older than s3.mpu_max_age: time has to pass
req POST "/s3/mpugc/young?uploads"
B=$(upload_id)
check "CreateMultipartUpload B: an upload id" test -n "$B"
req PUT "/s3/mpugc/young?partNumber=1&uploadId=$B" -T "$TMPDIR/part"
check_eq "UploadPart B/1" "$R_CODE" 200
etag=$(hdr ETag)

check "the target restarts" restart_target
check "the log says one upload was removed" grep -q "removed 1 multipart upload(s) older than 20 s" "$AISD_DIR/aisd.log"
check "A's directory is gone" test ! -e "$AISD_DIR/mp1/s3mpu/$A"
check "B's directory stays" test -d "$AISD_DIR/mp1/s3mpu/$B"
req GET "/s3/mpugc?uploads"
check "ListMultipartUploads: B, not A" bash -c 'grep -q "$1" "$3" && ! grep -q "$2" "$3"' _ "$B" "$A" "$R_BODY"
req PUT "/s3/mpugc/old?partNumber=2&uploadId=$A" -T "$TMPDIR/part"
check "UploadPart to A: 404 NoSuchUpload" bash -c '[ "$1" = 404 ] && grep -q NoSuchUpload "$2"' _ "$R_CODE" "$R_BODY"
req POST "/s3/mpugc/young?uploadId=$B" -H 'Content-Type: application/xml' --data-binary \
	"<CompleteMultipartUpload><Part><PartNumber>1</PartNumber><ETag>$etag</ETag></Part></CompleteMultipartUpload>"
check_eq "CompleteMultipartUpload B" "$R_CODE" 200
req GET /s3/mpugc/young
check "B's object reads back" cmp -s "$R_BODY" "$TMPDIR/part"
finish
