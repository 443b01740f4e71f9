"""test_s3_awscli.py - the AWS CLI v2 (Debian's awscli, /usr/bin/aws)
against a 1-gateway 3-target cluster, through the gateway's S3 endpoint
(path-style, SigV4 with the cluster's key). Without /usr/bin/aws the test
fails (tools/install-deps.sh installs it).

Make a bucket; sync a directory with 0 B, 2 KiB, 5 MiB, 10 MiB and
50 MiB files (multipart above 8 MiB) and a tree of keys with spaces,
unicode, + & % and quotes up, and back down, byte for byte; list with a
prefix and a delimiter; list 1100 keys (several pages); copy an object;
delete one; remove the bucket with everything in it (DeleteObjects). No
node logs an error.
"""
# timeout: 600
import os
import shutil
import tempfile
import time

from itlib import T
from s3lib import (AWS_ENV, SIZES, boto3_client, client_data, cluster, error_lines, fill_many, run,
                   same_file, same_tree)

t = T()
EP = cluster(t, "s3awscli")
WORK = tempfile.mkdtemp(prefix="s3a-", dir=os.environ.get("TMPDIR"))
UP = client_data(WORK)
ENV = AWS_ENV
s3 = boto3_client(EP)
fill_many(s3, "many")


def aws_cli(who, exe):
    b = "cli-" + who
    d = tempfile.mkdtemp(dir=WORK)

    def aws(*args):
        return run([exe, "--endpoint-url", EP] + list(args), env=ENV, timeout=240)

    t0 = time.monotonic()
    rc, out = aws("s3", "mb", "s3://" + b)
    t.check(rc == 0, "%s: mb" % who, out)
    rc, out = aws("s3", "sync", "--only-show-errors", UP, "s3://%s/" % b)
    t.check(rc == 0, "%s: sync up (0 B .. 50 MiB, multipart; awkward names)" % who, out)
    rc, out = aws("s3", "sync", "--only-show-errors", "s3://%s/" % b, d)
    same, diff = same_tree(UP, d)
    t.check(rc == 0 and same, "%s: sync down: every file byte for byte" % who, out + str(diff))
    rc, out = aws("s3api", "list-objects-v2", "--bucket", b, "--prefix", "sizes/", "--delimiter", "/",
                  "--query", "Contents[].Key", "--output", "text")
    t.check(rc == 0 and sorted(out.split()) == sorted("sizes/" + n for n in SIZES),
            "%s: list with prefix and delimiter" % who, out)
    rc, out = aws("s3", "ls", "--recursive", "s3://many/")
    t.check(rc == 0 and out.count(" k/") == 1100, "%s: ls of 1100 keys" % who, out[-300:])
    rc, out = aws("s3", "cp", "--only-show-errors", "s3://%s/sizes/ten_m" % b, "s3://%s/copy/ten m+&" % b)
    s3.download_file(b, "copy/ten m+&", d + "/copied")
    t.check(rc == 0 and same_file(d + "/copied", UP + "/sizes/ten_m"), "%s: copy" % who, out)
    rc, out = aws("s3", "rm", "--only-show-errors", "s3://%s/sizes/zero" % b)
    t.check(rc == 0 and "Contents" not in s3.list_objects_v2(Bucket=b, Prefix="sizes/zero"),
            "%s: delete one" % who, out)
    rc, out = aws("s3", "rb", "--force", "s3://" + b)
    t.check(rc == 0 and b not in [x["Name"] for x in s3.list_buckets()["Buckets"]],
            "%s: delete many (rb --force) and remove the bucket" % who, out)
    t.diag("%s: %.1f s" % (who, time.monotonic() - t0))


if t.check(os.path.exists("/usr/bin/aws"), "Debian's AWS CLI v2 is installed (/usr/bin/aws; make deps)"):
    aws_cli("aws-v2", "/usr/bin/aws")

errs = error_lines()
t.check(not errs, "no node logged an error", "\n".join(errs[:10]))
shutil.rmtree(WORK, ignore_errors=True)
t.finish()
