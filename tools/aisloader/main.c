/*
 * main.c - aisloader, the load generator for aisd and any plain-HTTP object
 * store (nginx with WebDAV PUT works too): it parses the options, runs the
 * optional prefill phase (PUT every object once, not measured), then the
 * measured phase, and prints a table of results (and, with --json, one JSON
 * line). The exit status is 0 only when no request failed.
 */
#include <getopt.h>
#include <curl/curl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "aisd/buf.h"
#include "aisd/status.h"
#include "aisd/util.h"
#include "loader.h"
#include "aisd/banned.h"

static const char usage_text[] =
	"usage: aisloader --url BASE [options]\n"
	"\n"
	"Load generator for HTTP object stores: aisd's native API or any server\n"
	"that GETs and PUTs plain URLs (object URL = BASE/NAME).\n"
	"\n"
	"  --url BASE        base URL, e.g. http://127.0.0.1:8080/v1/objects/bench\n"
	"  --op OP           get, put or mix (default get)\n"
	"  --put-pct N       with --op mix: percent of requests that are PUTs (default 50)\n"
	"  --size BYTES      object size for PUT (and expected size for --verify);\n"
	"                    K, M, G, T suffixes are powers of 1024 (default 1M)\n"
	"  --objects N       key space: objects obj-000000 .. obj-(N-1) (default 1000)\n"
	"  --name NAME       use the single object NAME instead of the key space\n"
	"  --workers N       concurrent transfers, each on its own connection (default 16)\n"
	"  --streams N       same as --workers\n"
	"  --threads N       event-loop threads sharing the workers (default 1)\n"
	"  --duration SECS   stop after SECS seconds (default 10 unless --count is given;\n"
	"                    0 means no time limit); transfers still in flight are\n"
	"                    abandoned, their bytes counted, and reported as aborted\n"
	"  --count N         stop after N requests (with --duration: whichever first)\n"
	"  --prefill         first PUT every object once (not measured)\n"
	"  --random          random keys (default)\n"
	"  --seq             sequential keys, wrapping around the key space\n"
	"  --seed N          seed of the key and op sequence (default 1)\n"
	"  --verify          check every GET body against the generated data\n"
	"  --keepalive       reuse connections (default)\n"
	"  --no-keepalive    a new connection for every request\n"
	"  --follow          follow redirects (default): a gateway's 307 to the owner\n"
	"                    target is followed (PUT bodies are re-sent), and the\n"
	"                    connections to the gateway and to every target stay open\n"
	"                    (one per worker and host)\n"
	"  --no-follow       do not follow redirects: a 3xx answer is an error\n"
	"  --redirects-only  do not follow redirects and count every 3xx answer as a\n"
	"                    success: measures a gateway's redirects per second alone\n"
	"  --s3 AK:SK        S3: sign every request with SigV4 (UNSIGNED-PAYLOAD) as\n"
	"                    this access key and secret; --url is then a bucket URL,\n"
	"                    e.g. http://127.0.0.1:8080/bench (object URL = BASE/NAME)\n"
	"  --s3-region R     the region signed for with --s3 (default us-east-1)\n"
	"  --cacert FILE     https: verify the server's certificate with this PEM CA\n"
	"  --cert FILE       https: present this PEM client certificate (mTLS)\n"
	"  --key FILE        https: the private key of --cert\n"
	"  --insecure        https: do not verify the server's certificate (tests only)\n"
	"  --json            print one JSON line of results on stdout (table to stderr)\n"
	"  -h, --help        this text\n"
	"\n"
	"Object data is a deterministic pattern of the object's name and offset, so\n"
	"--verify checks data written by any aisloader run. A transfer that moves no\n"
	"byte for 30 s fails. Exit status: 0 when no request failed, 1 otherwise,\n"
	"2 on bad usage. $AIS_AUTHN_TOKEN: a bearer token sent with every request\n"
	"(a cluster with auth.enabled; aisctl auth token create).\n";

static void usage(FILE *f, int status)
{
	fputs(usage_text, f);
	exit(status);
}

static void badarg(const char *opt, const char *val)
{
	fprintf(stderr, "aisloader: bad value for --%s: '%s'\n", opt, val);
	exit(2);
}

static uint64_t parse_u64(const char *opt, const char *s, uint64_t min, uint64_t max)
{
	uint64_t v;
	if (num_parse_u64(s, strlen(s), min, max, &v) != AIS_OK)
		badarg(opt, s);
	return v;
}

enum {
	OPT_URL = 256, OPT_OP, OPT_PUT_PCT, OPT_SIZE, OPT_OBJECTS, OPT_NAME, OPT_WORKERS,
	OPT_THREADS, OPT_DURATION, OPT_COUNT, OPT_PREFILL, OPT_RANDOM, OPT_SEQ, OPT_SEED,
	OPT_VERIFY, OPT_KEEPALIVE, OPT_NO_KEEPALIVE, OPT_JSON, OPT_FOLLOW, OPT_NO_FOLLOW,
	OPT_REDIRECTS_ONLY, OPT_S3, OPT_S3_REGION, OPT_CACERT, OPT_CERT, OPT_KEY, OPT_INSECURE,
};

static const struct option long_opts[] = {
	{"url", required_argument, NULL, OPT_URL},
	{"op", required_argument, NULL, OPT_OP},
	{"put-pct", required_argument, NULL, OPT_PUT_PCT},
	{"size", required_argument, NULL, OPT_SIZE},
	{"objects", required_argument, NULL, OPT_OBJECTS},
	{"name", required_argument, NULL, OPT_NAME},
	{"workers", required_argument, NULL, OPT_WORKERS},
	{"streams", required_argument, NULL, OPT_WORKERS},
	{"threads", required_argument, NULL, OPT_THREADS},
	{"duration", required_argument, NULL, OPT_DURATION},
	{"count", required_argument, NULL, OPT_COUNT},
	{"prefill", no_argument, NULL, OPT_PREFILL},
	{"random", no_argument, NULL, OPT_RANDOM},
	{"seq", no_argument, NULL, OPT_SEQ},
	{"seed", required_argument, NULL, OPT_SEED},
	{"verify", no_argument, NULL, OPT_VERIFY},
	{"keepalive", no_argument, NULL, OPT_KEEPALIVE},
	{"no-keepalive", no_argument, NULL, OPT_NO_KEEPALIVE},
	{"json", no_argument, NULL, OPT_JSON},
	{"follow", no_argument, NULL, OPT_FOLLOW},
	{"no-follow", no_argument, NULL, OPT_NO_FOLLOW},
	{"redirects-only", no_argument, NULL, OPT_REDIRECTS_ONLY},
	{"s3", required_argument, NULL, OPT_S3},
	{"s3-region", required_argument, NULL, OPT_S3_REGION},
	{"cacert", required_argument, NULL, OPT_CACERT},
	{"cert", required_argument, NULL, OPT_CERT},
	{"key", required_argument, NULL, OPT_KEY},
	{"insecure", no_argument, NULL, OPT_INSECURE},
	{"help", no_argument, NULL, 'h'},
	{NULL, 0, NULL, 0},
};

static const char *op_name(enum ldr_op op)
{
	return op == LDR_GET ? "get" : op == LDR_PUT ? "put" : "mix";
}

static double ms(uint64_t ns)
{
	return (double)ns / 1e6;
}

static void print_row(FILE *f, const char *label, const struct ldr_stats *st, double secs)
{
	double gib = (double)st->bytes / (1024.0 * 1024 * 1024);
	double s = secs > 0 ? secs : 1e-9;

	fprintf(f, "%-5s %10llu %7llu %8.3f %10.1f %11.1f %8.3f %8.3f %8.3f %9.3f\n", label,
		(unsigned long long)st->ops, (unsigned long long)st->errors, gib / s,
		gib * 1024 / s, (double)st->ops / s, ms(hist_quantile(&st->lat, 0.50)),
		ms(hist_quantile(&st->lat, 0.90)), ms(hist_quantile(&st->lat, 0.99)),
		ms(st->lat.max));
}

static void print_table(FILE *f, const struct ldr_conf *c, const struct ldr_result *r)
{
	fprintf(f, "aisloader: %s %s, %u workers, %u thread%s, %.2f s\n", op_name(c->op), c->url,
		c->workers, c->threads, c->threads == 1 ? "" : "s", r->secs);
	fprintf(f, "%-5s %10s %7s %8s %10s %11s %8s %8s %8s %9s\n", "op", "ops", "errors", "GiB/s",
		"MiB/s", "ops/s", "p50 ms", "p90 ms", "p99 ms", "max ms");
	if (c->op != LDR_PUT)
		print_row(f, "GET", &r->st[LDR_GET], r->secs);
	if (c->op != LDR_GET)
		print_row(f, "PUT", &r->st[LDR_PUT], r->secs);
	uint64_t redirects = r->st[0].redirects + r->st[1].redirects;
	if (redirects)
		fprintf(f, "(%llu redirect%s %s)\n", (unsigned long long)redirects,
			redirects == 1 ? "" : "s",
			c->redirects_only ? "answered, counted as ops" : "followed");
	uint64_t aborted = r->st[0].aborted + r->st[1].aborted;
	if (aborted)
		fprintf(f, "(%llu transfer%s in flight at the deadline: abandoned, not counted as ops)\n",
			(unsigned long long)aborted, aborted == 1 ? "" : "s");
}

static void print_json(const struct ldr_conf *c, const struct ldr_result *r)
{
	struct ldr_stats all = {0};
	buf_t b = BUF_INIT;

	for (int k = 0; k < 2; k++) {
		all.ops += r->st[k].ops;
		all.errors += r->st[k].errors;
		all.bytes += r->st[k].bytes;
		all.aborted += r->st[k].aborted;
		all.redirects += r->st[k].redirects;
		all.connects += r->st[k].connects;
		hist_merge(&all.lat, &r->st[k].lat);
	}
	double s = r->secs > 0 ? r->secs : 1e-9;
	buf_addf(&b,
		 "{\"op\":\"%s\",\"ops\":%llu,\"errors\":%llu,\"bytes\":%llu,\"secs\":%.3f,"
		 "\"gibps\":%.4f,\"mibps\":%.2f,\"ops_per_s\":%.1f,\"p50_ms\":%.3f,\"p90_ms\":%.3f,"
		 "\"p99_ms\":%.3f,\"max_ms\":%.3f,\"aborted\":%llu,\"workers\":%u,\"threads\":%u,"
		 "\"size\":%llu,\"redirects\":%llu,\"connects\":%llu",
		 op_name(c->op), (unsigned long long)all.ops, (unsigned long long)all.errors,
		 (unsigned long long)all.bytes, r->secs, (double)all.bytes / (1024.0 * 1024 * 1024) / s,
		 (double)all.bytes / (1024.0 * 1024) / s, (double)all.ops / s,
		 ms(hist_quantile(&all.lat, 0.50)), ms(hist_quantile(&all.lat, 0.90)),
		 ms(hist_quantile(&all.lat, 0.99)), ms(all.lat.max), (unsigned long long)all.aborted,
		 c->workers, c->threads, (unsigned long long)c->size,
		 (unsigned long long)all.redirects, (unsigned long long)all.connects);
	if (c->op == LDR_MIX)
		buf_addf(&b, ",\"get_ops\":%llu,\"put_ops\":%llu", (unsigned long long)r->st[0].ops,
			 (unsigned long long)r->st[1].ops);
	buf_addstr(&b, ",\"url\":");
	buf_add_json_str(&b, c->url, strlen(c->url));
	buf_addstr(&b, "}\n");
	fwrite(b.ptr, 1, b.len, stdout);
	fflush(stdout);
	buf_free(&b);
}

int main(int argc, char **argv)
{
	static struct ldr_conf c = {
		.op = LDR_GET, .put_pct = 50, .size = 1 << 20, .objects = 1000, .workers = 16,
		.threads = 1, .keepalive = true, .follow = true, .seed = 1,
		.s3_region = "us-east-1",
	};
	static struct ldr_result res;
	bool have_duration = false, prefill = false, json = false;
	uint64_t v;
	int ch;

	while ((ch = getopt_long(argc, argv, "h", long_opts, NULL)) != -1) {
		switch (ch) {
		case OPT_URL: c.url = optarg; break;
		case OPT_OP:
			if (!strcmp(optarg, "get"))
				c.op = LDR_GET;
			else if (!strcmp(optarg, "put"))
				c.op = LDR_PUT;
			else if (!strcmp(optarg, "mix"))
				c.op = LDR_MIX;
			else
				badarg("op", optarg);
			break;
		case OPT_PUT_PCT: c.put_pct = (unsigned)parse_u64("put-pct", optarg, 0, 100); break;
		case OPT_SIZE:
			if (num_parse_size(optarg, &c.size) != AIS_OK)
				badarg("size", optarg);
			break;
		case OPT_OBJECTS: c.objects = parse_u64("objects", optarg, 1, 1000000000); break;
		case OPT_NAME:
			if (!*optarg || strlen(optarg) > 256)
				badarg("name", optarg);
			c.name = optarg;
			break;
		case OPT_WORKERS: c.workers = (unsigned)parse_u64("workers", optarg, 1, 100000); break;
		case OPT_THREADS: c.threads = (unsigned)parse_u64("threads", optarg, 1, 256); break;
		case OPT_DURATION:
			v = parse_u64("duration", optarg, 0, 365ULL * 86400);
			c.duration_ns = (int64_t)v * 1000000000LL;
			have_duration = true;
			break;
		case OPT_COUNT: c.count = parse_u64("count", optarg, 1, UINT64_MAX / 2); break;
		case OPT_PREFILL: prefill = true; break;
		case OPT_RANDOM: c.seq = false; break;
		case OPT_SEQ: c.seq = true; break;
		case OPT_SEED: c.seed = parse_u64("seed", optarg, 0, UINT64_MAX); break;
		case OPT_VERIFY: c.verify = true; break;
		case OPT_KEEPALIVE: c.keepalive = true; break;
		case OPT_NO_KEEPALIVE: c.keepalive = false; break;
		case OPT_JSON: json = true; break;
		case OPT_FOLLOW: c.follow = true; c.redirects_only = false; break;
		case OPT_NO_FOLLOW: c.follow = false; c.redirects_only = false; break;
		case OPT_REDIRECTS_ONLY: c.follow = false; c.redirects_only = true; break;
		case OPT_S3: {
			char *colon = strchr(optarg, ':');
			if (!colon || colon == optarg || !colon[1])
				badarg("s3", optarg);
			c.s3_ak = xstrndup(optarg, (size_t)(colon - optarg));
			c.s3_sk = colon + 1;
			break;
		}
		case OPT_S3_REGION: c.s3_region = optarg; break;
		case OPT_CACERT: c.cacert = optarg; break;
		case OPT_CERT: c.cert = optarg; break;
		case OPT_KEY: c.key = optarg; break;
		case OPT_INSECURE: c.insecure = true; break;
		case 'h': usage(stdout, 0); break;
		default: usage(stderr, 2);
		}
	}
	if (optind != argc || !c.url)
		usage(stderr, 2);
	if (strncmp(c.url, "http://", 7) && strncmp(c.url, "https://", 8))
		badarg("url", c.url);
	char *url = xstrdup(c.url);
	size_t ul = strlen(url);
	while (ul > 0 && url[ul - 1] == '/')
		url[--ul] = '\0';
	c.url = url;
	if (!have_duration && !c.count)
		c.duration_ns = 10LL * 1000000000LL;
	if (!c.duration_ns && !c.count) {
		fprintf(stderr, "aisloader: need a bound: --duration SECS or --count N\n");
		return 2;
	}
	if (c.workers < c.threads)
		c.threads = c.workers;

	if (curl_global_init(CURL_GLOBAL_DEFAULT) != CURLE_OK) {
		fprintf(stderr, "aisloader: curl_global_init failed\n");
		return 1;
	}
	pat_init();

	FILE *tab = json ? stderr : stdout;
	int rc = 0;

	if (prefill) {
		uint64_t n = c.name ? 1 : c.objects;
		if (engine_run(&c, LDR_PUT, n, 0, true, &res) != 0)
			return 1;
		const struct ldr_stats *st = &res.st[LDR_PUT];
		fprintf(stderr, "aisloader: prefill: %llu object%s of %llu bytes in %.2f s, %llu error%s\n",
			(unsigned long long)st->ops, st->ops == 1 ? "" : "s", (unsigned long long)c.size,
			res.secs, (unsigned long long)st->errors, st->errors == 1 ? "" : "s");
		if (st->errors)
			return 1;
	}

	if (engine_run(&c, c.op, c.count, c.duration_ns, c.seq, &res) != 0)
		rc = 1;
	print_table(tab, &c, &res);
	if (json)
		print_json(&c, &res);
	if (res.st[0].errors || res.st[1].errors)
		rc = 1;
	curl_global_cleanup();
	free(url);
	return rc;
}
