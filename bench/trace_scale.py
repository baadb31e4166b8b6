#!/usr/bin/env python3
"""bench/trace_scale.py — kprof report (the tables, --tree, --by path), the Chrome, Perfetto and
Hatchet exports on a 1M-kernel trace (issues 5 and 11): wall time and peak memory of each whole
command (goal, issue 11: under 2 s and 1 GiB each on the 2-core machine), and the Perfetto file's
size against the Chrome JSON's (goal: at most half). The trace comes from the real `kprof trace` merge of a synthetic program
(tests/cli/gen_trace.py: 1M kernels and the 1M launch calls that made them).

The deep case (issue 23): NVTX ranges nested 50k, 100k and 200k deep on one thread
(tests/cli/tree_trace.py's make_deep records, merged by the real `kprof trace --merge`), and the
wall time of report --tree, --by path, diff and the Hatchet and CSV exports of each: the call
tree's placement is linear in the depth (it was quadratic: 100k took 6 s, 200k 29 s).

usage: bench/trace_scale.py [--kprof build/kprof] [--kernels 1000000 (0: none)]
                            [--deep 50000,100000,200000] [--json out.json]
"""

import argparse
import json
import os
import resource
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
GEN = os.path.join(HERE, "..", "tests", "cli", "gen_trace.py")
sys.path.insert(0, os.path.join(HERE, "..", "tests", "cli"))
import tree_trace  # noqa: E402  (the deep case's records)


def timed(cmd):
    """Wall seconds and peak RSS (MiB) of one child command."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss
    t0 = time.perf_counter()
    p = subprocess.run(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    wall = time.perf_counter() - t0
    if p.returncode != 0:
        sys.exit("failed: %s\n%s" % (" ".join(cmd), p.stderr))
    peak = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss
    return wall, max(peak, before) / 1024.0


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--kprof", default=os.path.join(HERE, "..", "build", "kprof"))
    ap.add_argument("--kernels", type=int, default=1000000)
    ap.add_argument("--deep", default="50000,100000,200000",
                    help="depths of the nested-range case, comma-separated ('' for none)")
    ap.add_argument("--json")
    a = ap.parse_args()
    kprof = os.path.abspath(a.kprof)
    tmp = tempfile.mkdtemp(prefix="kprof-scale-")
    res = wide_case(kprof, tmp, a.kernels) if a.kernels else {}
    deep = deep_case(kprof, tmp, [int(d) for d in a.deep.split(",") if d])
    res["deep"] = deep
    if a.json:
        with open(a.json, "w") as f:
            json.dump(res, f, indent=2)
    for depth, r in deep.items():
        print("ranges nested %s deep: %s" % (depth, ", ".join(
            "%s %.2f s" % (name, wall) for name, wall in r.items())))
    for f in os.listdir(tmp):
        os.unlink(os.path.join(tmp, f))
    os.rmdir(tmp)


def make_wide_trace(kprof, trace, kernels):
    """The wide case's trace at `trace`, through the real `kprof trace`: `kernels` kernels of 5
    us, one launched every 1 us, each after its launch call, in one NVTX range (2 * kernels + 1
    events). Returns the wall seconds of kprof trace and its merge."""
    t0 = time.perf_counter()
    subprocess.run([kprof, "trace", "-o", trace, "--", sys.executable, GEN, "launch-bound",
                    "--kernels", str(kernels), "--seconds", "1", "--period-us", "1",
                    "--no-poll"], check=True,
                   stderr=subprocess.DEVNULL)
    return time.perf_counter() - t0


def wide_case(kprof, tmp, kernels):
    """The 1M-kernel trace: its commands' wall time and peak memory, the files' sizes."""
    trace = os.path.join(tmp, "big.kprof")
    trace_wall = make_wide_trace(kprof, trace, kernels)
    rows = {}
    # ru_maxrss of children is a high-water mark over all of them: measure each in its own
    # python so the figures do not mix.
    for name, cmd in (("report", [kprof, "report", trace]),
                      ("export_chrome", [kprof, "export", trace, "--chrome",
                                         os.path.join(tmp, "big.json")]),
                      ("export_perfetto", [kprof, "export", trace, "--perfetto",
                                           os.path.join(tmp, "big.pftrace")]),
                      ("report_tree", [kprof, "report", trace, "--tree"]),
                      ("report_by_path", [kprof, "report", trace, "--by", "path"]),
                      ("export_hatchet", [kprof, "export", trace, "--hatchet",
                                          os.path.join(tmp, "big.hatchet.json")])):
        code = ("import resource,subprocess,time,sys;t=time.perf_counter();"
                "subprocess.run(%r,check=True,stdout=subprocess.DEVNULL);"
                "w=time.perf_counter()-t;"
                "print(w, resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss/1024)" % cmd)
        out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                             check=True).stdout.split()
        rows[name] = {"wall_s": float(out[0]), "peak_mib": float(out[1])}
    size = os.path.getsize(trace) / 2**20
    chrome_mib = os.path.getsize(os.path.join(tmp, "big.json")) / 2**20
    perfetto_mib = os.path.getsize(os.path.join(tmp, "big.pftrace")) / 2**20
    res = {"kernels": kernels, "trace_mib": size, "trace_and_merge_s": trace_wall, **rows,
           "chrome_mib": chrome_mib, "perfetto_mib": perfetto_mib}
    print("1M-kernel trace (%d kernels, %d events, %.0f MiB): kprof trace + merge %.1f s" % (
        kernels, 2 * kernels + 1, size, trace_wall))
    for name, r in rows.items():
        print("  %-15s %.2f s wall, %.0f MiB peak (goal < 2 s, < 1024 MiB: %s)" % (
            name, r["wall_s"], r["peak_mib"],
            "met" if r["wall_s"] < 2 and r["peak_mib"] < 1024 else "MISSED"))
    print("  Perfetto file %.0f MiB, Chrome JSON %.0f MiB: %.2f of it (goal <= 0.5: %s)" % (
        perfetto_mib, chrome_mib, perfetto_mib / chrome_mib,
        "met" if perfetto_mib <= chrome_mib / 2 else "MISSED"))
    return res


def deep_case(kprof, tmp, depths):
    """Wall seconds of each command on a trace of ranges nested `depth` deep, per depth."""
    out = {}
    for depth in depths:
        records = os.path.join(tmp, "records-deep%d" % depth)
        os.mkdir(records)
        tree_trace.write_deep_records(records, depth)
        trace = os.path.join(tmp, "deep%d.kprof" % depth)
        subprocess.run([kprof, "trace", "--merge", records, "-o", trace], check=True,
                       stderr=subprocess.DEVNULL)
        if os.path.isdir(records):
            for f in os.listdir(records):
                os.unlink(os.path.join(records, f))
            os.rmdir(records)
        hatchet = os.path.join(tmp, "deep.hatchet.json")
        r = {}
        for name, cmd in (("report_tree", [kprof, "report", trace, "--tree"]),
                          ("report_by_path", [kprof, "report", trace, "--by", "path"]),
                          ("diff", [kprof, "diff", trace, trace]),
                          ("export_hatchet", [kprof, "export", trace, "--hatchet", hatchet,
                                              "--force"]),
                          ("export_csv", [kprof, "export", trace, "--csv", "-"])):
            r[name] = timed(cmd)[0]
        os.unlink(hatchet)
        os.unlink(trace)
        out[str(depth)] = r
    return out


if __name__ == "__main__":
    main()
