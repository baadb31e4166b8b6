#!/usr/bin/env python3
"""bench/ddp_clocks.py — are the ranks of a traced multi-GPU job on one clock? (issue 15)

An NCCL all-reduce ends on every rank at nearly the same moment: no rank's kernel can finish
before the last rank's has started and sent its data. So, pairing the k-th collective kernel of
one name on each rank, the spread of their end times measures how well kprof put the GPUs'
timestamps (each process's, each device's) on one host clock, and a kernel that ended before
another rank's paired kernel started would be impossible on a true common clock.

usage: bench/ddp_clocks.py TRACE.kprof [--json OUT]
Prints, per collective name, the pairs, the end spread (median, p95, max) and, for the
collectives where every rank needs every other's data (all-reduce, all-gather, reduce-scatter),
the number of pairs where one rank's kernel ended before another's started ("impossible"); a
rooted collective (broadcast, reduce) may legitimately end on its root first.
"""

import argparse
import json
import sqlite3
import statistics
import sys


def pct(v, q):
    v = sorted(v)
    return v[min(len(v) - 1, int(q * (len(v) - 1) + 0.5))] if v else None


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("trace")
    ap.add_argument("--json")
    a = ap.parse_args()
    db = sqlite3.connect("file:%s?mode=ro" % a.trace, uri=True)
    rows = db.execute(
        "SELECT p.rank, s.text, e.start_ns, e.end_ns FROM events e "
        "JOIN processes p ON p.id = e.process JOIN strings s ON s.id = e.name "
        "WHERE e.kind = 4 AND p.rank IS NOT NULL AND (s.text LIKE 'nccl%' OR s.text LIKE '%nccl%') "
        "ORDER BY e.start_ns").fetchall()
    by = {}
    for rank, name, s, e in rows:
        by.setdefault(name, {}).setdefault(rank, []).append((s, e))
    out = {}
    for name, ranks in sorted(by.items()):
        if len(ranks) < 2:
            continue
        n = min(len(v) for v in ranks.values())
        spreads, impossible = [], 0
        symmetric = any(op in name for op in ("AllReduce", "AllGather", "ReduceScatter"))
        for k in range(n):
            pair = [ranks[r][k] for r in sorted(ranks)]
            ends = [e for _, e in pair]
            spreads.append(max(ends) - min(ends))
            # Only where every rank needs every other's data: a broadcast's or reduce's root
            # may finish (buffered) before a late peer starts.
            if symmetric and min(ends) < max(s for s, _ in pair):
                impossible += 1
        short = name.split("(")[0]
        out[short] = {"pairs": n, "ranks": sorted(ranks),
                      "end_spread_median_us": statistics.median(spreads) / 1e3,
                      "end_spread_p95_us": pct(spreads, 0.95) / 1e3,
                      "end_spread_max_us": max(spreads) / 1e3,
                      "impossible": impossible if symmetric else None}
        print("%-45s %5d pairs  end spread median %8.2f µs  p95 %8.2f µs  max %9.2f µs  "
              "impossible %s" % (short[:45], n, out[short]["end_spread_median_us"],
                                 out[short]["end_spread_p95_us"], out[short]["end_spread_max_us"],
                                 impossible if symmetric else "n/a (rooted)"))
    if not out:
        print("no collective kernel recorded on two ranks")
    if a.json:
        with open(a.json, "w") as f:
            json.dump(out, f, indent=1)
    return 0 if out else 1


if __name__ == "__main__":
    sys.exit(main())
