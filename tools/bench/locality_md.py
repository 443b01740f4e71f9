"""locality_md.py - the tables of make bench-locality from its rows
(tools/bench/locality.py's JSON lines): python3 locality_md.py ROWS.jsonl"""
import json
import sys

from aisd.model import predict
from aisd.plan import Shard


def remodel(r):
    """The model's column again with the current aisd.model, from the
    row's recorded inputs and placement (rows without them keep theirs)."""
    if "inputs" not in r:
        return r["model"]
    kw = dict(r["inputs"])
    N = kw.pop("learners")
    mode = "locality" if r["kind"] == "cache" else r["kind"]
    p = predict(N, shards=[Shard(x[0], x[1], tuple(x[2]), *x[3:]) for x in r["placement"]], **kw)[mode]
    if r["kind"] == "cache":
        return dict(hit_rate=p["hit_rate"], secs=p["secs"], g0_link_bytes=p["net_bytes"])
    return dict(secs=p["secs"], samples_per_s=p["samples_per_s"], cross_bytes=p["net_bytes"],
                busiest_link=p["busiest_link_both_ways"], bound=p["bound"])


def err(model, meas):
    return "%+.0f%%" % ((model - meas) / meas * 100) if meas else "-"


def main():
    rows = [json.loads(x) for x in open(sys.argv[1]) if x.strip()]
    for r in rows:
        r["model"] = remodel(r)
    lp = [r for r in rows if r["kind"] in ("plain", "locality")]
    plain = {(r["nodes"], r["copies"], r["rate"]): r for r in lp if r["kind"] == "plain"}
    out = ["| nodes | copies | link | mode | s/epoch | samples/s | vs plain | cross-node MB | % of plain | "
           "busiest link MB (in + out) | model s/epoch | model samples/s | model cross MB | model busiest MB | model error (time) |",
           "|---:|---:|---|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|"]
    for r in lp:
        m, p = r["measured"], r["model"]
        pl = plain.get((r["nodes"], r["copies"], r["rate"]))
        vs = "%.1fx" % (m["samples_per_s"] / pl["measured"]["samples_per_s"]) if pl and r["kind"] != "plain" else "-"
        pct = "%.1f%%" % (100 * m["cross_bytes"] / pl["measured"]["cross_bytes"]) \
            if pl and r["kind"] != "plain" and pl["measured"]["cross_bytes"] else "-"
        out.append("| %d | %d | %s | %s | %.2f | %.0f | %s | %.1f | %s | %.1f | %.2f | %.0f | %.1f | %.1f | %s |" % (
            r["nodes"], r["copies"], r["rate"], r["kind"], m["secs"], m["samples_per_s"], vs, m["cross_bytes"] / 1e6,
            pct, m["busiest_link"] / 1e6, p["secs"], p["samples_per_s"], p["cross_bytes"] / 1e6,
            p["busiest_link"] / 1e6, err(p["secs"], m["secs"])))
    cr = [r for r in rows if r["kind"] == "cache"]
    if cr:
        out += ["", "| nodes | link | cache / share | policy | prefetch | hit rate | model hit rate | g0 link MB | "
                "model MB | s/epoch | model s/epoch | model error (time) |",
                "|---:|---|---:|---|---|---:|---:|---:|---:|---:|---:|---:|"]
        for r in cr:
            m, p = r["measured"], r["model"]
            out.append("| %d | %s | %.2f | %s | %s | %.0f%% | %.0f%% | %.2f | %.2f | %.2f | %.2f | %s |" % (
                r["nodes"], r["rate"], r["cache"], r["policy"], r["prefetch"] or "-", 100 * m["hit_rate"],
                100 * (p["hit_rate"] or 0), m["g0_link_bytes"] / 1e6, p["g0_link_bytes"] / 1e6, m["secs"], p["secs"],
                err(p["secs"], m["secs"])))
    out += ["", "model inputs: the link rate, the placement (the listing's), the dataset and sample sizes; "
            "training rate per rank = this machine's pipeline rate / ranks, measured in each configuration "
            "(%s); link efficiency 0.95; full overlap." % ", ".join(
                sorted({"%d nodes %s copies %d: %.0f samples/s" % (r["nodes"], r["rate"], r["copies"],
                                                                   r["machine_rate"]) for r in lp}))]
    print("\n".join(out))


if __name__ == "__main__":
    main()
