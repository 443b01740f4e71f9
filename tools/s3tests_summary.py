#!/usr/bin/env python3
"""s3tests_summary.py - one line per family of an s3-tests run.

    s3tests_summary.py JUNIT.xml [--failed]

Reads the JUnit XML that pytest wrote for ceph/s3-tests (tools/s3tests.sh)
and prints, per family, passed / failed (failures and errors) / skipped /
total, then the totals. A test's family is the first pattern below that
its name matches (test_headers.py is one family of its own); the families
follow S3's feature areas, so a run shows where a feature stands.
--failed also lists the failed tests by family.
"""
import re
import sys
import xml.etree.ElementTree as ET

# (family, pattern on the test name), first match wins
FAMILIES = [
    ("object lock", r"object_lock|retention|legal_hold"),
    ("lifecycle", r"lifecycle|_lc_"),
    ("bucket logging", r"logging"),
    ("post upload", r"post_object"),
    ("server-side encryption", r"encrypt|sse|kms"),
    ("bucket policy", r"policy|public_block|block_public|access_block"),
    ("cors", r"cors"),
    ("versioning", r"version|delete_marker"),
    ("tagging", r"tag"),
    ("checksum", r"checksum"),
    ("conditional", r"if_match|ifmatch|if_none|ifnonematch|modified|condition"),
    ("multipart", r"multipart|_mpu|_part"),
    ("acl and ownership", r"acl|grant|owner|ownership"),
    ("listing", r"list|prefix|delimiter|marker|maxkeys|max_keys"),
    ("copy", r"copy"),
    ("auth", r"auth|sign|presigned|anon|_v2|_v4|expires"),
    ("bucket", r"bucket"),
    ("object", r"object|ranged|range"),
]


def family(classname, name):
    if classname.endswith("test_headers"):
        return "headers (test_headers.py)"
    for fam, pat in FAMILIES:
        if re.search(pat, name):
            return fam
    return "other"


def main():
    if len(sys.argv) < 2:
        sys.exit("usage: s3tests_summary.py JUNIT.xml [--failed]")
    root = ET.parse(sys.argv[1]).getroot()
    stats, failed = {}, {}
    for tc in root.iter("testcase"):
        fam = family(tc.get("classname", ""), tc.get("name", ""))
        s = stats.setdefault(fam, [0, 0, 0])
        if tc.find("failure") is not None or tc.find("error") is not None:
            s[1] += 1
            failed.setdefault(fam, []).append(tc.get("name"))
        elif tc.find("skipped") is not None:
            s[2] += 1
        else:
            s[0] += 1
    order = [f for f, _ in FAMILIES] + ["headers (test_headers.py)", "other"]
    print("%-26s %6s %6s %6s %6s" % ("family", "passed", "failed", "skip", "total"))
    tot = [0, 0, 0]
    for fam in order:
        if fam not in stats:
            continue
        p, f, k = stats[fam]
        tot = [tot[0] + p, tot[1] + f, tot[2] + k]
        print("%-26s %6d %6d %6d %6d" % (fam, p, f, k, p + f + k))
    print("%-26s %6d %6d %6d %6d" % ("all", tot[0], tot[1], tot[2], sum(tot)))
    if "--failed" in sys.argv[2:]:
        for fam in order:
            for n in failed.get(fam, []):
                print("FAILED %s: %s" % (fam, n))


if __name__ == "__main__":
    main()
