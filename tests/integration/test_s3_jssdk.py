"""test_s3_jssdk.py - the AWS SDK for JavaScript v3 (npm's @aws-sdk/client-s3
and @aws-sdk/lib-storage, installed by tools/jssdk-install.sh into a cache
folder outside the repository) against a 1-gateway 3-target cluster with
auth on: the SDK's flexible checksums (CRC32 by default, CRC32C, SHA1,
SHA256; headers for sized bodies, aws-chunked trailers with
STREAMING-UNSIGNED-PAYLOAD-TRAILER for streams), multipart uploads with
lib-storage, listings of 1100 keys, copy, delete one and many, and the
errors a JS user meets (s3_jssdk.mjs has the list).

Fails when node or npm is missing (tools/install-deps.sh installs Debian's
nodejs and npm); skipped (one SKIP line saying why) only when npm cannot
reach its registry; any other install failure fails.
"""
# timeout: 420
import os
import shutil
import subprocess

from itlib import T
from s3lib import AK, REGION, SK, cluster, error_lines

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))

t = T()
if not t.check(shutil.which("node") and shutil.which("npm"), "node and npm are installed (make deps)"):
    t.finish()
try:
    p = subprocess.run([os.path.join(ROOT, "tools", "jssdk-install.sh")], capture_output=True, text=True,
                       timeout=660)
    rc, jsdir, why = p.returncode, p.stdout.strip(), p.stderr.strip()
except subprocess.TimeoutExpired:
    rc, jsdir, why = 1, "", "jssdk-install.sh ran past 660 s"
if rc == 2:
    t.skip("the AWS SDK for JavaScript", (why.splitlines() or ["not installable"])[-1])
    t.finish()
if not t.check(rc == 0 and jsdir, "tools/jssdk-install.sh installs @aws-sdk/client-s3", why[-800:]):
    t.finish()

EP = cluster(t, "s3js")
env = dict(os.environ, S3_ENDPOINT=EP, S3_AK=AK, S3_SK=SK, S3_REGION=REGION, JSSDK_DIR=jsdir)
try:
    p = subprocess.run(["node", os.path.join(HERE, "s3_jssdk.mjs")], capture_output=True, text=True, env=env,
                       timeout=300)
    out, rc = p.stdout + p.stderr, p.returncode
except subprocess.TimeoutExpired as e:
    out, rc = str(e.stdout or "") + "\nnode ran past 300 s", 1
oks = nots = 0
for line in out.splitlines():
    if line.startswith("ok "):
        t.ok("jssdk: " + line.split(" - ", 1)[-1])
        oks += 1
    elif line.startswith("not ok "):
        t.fail("jssdk: " + line.split(" - ", 1)[-1])
        nots += 1
    elif line.startswith("#"):
        t.diag(line[1:].strip())
t.check(rc == 0 and oks > 0 and not nots, "node s3_jssdk.mjs exits 0 with every check passed", out[-1500:])
errs = error_lines()
t.check(not errs, "no node logged an error", "\n".join(errs[:10]))
t.finish()
