#!/usr/bin/env bash
# test_roundtrip.sh - buckets and objects end to end with curl: create (and
# 409), PUT/GET/HEAD of 0 B .. 100 MiB compared byte for byte, chunked PUT
# from a pipe, Expect: 100-continue, versions, the checksums the server
# reports (xxhash, md5, sha256) against independently computed ones, client
# checksum verification, DELETE, bucket destroy, 404 JSON bodies.
set -u
source "$(dirname "$0")/lib.sh"

D=$TMPDIR/rt
mkdir -p "$D"
B=rt

create_bucket $B
check_eq "create bucket" "$R_CODE" 200
create_bucket $B
check_eq "second create of the same bucket: 409" "$R_CODE" 409
check "409 body is an error JSON" is_error_json 409
req HEAD /v1/buckets/$B
check_eq "HEAD bucket: 200" "$R_CODE" 200

# --- round trips of several sizes ------------------------------------------
head -c 0 /dev/urandom >"$D/s0"
head -c 1 /dev/urandom >"$D/s1"
head -c $((1 << 20)) /dev/urandom >"$D/s1m"
head -c $((100 << 20)) /dev/urandom >"$D/s100m"
for f in s0 s1 s1m s100m; do
	size=$(stat -c %s "$D/$f")
	req PUT "/v1/objects/$B/obj-$f" -T "$D/$f"
	check_eq "PUT $f ($size B)" "$R_CODE" 200
	req GET "/v1/objects/$B/obj-$f"
	check_eq "GET $f: 200" "$R_CODE" 200
	check "GET $f: body identical" cmp -s "$R_BODY" "$D/$f"
	check_eq "GET $f: Content-Length" "$(hdr Content-Length)" "$size"
	req HEAD "/v1/objects/$B/obj-$f"
	check_eq "HEAD $f: 200" "$R_CODE" 200
	check_eq "HEAD $f: Content-Length" "$(hdr Content-Length)" "$size"
	check_eq "HEAD $f: Ais-Checksum-Type" "$(hdr Ais-Checksum-Type)" xxhash
	check_eq "HEAD $f: Ais-Checksum-Value is the XXH64 of the data" "$(hdr Ais-Checksum-Value)" \
		"$(xxh64_file "$D/$f")"
	check_eq "HEAD $f: Ais-Version 1" "$(hdr Ais-Version)" 1
done

# --- chunked PUT from a pipe, Expect: 100-continue -------------------------
cat "$D/s1m" | curl -s -m 60 -T - -o /dev/null -D "$D/chunked.hdr" -w '%{http_code}' \
	-H 'Transfer-Encoding: chunked' "$AISD_URL/v1/objects/$B/chunked" >"$D/code"
check_eq "chunked PUT from a pipe" "$(cat "$D/code")" 200
req GET "/v1/objects/$B/chunked"
check "chunked PUT: GET identical" cmp -s "$R_BODY" "$D/s1m"
check_eq "chunked PUT: size" "$(hdr Content-Length)" $((1 << 20))

req PUT "/v1/objects/$B/expect" -H 'Expect: 100-continue' -T "$D/s1m"
check_eq "PUT with Expect: 100-continue" "$R_CODE" 200
check "server sent 100 Continue" grep -q '^HTTP/1.1 100' "$R_HDRS"
req GET "/v1/objects/$B/expect"
check "Expect PUT: GET identical" cmp -s "$R_BODY" "$D/s1m"

# --- overwrite bumps the version ------------------------------------------
req PUT "/v1/objects/$B/obj-s1" -T "$D/s1m"
check_eq "overwrite" "$R_CODE" 200
check_eq "overwrite: response Ais-Version 2" "$(hdr Ais-Version)" 2
req HEAD "/v1/objects/$B/obj-s1"
check_eq "overwrite: HEAD Ais-Version 2" "$(hdr Ais-Version)" 2
check_eq "overwrite: new size" "$(hdr Content-Length)" $((1 << 20))
req PUT "/v1/objects/$B/obj-s1" -T "$D/s1"
req GET "/v1/objects/$B/obj-s1"
check "second overwrite: GET identical" cmp -s "$R_BODY" "$D/s1"
check_eq "second overwrite: Ais-Version 3" "$(hdr Ais-Version)" 3

# --- md5 and sha256 buckets ------------------------------------------------
for ck in md5 sha256; do
	create_bucket "rt-$ck" $ck
	check_eq "create $ck bucket" "$R_CODE" 200
	for f in s0 s1m; do
		req PUT "/v1/objects/rt-$ck/$f" -T "$D/$f"
		check_eq "$ck bucket: PUT $f" "$R_CODE" 200
		req HEAD "/v1/objects/rt-$ck/$f"
		want=$(${ck}sum <"$D/$f" | cut -d' ' -f1)
		check_eq "$ck bucket: Ais-Checksum-Type" "$(hdr Ais-Checksum-Type)" $ck
		check_eq "$ck bucket: $f checksum equals ${ck}sum" "$(hdr Ais-Checksum-Value)" "$want"
		req GET "/v1/objects/rt-$ck/$f"
		check "$ck bucket: GET $f identical" cmp -s "$R_BODY" "$D/$f"
	done
done

# --- client checksums ------------------------------------------------------
head -c 4096 /dev/urandom >"$D/c1"
head -c 4096 /dev/urandom >"$D/c2"
md5_c1=$(md5sum <"$D/c1" | cut -d' ' -f1)
md5_c2=$(md5sum <"$D/c2" | cut -d' ' -f1)
req PUT /v1/objects/rt-md5/ck -T "$D/c1" -H 'Ais-Checksum-Type: md5' -H "Ais-Checksum-Value: $md5_c1"
check_eq "PUT with the right md5: 200" "$R_CODE" 200
up=$(echo "$md5_c1" | tr a-f A-F)
req PUT /v1/objects/rt-md5/ck-upper -T "$D/c1" -H 'Ais-Checksum-Type: md5' -H "Ais-Checksum-Value: $up"
check_eq "PUT with the right md5 in upper case: 200" "$R_CODE" 200
req PUT /v1/objects/rt-md5/ck -T "$D/c2" -H 'Ais-Checksum-Type: md5' -H "Ais-Checksum-Value: $md5_c1"
check_eq "overwrite with a wrong md5: 400" "$R_CODE" 400
check "wrong md5: error JSON" is_error_json 400
req GET /v1/objects/rt-md5/ck
check "wrong md5: the old object is unchanged" cmp -s "$R_BODY" "$D/c1"
check_eq "wrong md5: version unchanged" "$(hdr Ais-Version)" 1
req PUT /v1/objects/rt-md5/never -T "$D/c2" -H 'Ais-Checksum-Type: md5' -H "Ais-Checksum-Value: $md5_c1"
check_eq "new object with a wrong md5: 400" "$R_CODE" 400
req GET /v1/objects/rt-md5/never
check_eq "new object with a wrong md5: stays 404" "$R_CODE" 404
req PUT /v1/objects/rt-md5/ck -T "$D/c2" -H 'Ais-Checksum-Type: md5' -H "Ais-Checksum-Value: $md5_c2"
check_eq "overwrite with the right md5: 200" "$R_CODE" 200
check_eq "  and version 2" "$(hdr Ais-Version)" 2

xx_c1=$(xxh64_file "$D/c1")
req PUT /v1/objects/$B/ckx -T "$D/c1" -H 'Ais-Checksum-Type: xxhash' -H "Ais-Checksum-Value: $xx_c1"
check_eq "xxhash bucket: PUT with the right xxhash: 200" "$R_CODE" 200
req PUT /v1/objects/$B/ckx -T "$D/c2" -H 'Ais-Checksum-Type: xxhash' -H "Ais-Checksum-Value: $xx_c1"
check_eq "xxhash bucket: wrong xxhash: 400" "$R_CODE" 400
req GET /v1/objects/$B/ckx
check "xxhash bucket: wrong xxhash leaves the object unchanged" cmp -s "$R_BODY" "$D/c1"
# a client checksum of another type than the bucket's
req PUT /v1/objects/$B/ck-md5 -T "$D/c1" -H 'Ais-Checksum-Type: md5' -H "Ais-Checksum-Value: $md5_c1"
check_eq "xxhash bucket: PUT with the right md5: 200" "$R_CODE" 200
req PUT /v1/objects/$B/ck-md5-bad -T "$D/c1" -H 'Ais-Checksum-Type: md5' -H "Ais-Checksum-Value: $md5_c2"
check_eq "xxhash bucket: PUT with a wrong md5: 400" "$R_CODE" 400
req GET /v1/objects/$B/ck-md5-bad
check_eq "xxhash bucket: wrong md5 stores nothing" "$R_CODE" 404
sha_c1=$(sha256sum <"$D/c1" | cut -d' ' -f1)
req PUT /v1/objects/rt-md5/ck-sha -T "$D/c1" -H 'Ais-Checksum-Type: sha256' -H "Ais-Checksum-Value: $sha_c1"
check_eq "md5 bucket: PUT with the right sha256: 200" "$R_CODE" 200
req PUT /v1/objects/$B/ck-bogus -T "$D/c1" -H 'Ais-Checksum-Type: crc99' -H "Ais-Checksum-Value: 00"
check_eq "unknown checksum type: 400" "$R_CODE" 400
req PUT /v1/objects/$B/ck-noval -T "$D/c1" -H "Ais-Checksum-Value: $xx_c1"
check_eq "checksum value without type: 400" "$R_CODE" 400
check_eq "no temp files left after the failed PUTs" "$(tmp_files)" ""

# --- DELETE --------------------------------------------------------------
req DELETE "/v1/objects/$B/obj-s1m"
check_eq "DELETE: 200" "$R_CODE" 200
req GET "/v1/objects/$B/obj-s1m"
check_eq "GET after DELETE: 404" "$R_CODE" 404
check "  with an error JSON" is_error_json 404
req HEAD "/v1/objects/$B/obj-s1m"
check_eq "HEAD after DELETE: 404" "$R_CODE" 404
req DELETE "/v1/objects/$B/obj-s1m"
check_eq "DELETE of a missing object: 404" "$R_CODE" 404
req GET "/v1/objects/$B/obj-s100m"
check "other objects untouched by DELETE" cmp -s "$R_BODY" "$D/s100m"

# --- missing buckets -----------------------------------------------------
for m in GET PUT DELETE; do
	if [ $m = PUT ]; then
		req PUT /v1/objects/nosuch/x -T "$D/c1"
	else
		req $m /v1/objects/nosuch/x
	fi
	check_eq "$m object in a missing bucket: 404" "$R_CODE" 404
	check "  body has message and status" is_error_json 404
done
req GET /v1/buckets/nosuch
check_eq "list a missing bucket: 404" "$R_CODE" 404
check "  body has message and status" is_error_json 404
req HEAD /v1/buckets/nosuch
check_eq "HEAD a missing bucket: 404" "$R_CODE" 404
req DELETE /v1/buckets/nosuch
check_eq "destroy a missing bucket: 404" "$R_CODE" 404

# --- bucket list, destroy ---------------------------------------------------
req GET /v1/buckets/
check "bucket list names the three buckets" /usr/bin/python3 -c 'import json, sys
names = sorted(b["name"] for b in json.load(open(sys.argv[1])))
sys.exit(names != ["rt", "rt-md5", "rt-sha256"])' "$R_BODY"
req DELETE /v1/buckets/$B -H 'Content-Type: application/json' --data-binary '{"action":"destroy-bck"}'
check_eq "destroy bucket" "$R_CODE" 200
req GET /v1/buckets/$B
check_eq "list after destroy: 404" "$R_CODE" 404
req GET "/v1/objects/$B/obj-s100m"
check_eq "object after destroy: 404" "$R_CODE" 404
create_bucket $B
check_eq "re-create the destroyed bucket" "$R_CODE" 200
req GET "/v1/buckets/$B?props=name"
check_eq "re-created bucket lists" "$R_CODE" 200
check_eq "re-created bucket is empty" "$(tr -d ' \n' <"$R_BODY")" '{"entries":[],"continuation_token":""}'
req GET "/v1/objects/$B/obj-s1"
check_eq "re-created bucket does not resurrect objects" "$R_CODE" 404
req DELETE /v1/buckets/rt-md5
check_eq "destroy without a body" "$R_CODE" 200
req HEAD /v1/buckets/rt-md5
check_eq "HEAD after destroy: 404" "$R_CODE" 404

rm -rf "$D"
finish
