"""lslib.py - every listing of a bucket through a gateway, for the tests of
listings while targets are down (test_list_down.py, test_list_maint.py):
native pages (body or query form, with or without partial), S3
ListObjectsV2 (paginated), V1 (Marker) and ListObjectVersions (boto3).
Each loop is bounded in count."""
import json

from clulib import get


def status_of(r):
    """A failed listing's answer for a diagnostic: (status, body) or the text."""
    return (r.status, r.body[:300]) if hasattr(r, "status") else r


class Lists:
    """The listings of gateway g (a clulib Node) and boto3 client s3, in
    pages of page names."""

    def __init__(self, g, s3, page):
        self.g, self.s3, self.page = g, s3, page

    def native(self, bck, partial=None, as_query=False):
        """Every page of a native listing: (names, marks, missing, None),
        marks being the "partial" flag of each page, or (None, None, None,
        response) on an error."""
        out, marks, missing, token = [], [], set(), ""
        for _ in range(1000):
            if as_query:
                path = "/v1/buckets/%s?pagesize=%d&continuation_token=%s" % (bck, self.page, token)
                if partial is not None:
                    path += "&partial=" + ("true" if partial else "false")
                r = get(self.g.url, path)
            else:
                v = {"pagesize": self.page, "continuation_token": token}
                if partial is not None:
                    v["partial"] = partial
                r = get(self.g.url, "/v1/buckets/" + bck, body=json.dumps({"action": "list", "value": v}),
                        headers={"Content-Type": "application/json"})
            if r.status != 200:
                return None, None, None, r
            d = r.json()
            out += [e["name"] for e in d["entries"]]
            marks.append(bool(d.get("partial")))
            missing |= set(d.get("missing") or [])
            token = d.get("continuation_token") or ""
            if not token:
                return out, marks, missing, None
        return None, None, None, "listing did not end"

    def s3_v2(self, bck):
        out = []
        for p in self.s3.get_paginator("list_objects_v2").paginate(Bucket=bck,
                                                                   PaginationConfig={"PageSize": self.page}):
            out += [c["Key"] for c in p.get("Contents", [])]
        return out

    def s3_v1(self, bck):
        out, marker = [], ""
        for _ in range(1000):
            r = self.s3.list_objects(Bucket=bck, MaxKeys=self.page, Marker=marker)
            out += [c["Key"] for c in r.get("Contents", [])]
            if not r.get("IsTruncated"):
                return out
            marker = out[-1]
        return None

    def s3_versions(self, bck):
        r = self.s3.list_object_versions(Bucket=bck)
        return [v["Key"] for v in r.get("Versions", [])]

    def s3_all(self):
        """(name, function) of each S3 listing."""
        return (("ListObjectsV2", self.s3_v2), ("ListObjects (V1)", self.s3_v1),
                ("ListObjectVersions", self.s3_versions))

    @staticmethod
    def s3_error(fn, bck):
        """(HTTP status, error code, message) of an S3 listing that fails, or
        (200, what it listed, "")."""
        try:
            return 200, fn(bck), ""
        except Exception as e:  # botocore ClientError
            rsp = getattr(e, "response", {}) or {}
            err = rsp.get("Error", {})
            return rsp.get("ResponseMetadata", {}).get("HTTPStatusCode"), err.get("Code"), err.get("Message", "")
