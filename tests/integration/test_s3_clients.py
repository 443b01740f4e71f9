"""test_s3_clients.py - real S3 clients against a 1-gateway 3-target
cluster, through the gateway's S3 endpoint (path-style, SigV4 with the
cluster's key): s3cmd, rclone and boto3, then an s3fs mount (the AWS CLI
has test_s3_awscli.py).

Each client: make a bucket; upload and download 0 B, 2 KiB, 5 MiB, 10 MiB
and 50 MiB files (the big ones multipart) and a tree of keys with spaces,
unicode, + & % and quotes, byte for byte (sync both ways where the client
has it); list with a prefix and a delimiter; list a bucket of 1100 keys;
copy an object; delete one and many; remove the bucket. rclone check
passes. s3fs (when a FUSE mount works here): ls, cp in and out, mkdir, mv.
No node logs an error.
"""
# timeout: 600
import os
import shutil
import subprocess
import tempfile
import time

from itlib import T
from s3lib import (AK, REGION, SIZES, SK, boto3_client, client_data, cluster, error_lines, fill_many, run,
                   same_file, same_tree)

t = T()
EP = cluster(t, "s3clients")
WORK = tempfile.mkdtemp(prefix="s3c-", dir=os.environ.get("TMPDIR"))
UP = client_data(WORK)
SRC = UP + "/sizes"
s3 = boto3_client(EP)
fill_many(s3, "many")


def check_down(who, down, rc, out):
    same, diff = same_tree(UP, down)
    t.check(rc == 0 and same, "%s: download: every file byte for byte" % who, out[-500:] + str(diff))


# --- s3cmd ----------------------------------------------------------------------------------

host = EP.split("//")[1]
cfg = os.path.join(WORK, "s3cfg")
with open(cfg, "w") as f:
    f.write("[default]\naccess_key = %s\nsecret_key = %s\nhost_base = %s\nhost_bucket = %s\n"
            "use_https = False\nsignature_v2 = False\nbucket_location = %s\nmultipart_chunk_size_mb = 5\n"
            % (AK, SK, host, host, REGION))


def s3cmd(*args):
    return run(["s3cmd", "-c", cfg, "--no-progress"] + list(args), timeout=180)


t0 = time.monotonic()
d = tempfile.mkdtemp(dir=WORK)
rc, out = s3cmd("mb", "s3://s3cmd-b")
t.check(rc == 0, "s3cmd: mb", out)
rc, out = s3cmd("sync", UP + "/", "s3://s3cmd-b/")
t.check(rc == 0, "s3cmd: sync up (0 B .. 50 MiB, multipart; awkward names)", out[-500:])
rc, out = s3cmd("sync", "s3://s3cmd-b/", d + "/")
check_down("s3cmd", d, rc, out)
rc, out = s3cmd("ls", "s3://s3cmd-b/sizes/")
t.check(rc == 0 and all("s3://s3cmd-b/sizes/" + n in out for n in SIZES), "s3cmd: ls with prefix and delimiter", out)
rc, out = s3cmd("ls", "-r", "s3://many/")
t.check(rc == 0 and out.count("s3://many/k/") == 1100, "s3cmd: ls of 1100 keys", out[-300:])
rc, out = s3cmd("cp", "s3://s3cmd-b/sizes/two_k", "s3://s3cmd-b/copy/two k")
s3.download_file("s3cmd-b", "copy/two k", d + "/copied")
t.check(rc == 0 and same_file(d + "/copied", SRC + "/two_k"), "s3cmd: copy", out)
rc, out = s3cmd("del", "s3://s3cmd-b/sizes/zero")
t.check(rc == 0, "s3cmd: delete one", out)
rc, out = s3cmd("del", "--recursive", "--force", "s3://s3cmd-b/")
t.check(rc == 0 and "Contents" not in s3.list_objects_v2(Bucket="s3cmd-b"), "s3cmd: delete many", out[-300:])
rc, out = s3cmd("rb", "s3://s3cmd-b")
t.check(rc == 0, "s3cmd: rb", out)
t.diag("s3cmd: %.1f s" % (time.monotonic() - t0))

# --- rclone -----------------------------------------------------------------------------------

RENV = {"RCLONE_CONFIG_AIS_TYPE": "s3", "RCLONE_CONFIG_AIS_PROVIDER": "Other", "RCLONE_CONFIG_AIS_ENDPOINT": EP,
        "RCLONE_CONFIG_AIS_ACCESS_KEY_ID": AK, "RCLONE_CONFIG_AIS_SECRET_ACCESS_KEY": SK,
        "RCLONE_CONFIG_AIS_REGION": REGION, "RCLONE_CONFIG_AIS_FORCE_PATH_STYLE": "true",
        "RCLONE_CONFIG": os.path.join(WORK, "rclone.conf")}


def rclone(*args):
    return run(["env", "-u", "AWS_CA_BUNDLE", "rclone", "-q", "--s3-upload-cutoff", "5M", "--s3-chunk-size", "5M"]
               + list(args), env=RENV, timeout=180)


t0 = time.monotonic()
d = tempfile.mkdtemp(dir=WORK)
rc, out = rclone("mkdir", "ais:rclone-b")
t.check(rc == 0 and "rclone-b" in [x["Name"] for x in s3.list_buckets()["Buckets"]], "rclone: mkdir", out)
rc, out = rclone("sync", UP, "ais:rclone-b")
t.check(rc == 0, "rclone: sync up (0 B .. 50 MiB, multipart; awkward names)", out)
rc, out = rclone("sync", "ais:rclone-b", d)
check_down("rclone", d, rc, out)
rc, out = rclone("lsf", "ais:rclone-b/sizes/")
t.check(rc == 0 and sorted(out.split()) == sorted(SIZES), "rclone: list with prefix and delimiter", out)
rc, out = rclone("lsf", "-R", "--files-only", "ais:many")
t.check(rc == 0 and len(out.split()) == 1100, "rclone: list 1100 keys", out[-300:])
rc, out = rclone("check", UP, "ais:rclone-b")
t.check(rc == 0, "rclone check passes", out)
rc, out = rclone("copyto", "ais:rclone-b/sizes/five_m", "ais:rclone-b/copy/five m")
t.check(rc == 0 and s3.head_object(Bucket="rclone-b", Key="copy/five m")["ContentLength"] == 5 << 20,
        "rclone: copy", out)
rc, out = rclone("deletefile", "ais:rclone-b/sizes/zero")
t.check(rc == 0, "rclone: delete one", out)
rc, out = rclone("purge", "ais:rclone-b")
t.check(rc == 0 and "rclone-b" not in [x["Name"] for x in s3.list_buckets()["Buckets"]],
        "rclone: delete many and remove the bucket (purge)", out)
t.diag("rclone: %.1f s" % (time.monotonic() - t0))

# --- boto3 (s3transfer: multipart above 8 MiB) ---------------------------------------------------

t0 = time.monotonic()
d = tempfile.mkdtemp(dir=WORK)
b = "boto3-b"
s3.create_bucket(Bucket=b)
for root, _, fs in os.walk(UP):
    for f in fs:
        p = os.path.join(root, f)
        s3.upload_file(p, b, os.path.relpath(p, UP))
for o in s3.list_objects_v2(Bucket=b)["Contents"]:
    p = os.path.join(d, o["Key"])
    os.makedirs(os.path.dirname(p), exist_ok=True)
    s3.download_file(b, o["Key"], p)
check_down("boto3", d, 0, "")
t.check("-" in s3.head_object(Bucket=b, Key="sizes/fifty_m")["ETag"], "boto3: 50 MiB went multipart (ETag md5-N)")
r = s3.list_objects_v2(Bucket=b, Prefix="sizes/", Delimiter="/")
t.check(sorted(x["Key"] for x in r["Contents"]) == sorted("sizes/" + n for n in SIZES) and
        not r.get("CommonPrefixes"), "boto3: list with prefix and delimiter")
r = s3.list_objects_v2(Bucket=b, Delimiter="/")
t.check([p["Prefix"] for p in r.get("CommonPrefixes", [])] == ["sizes/", "tree/"], "boto3: CommonPrefixes")
s3.copy({"Bucket": b, "Key": "sizes/ten_m"}, "many", "copied ten")
s3.download_file("many", "copied ten", d + "/copied")
t.check(same_file(d + "/copied", SRC + "/ten_m"), "boto3: copy across buckets")
s3.delete_object(Bucket="many", Key="copied ten")
keys = [o["Key"] for o in s3.list_objects_v2(Bucket=b)["Contents"]]
r = s3.delete_objects(Bucket=b, Delete={"Objects": [{"Key": k} for k in keys]})
t.check(len(r.get("Deleted", [])) == len(keys) and not r.get("Errors"), "boto3: delete many", r.get("Errors"))
s3.delete_bucket(Bucket=b)
t.check(b not in [x["Name"] for x in s3.list_buckets()["Buckets"]], "boto3: remove the bucket")
t.diag("boto3: %.1f s" % (time.monotonic() - t0))

# --- s3fs ---------------------------------------------------------------------------------------------

mnt = os.path.join(WORK, "mnt")
os.makedirs(mnt)
pw = os.path.join(WORK, "s3fs.pw")
with open(pw, "w") as f:
    f.write("%s:%s\n" % (AK, SK))
os.chmod(pw, 0o600)
s3.create_bucket(Bucket="s3fs-b")
s3.put_object(Bucket="s3fs-b", Key="hello.txt", Body=b"hello\n")
fs = None
if not os.path.exists("/dev/fuse"):
    t.skip("s3fs mount", "no /dev/fuse on this machine (FUSE is absent)")
elif not t.check(shutil.which("s3fs"), "s3fs is installed (make deps)"):
    pass
else:
    log = open(os.path.join(WORK, "s3fs.log"), "wb")
    fs = subprocess.Popen(["s3fs", "s3fs-b", mnt, "-f", "-o",
                           "url=%s,use_path_request_style,passwd_file=%s,dbglevel=warn,stat_cache_expire=1" % (EP, pw)],
                          stdout=log, stderr=log, stdin=subprocess.DEVNULL)
    mounted = False
    for _ in range(150):
        if os.path.ismount(mnt) or fs.poll() is not None:
            break
        time.sleep(0.1)
    mounted = os.path.ismount(mnt)
    if not t.check(mounted, "s3fs: the FUSE mount comes up (/dev/fuse is there)",
                   "exit %s: %s" % (fs.poll(), open(os.path.join(WORK, "s3fs.log"), errors="replace").read()[-800:])):
        pass
    else:
        t.check("hello.txt" in os.listdir(mnt), "s3fs: ls shows an S3 object")
        shutil.copy(SRC + "/ten_m", mnt + "/ten")
        t.check(same_file(mnt + "/ten", SRC + "/ten_m"), "s3fs: cp in")
        shutil.copy(mnt + "/hello.txt", d + "/hello")
        t.check(open(d + "/hello", "rb").read() == b"hello\n", "s3fs: cp out")
        os.mkdir(mnt + "/dir")
        os.rename(mnt + "/ten", mnt + "/dir/ten")
        t.check(os.listdir(mnt + "/dir") == ["ten"] and same_file(mnt + "/dir/ten", SRC + "/ten_m"), "s3fs: mkdir and mv")
        keys = [o["Key"] for o in s3.list_objects_v2(Bucket="s3fs-b")["Contents"]]
        t.check("dir/ten" in keys and "ten" not in keys, "s3fs: the move is visible through S3", keys)
        subprocess.run(["fusermount", "-u", mnt], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    if fs.poll() is None:
        fs.terminate()
    try:
        fs.wait(10)
    except subprocess.TimeoutExpired:
        fs.kill()
        fs.wait(5)
    if os.path.ismount(mnt):
        subprocess.run(["umount", "-l", mnt])

errs = error_lines()
t.check(not errs, "no node logged an error", "\n".join(errs[:10]))
shutil.rmtree(WORK, ignore_errors=True)
t.finish()
