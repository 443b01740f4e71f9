// s3_jssdk.mjs - the AWS SDK for JavaScript v3 (@aws-sdk/client-s3 and
// @aws-sdk/lib-storage, from npm) against an aisd S3 endpoint. Run by
// test_s3_jssdk.py, which installs the packages and starts the cluster.
//
// What it checks, with the SDK's defaults of today (flexible checksums: a
// CRC32 on every PutObject/UploadPart, sent as an x-amz-checksum-crc32
// header for a sized body and as an aws-chunked trailer with
// STREAMING-UNSIGNED-PAYLOAD-TRAILER for a stream), and with each
// algorithm asked for explicitly (CRC32, CRC32C, SHA1, SHA256): bucket
// create/head/list/delete, objects of 0 B, 2 KiB, 5 MiB byte for byte,
// streams of unknown length, a lib-storage Upload of 12 MiB (multipart,
// parts with checksums), metadata round trip, ranges, ListObjectsV2 with a
// prefix, a delimiter and 1100 keys over pages, CopyObject, DeleteObject,
// DeleteObjects (its body checksum in place of Content-MD5), a checksum
// that does not match (BadDigest, nothing stored) and a wrong secret
// (SignatureDoesNotMatch).
//
// Environment: S3_ENDPOINT, S3_AK, S3_SK, S3_REGION, JSSDK_DIR (the folder
// whose node_modules holds the packages). Prints TAP-like "ok"/"not ok"
// lines; exits 0 when every check passed.
import { createHash } from "node:crypto";
import { createRequire } from "node:module";
import { Readable } from "node:stream";

const require = createRequire(process.env.JSSDK_DIR + "/package.json");
const s3sdk = require("@aws-sdk/client-s3");
const { Upload } = require("@aws-sdk/lib-storage");
const {
	S3Client, CreateBucketCommand, HeadBucketCommand, ListBucketsCommand, PutObjectCommand, GetObjectCommand,
	HeadObjectCommand, ListObjectsV2Command, CopyObjectCommand, DeleteObjectCommand, DeleteObjectsCommand,
	DeleteBucketCommand, GetBucketLocationCommand,
} = s3sdk;

const EP = process.env.S3_ENDPOINT, AK = process.env.S3_AK, SK = process.env.S3_SK;
const REGION = process.env.S3_REGION || "us-east-1";
const mk = (sk = SK, extra = {}) => new S3Client({
	endpoint: EP, region: REGION, forcePathStyle: true, maxAttempts: 1,
	credentials: { accessKeyId: AK, secretAccessKey: sk }, ...extra,
});
const s3 = mk();
// the last request's headers as sent (signed, framed): the modes the SDK chose
let sent = {};
s3.middlewareStack.add((next) => async (args) => {
	sent = { ...args.request.headers };
	return next(args);
}, { step: "deserialize", name: "recordHeaders" });

let failed = 0, n = 0;
function check(cond, what, info) {
	n++;
	if (cond) {
		console.log(`ok ${n} - ${what}`);
	} else {
		failed++;
		console.log(`not ok ${n} - ${what}`);
		if (info !== undefined)
			console.log("#   " + String(typeof info === "string" ? info : JSON.stringify(info)).slice(0, 600));
	}
}
const sha = (b) => createHash("sha256").update(b).digest("hex");
const md5 = (b) => createHash("md5").update(b).digest("hex");
async function bytes(body) {
	return Buffer.from(await body.transformToByteArray());
}
async function codeOf(p) {
	try {
		const r = await p;
		return [r.$metadata.httpStatusCode, null];
	} catch (e) {
		return [e.$metadata?.httpStatusCode, e.name || e.Code];
	}
}
function rnd(size) {
	const b = Buffer.alloc(size);
	for (let off = 0; off < size; off += 65536)
		createHash("sha256").update(String(off)).digest().copy(b, off);
	// cheap, not cryptographic: enough that every 64 KiB differs
	return b;
}
// A stream of unknown length (the SDK must frame it: aws-chunked + trailer).
function stream(buf, piece = 100000) {
	let off = 0;
	return new Readable({
		read() {
			if (off >= buf.length)
				return this.push(null);
			this.push(buf.subarray(off, off + piece));
			off += piece;
		},
	});
}

const B = "jssdk";
async function main() {
	let r = await s3.send(new CreateBucketCommand({ Bucket: B }));
	check(r.$metadata.httpStatusCode === 200, "CreateBucket");
	check((await codeOf(s3.send(new CreateBucketCommand({ Bucket: B }))))[0] === 200,
	      "CreateBucket again by its owner at us-east-1: 200 (as S3)");
	check((await codeOf(s3.send(new CreateBucketCommand({ Bucket: B, ACL: "public-read" }))))[1] ===
	      "BucketAlreadyExists", "CreateBucket again with another ACL: BucketAlreadyExists");
	r = await s3.send(new HeadBucketCommand({ Bucket: B }));
	check(r.$metadata.httpStatusCode === 200, "HeadBucket");
	r = await s3.send(new ListBucketsCommand({}));
	check(r.Buckets.some((b) => b.Name === B) && r.Owner?.ID, "ListBuckets lists it, with an Owner", r.Owner);
	r = await s3.send(new GetBucketLocationCommand({ Bucket: B }));
	check(!r.LocationConstraint, "GetBucketLocation: us-east-1 (empty)", r);

	// sized bodies with the default checksum (CRC32 header)
	const sizes = { zero: 0, two_k: 2048, five_m: 5 << 20 };
	const data = {};
	for (const [k, sz] of Object.entries(sizes)) {
		data[k] = rnd(sz);
		r = await s3.send(new PutObjectCommand({ Bucket: B, Key: "sizes/" + k, Body: data[k] }));
		check(r.ETag === `"${md5(data[k])}"`, `PutObject ${sz} B (default flexible checksum): ETag is the MD5`, r.ETag);
		check(sent["x-amz-checksum-crc32"] || sent["x-amz-trailer"] === "x-amz-checksum-crc32",
		      `  ... with a CRC32 (the SDK's default)`, sent);
		const g = await s3.send(new GetObjectCommand({ Bucket: B, Key: "sizes/" + k }));
		const got = await bytes(g.Body);
		check(sha(got) === sha(data[k]) && g.ContentLength === sz, `GetObject ${sz} B byte for byte`);
	}
	// every algorithm, sized and streamed (streamed: aws-chunked with the
	// checksum in a trailer, STREAMING-UNSIGNED-PAYLOAD-TRAILER)
	const payload = rnd(300000);
	for (const algo of ["CRC32", "CRC32C", "SHA1", "SHA256"]) {
		r = await s3.send(new PutObjectCommand({ Bucket: B, Key: "ck/" + algo, Body: payload, ChecksumAlgorithm: algo }));
		check(r.ETag === `"${md5(payload)}"`, `PutObject with ChecksumAlgorithm ${algo} (header)`, r);
		r = await s3.send(new PutObjectCommand({
			Bucket: B, Key: "ck/stream-" + algo, Body: stream(payload), ChecksumAlgorithm: algo,
			ContentLength: payload.length,
		}));
		check(r.ETag === `"${md5(payload)}"`, `PutObject of a stream with ${algo} (aws-chunked trailer)`, r);
		check(sent["x-amz-content-sha256"] === "STREAMING-UNSIGNED-PAYLOAD-TRAILER" &&
		      sent["x-amz-trailer"] === "x-amz-checksum-" + algo.toLowerCase(),
		      `  ... sent as STREAMING-UNSIGNED-PAYLOAD-TRAILER with x-amz-trailer`, sent);
		const g = await s3.send(new GetObjectCommand({ Bucket: B, Key: "ck/stream-" + algo }));
		check(sha(await bytes(g.Body)) === sha(payload), `the ${algo} stream reads back byte for byte`);
	}
	// a checksum that does not match: BadDigest, nothing stored
	const liar = mk(SK, {
		requestChecksumCalculation: "WHEN_REQUIRED",
	});
	liar.middlewareStack.add((next) => async (args) => {
		args.request.headers["x-amz-checksum-crc32"] = "AAAAAA==";
		return next(args);
	}, { step: "build", name: "badChecksum" });
	let c = await codeOf(liar.send(new PutObjectCommand({ Bucket: B, Key: "bad-ck", Body: payload })));
	check(c[0] === 400 && c[1] === "BadDigest", "a wrong x-amz-checksum-crc32: 400 BadDigest", c);
	c = await codeOf(s3.send(new HeadObjectCommand({ Bucket: B, Key: "bad-ck" })));
	check(c[0] === 404, "nothing stored after BadDigest", c);

	// metadata, ranges
	r = await s3.send(new PutObjectCommand({
		Bucket: B, Key: "meta obj+&%", Body: "hello world", ContentType: "text/x-js",
		Metadata: { color: "blue", n: "1" }, CacheControl: "max-age=9",
	}));
	const h = await s3.send(new HeadObjectCommand({ Bucket: B, Key: "meta obj+&%" }));
	check(h.ContentType === "text/x-js" && h.Metadata.color === "blue" && h.Metadata.n === "1" &&
	      h.CacheControl === "max-age=9" && h.ContentLength === 11, "metadata round trip (awkward key)", h);
	let g = await s3.send(new GetObjectCommand({ Bucket: B, Key: "meta obj+&%", Range: "bytes=6-" }));
	check((await bytes(g.Body)).toString() === "world" && g.ContentRange === "bytes 6-10/11", "Range bytes=6-");

	// multipart with lib-storage (parts carry their checksums)
	const big = rnd(12 << 20);
	const up = new Upload({
		client: s3, params: { Bucket: B, Key: "mp/big", Body: stream(big, 1 << 20) }, partSize: 5 << 20,
		queueSize: 2,
	});
	r = await up.done();
	check(/-3"$/.test(r.ETag), "lib-storage Upload of 12 MiB in 3 parts: ETag md5-of-md5s-3", r.ETag);
	g = await s3.send(new GetObjectCommand({ Bucket: B, Key: "mp/big" }));
	check(sha(await bytes(g.Body)) === sha(big), "the multipart object reads back byte for byte");
	const up2 = new Upload({
		client: s3, params: { Bucket: B, Key: "mp/sha", Body: big, ChecksumAlgorithm: "SHA256" }, partSize: 5 << 20,
	});
	r = await up2.done();
	check(/-3"$/.test(r.ETag), "lib-storage Upload with ChecksumAlgorithm SHA256", r.ETag);

	// listings
	const keys = [];
	for (let i = 0; i < 1100; i++)
		keys.push(`many/k${String(i).padStart(5, "0")}`);
	for (let i = 0; i < keys.length; i += 50)
		await Promise.all(keys.slice(i, i + 50).map((k) => s3.send(new PutObjectCommand({ Bucket: B, Key: k, Body: "" }))));
	let seen = [], token, pages = 0;
	do {
		r = await s3.send(new ListObjectsV2Command({ Bucket: B, Prefix: "many/", ContinuationToken: token }));
		seen = seen.concat((r.Contents || []).map((o) => o.Key));
		token = r.NextContinuationToken;
		pages++;
	} while (r.IsTruncated && pages < 10);
	check(seen.length === 1100 && pages === 2 && seen.join() === keys.join(), "ListObjectsV2: 1100 keys in 2 pages, in order",
	      [seen.length, pages]);
	r = await s3.send(new ListObjectsV2Command({ Bucket: B, Delimiter: "/" }));
	const cps = (r.CommonPrefixes || []).map((p) => p.Prefix).sort();
	check(JSON.stringify(cps) === JSON.stringify(["ck/", "many/", "mp/", "sizes/"]) &&
	      (r.Contents || []).map((o) => o.Key).join() === "meta obj+&%", "ListObjectsV2 with a delimiter", r);
	r = await s3.send(new ListObjectsV2Command({ Bucket: B, Prefix: "sizes/" }));
	check((r.Contents || []).length === 3, "ListObjectsV2 with a prefix", r.Contents);

	// copy, delete one and many
	r = await s3.send(new CopyObjectCommand({ Bucket: B, Key: "copy/of five", CopySource: `${B}/sizes/five_m` }));
	check(r.CopyObjectResult?.ETag === `"${md5(data.five_m)}"`, "CopyObject", r);
	g = await s3.send(new GetObjectCommand({ Bucket: B, Key: "copy/of five" }));
	check(sha(await bytes(g.Body)) === sha(data.five_m), "the copy reads back byte for byte");
	r = await s3.send(new DeleteObjectCommand({ Bucket: B, Key: "copy/of five" }));
	check(r.$metadata.httpStatusCode === 204, "DeleteObject: 204");
	const all = [];
	token = undefined;
	do {
		r = await s3.send(new ListObjectsV2Command({ Bucket: B, ContinuationToken: token }));
		all.push(...(r.Contents || []).map((o) => o.Key));
		token = r.NextContinuationToken;
	} while (r.IsTruncated && all.length < 5000);
	let deleted = 0, errors = 0;
	for (let i = 0; i < all.length; i += 1000) {
		r = await s3.send(new DeleteObjectsCommand({
			Bucket: B, Delete: { Objects: all.slice(i, i + 1000).map((Key) => ({ Key })) },
		}));
		deleted += (r.Deleted || []).length;
		errors += (r.Errors || []).length;
	}
	check(deleted === all.length && errors === 0, `DeleteObjects of ${all.length} keys (x-amz-checksum, no Content-MD5)`,
	      [deleted, errors]);
	r = await s3.send(new ListObjectsV2Command({ Bucket: B }));
	check(!r.Contents, "the bucket is empty");

	c = await codeOf(mk("wrong-secret").send(new ListObjectsV2Command({ Bucket: B })));
	check(c[0] === 403 && c[1] === "SignatureDoesNotMatch", "a wrong secret: 403 SignatureDoesNotMatch", c);
	c = await codeOf(s3.send(new GetObjectCommand({ Bucket: B, Key: "nope" })));
	check(c[0] === 404 && c[1] === "NoSuchKey", "GetObject of a missing key: NoSuchKey", c);
	r = await s3.send(new DeleteBucketCommand({ Bucket: B }));
	check(r.$metadata.httpStatusCode === 204, "DeleteBucket");
}

main().then(
	() => {
		console.log(`# ${n} checks, ${failed} failed`);
		process.exit(failed ? 1 : 0);
	},
	(e) => {
		console.log(`not ok ${n + 1} - unexpected error: ${e.name}: ${e.message}`);
		console.log("# " + String(e.stack).split("\n").slice(0, 6).join("\n# "));
		process.exit(1);
	},
);
