#!/usr/bin/env python3
"""bench/html_pages.py — the HTML page's size and speed (issue 27), on the 2-core machine:

- a 1M-kernel trace (bench/trace_scale.py's wide case: tests/cli/gen_trace.py through the real
  `kprof trace`, 2M+1 events): the wall time of `kprof report TRACE --html OUT.html` (goal
  < 3 s) and the page's size (goal <= 10 MB), then the page opened in headless Chromium
  (tests/cli/chromium.py): the page's first draw, window.kprofDrawnMs, ms since navigation
  start (goal < 2000 ms), the wall time of the whole open (navigation until the page says it
  has drawn), and no network request and no error;
  The same trace's plain `kprof report` is timed too, for scale (the machine is shared);
- a 10k-event trace (gen_trace.py launch-bound, 5000 kernels and their launch calls: 10001
  events, checked against `kprof report --json`'s `events`): its page's size (goal <= 1 MB),
  the same timings, no request and no error.

MB here is 10^6 bytes (the stricter reading). Each timing is the median of --repeat runs (the
page rewritten with --force each time; each open in a fresh Chromium), every run kept in the
JSON. Prints a table of each goal, measured against goal, met or MISSED; --json OUT writes the
figures. Exit status 0 whatever was measured (1 with --strict where a goal was missed).

usage: bench/html_pages.py [--kprof build/kprof] [--kernels 1000000] [--small-kernels 5000]
                           [--repeat 3] [--keep DIR] [--json out.json] [--strict]
"""

import argparse
import json
import os
import platform
import shutil
import statistics
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
sys.path.insert(0, os.path.join(HERE, "..", "tests", "cli"))
import chromium  # noqa: E402  (tests/cli/chromium.py: the DevTools driver)
import trace_scale  # noqa: E402  (its wide trace: gen_trace.py through kprof trace)

DRAWN = "document.documentElement.dataset.drawn === '1'"
MB = 1000 * 1000


def timed(cmd):
    """Wall seconds and peak RSS (MiB) of one kprof command, measured in a python of its own
    (ru_maxrss of children is a high-water mark over all of them)."""
    code = ("import resource,subprocess,time,sys;t=time.perf_counter();"
            "p=subprocess.run(%r,stdout=subprocess.DEVNULL,stderr=subprocess.PIPE,text=True);"
            "w=time.perf_counter()-t;"
            "sys.stderr.write(p.stderr);"
            "print(p.returncode, w, resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss/1024)"
            % cmd)
    p = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    rc, wall, peak = p.stdout.split()
    if int(rc) != 0:
        sys.exit("failed (exit %s): %s\n%s" % (rc, " ".join(cmd), p.stderr))
    return float(wall), float(peak)


def small_trace(kprof, trace, kernels):
    """gen_trace.py launch-bound: `kernels` kernels, each after its launch call (no poll), one
    every 45 us, in one NVTX range: 2 * kernels + 1 events."""
    t0 = time.perf_counter()
    subprocess.run([kprof, "trace", "-o", trace, "--", sys.executable, trace_scale.GEN,
                    "launch-bound", "--kernels", str(kernels), "--no-poll"], check=True,
                   stderr=subprocess.DEVNULL)
    return time.perf_counter() - t0


def report_events(kprof, trace):
    p = subprocess.run([kprof, "report", trace, "--json"], capture_output=True, text=True,
                       check=True)
    return json.loads(p.stdout)["events"]


def open_page(page, repeat, timeout):
    """Open the page `repeat` times, each in a fresh Chromium: the runs' drawn_ms, open_s,
    requests and errors (a run that never drew says why in `failed`)."""
    runs = []
    for _ in range(repeat):
        run = {"drawn_ms": None, "open_s": None, "requests": [], "errors": [], "failed": None}
        try:
            with chromium.Chromium(width=1400, height=1000, timeout=timeout) as c:
                r = c.open(page, wait_expr=DRAWN, timeout=timeout)
                run.update(drawn_ms=r.drawn_ms, open_s=r.open_s, requests=r.requests,
                           errors=r.errors, load_ms=r.load_ms)
        except chromium.ChromiumError as e:
            run["failed"] = str(e)[:2000]
        runs.append(run)
    return runs


def median(values):
    values = [v for v in values if v is not None]
    return statistics.median(values) if values else None


def page_case(name, kprof, trace, page, events, repeat, timeout):
    walls, peaks = [], []
    for _ in range(repeat):
        wall, peak = timed([kprof, "report", trace, "--html", page, "--force"])
        walls.append(wall)
        peaks.append(peak)
    # The same trace's plain report, for scale: what this machine gives now (it is shared).
    plain = [timed([kprof, "report", trace])[0] for _ in range(repeat)]
    size = os.path.getsize(page)
    runs = open_page(page, repeat, timeout)
    return {"case": name, "events": events, "trace_mib": os.path.getsize(trace) / 2**20,
            "report_html_s": median(walls), "report_html_s_runs": walls,
            "report_html_peak_mib": max(peaks), "report_plain_s": median(plain),
            "report_plain_s_runs": plain, "page_bytes": size,
            "drawn_ms": median(r["drawn_ms"] for r in runs),
            "open_s": median(r["open_s"] for r in runs),
            "requests": sorted({u for r in runs for u in r["requests"]}),
            "errors": sorted({e for r in runs for e in r["errors"]}),
            "failed": [r["failed"] for r in runs if r["failed"]], "opens": runs}


def goals_of(big, small):
    g = []

    def goal(what, measured, op, limit, unit):
        ok = measured is not None and {"<": measured < limit, "<=": measured <= limit,
                                       ">=": measured >= limit}[op] if measured is not None \
            else False
        g.append({"goal": what, "measured": measured, "op": op, "limit": limit, "unit": unit,
                  "met": ok})

    if big:
        n = big["kernels"]
        B = ("%gM" % (n / 1e6)) if n >= 1000000 else "%d" % n
        goal("%s kernels: kprof report --html wall" % B, big["report_html_s"], "<", 3.0, "s")
        goal("%s kernels: page size" % B, big["page_bytes"] / MB, "<=", 10.0, "MB")
        goal("%s kernels: first draw (kprofDrawnMs)" % B, big["drawn_ms"], "<", 2000.0, "ms")
        goal("%s kernels: network requests" % B, len(big["requests"]), "<=", 0, "")
        goal("%s kernels: page errors" % B, len(big["errors"]) + len(big["failed"]), "<=", 0,
             "")
    if small:
        S = "%d events" % small["events"]
        goal("%s: page size" % S, small["page_bytes"] / MB, "<=", 1.0, "MB")
        goal("%s: 10k+ events (report --json)" % S, small["events"], ">=", 10000,
             "events")
        goal("%s: network requests" % S, len(small["requests"]), "<=", 0, "")
        goal("%s: page errors" % S, len(small["errors"]) + len(small["failed"]), "<=", 0,
             "")
    return g


def fmt(v, unit):
    if v is None:
        return "n/a"
    if isinstance(v, int):
        return ("%d %s" % (v, unit)).strip()
    return "%.4g %s" % (v, unit) if unit else "%.4g" % v


def print_case(c):
    print("%s: %d events, trace %.1f MiB" % (c["case"], c["events"], c["trace_mib"]))
    print("  kprof report --html   %.2f s wall (median of %s), %.0f MiB peak" % (
        c["report_html_s"], ", ".join("%.2f" % w for w in c["report_html_s_runs"]),
        c["report_html_peak_mib"]))
    print("  kprof report (text)   %.2f s wall (median of %s), for scale" % (
        c["report_plain_s"], ", ".join("%.2f" % w for w in c["report_plain_s_runs"])))
    print("  page                  %d bytes (%.2f MB, %.2f MiB)" % (
        c["page_bytes"], c["page_bytes"] / MB, c["page_bytes"] / 2**20))
    drawn = ", ".join("n/a" if r["drawn_ms"] is None else "%.0f" % r["drawn_ms"]
                      for r in c["opens"])
    opened = ", ".join("n/a" if r["open_s"] is None else "%.2f" % r["open_s"]
                       for r in c["opens"])
    print("  first draw            %s ms since navigation (runs: %s)" % (
        "n/a" if c["drawn_ms"] is None else "%.0f" % c["drawn_ms"], drawn))
    print("  open until drawn      %s s wall (runs: %s)" % (
        "n/a" if c["open_s"] is None else "%.2f" % c["open_s"], opened))
    print("  requests %d, errors %d%s" % (len(c["requests"]), len(c["errors"]),
                                          ", opens that failed %d" % len(c["failed"])
                                          if c["failed"] else ""))
    for u in c["requests"][:5]:
        print("    request: " + u)
    for e in (c["errors"] + c["failed"])[:5]:
        print("    error: " + e[:300])


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--kprof", default=os.path.join(HERE, "..", "build", "kprof"))
    ap.add_argument("--kernels", type=int, default=1000000, help="the big trace (0: none)")
    ap.add_argument("--small-kernels", type=int, default=5000,
                    help="the small trace: 2 * N + 1 events (0: none)")
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--timeout", type=float, default=120.0,
                    help="seconds Chromium may take to start and to draw a page")
    ap.add_argument("--keep", help="keep the traces and pages in this folder")
    ap.add_argument("--json")
    ap.add_argument("--strict", action="store_true", help="exit 1 where a goal was missed")
    a = ap.parse_args()
    kprof = os.path.abspath(a.kprof)
    if not chromium.chromium_path():
        sys.exit("html_pages.py: no chromium (scripts/install installs it)")
    tmp = os.path.abspath(a.keep) if a.keep else tempfile.mkdtemp(prefix="kprof-html-")
    os.makedirs(tmp, exist_ok=True)
    res = {"machine": {"cpus": os.cpu_count(), "cpu": cpu_model(), "platform":
                       platform.platform()},
           "kprof": version(kprof), "chromium": chromium_version(), "repeat": a.repeat}
    big = small = None
    try:
        if a.kernels:
            trace = os.path.join(tmp, "big.kprof")
            if os.path.exists(trace):
                os.unlink(trace)
            made = trace_scale.make_wide_trace(kprof, trace, a.kernels)
            big = page_case("%d kernels" % a.kernels, kprof, trace,
                            os.path.join(tmp, "big.html"), 2 * a.kernels + 1, a.repeat,
                            a.timeout)
            big["kernels"] = a.kernels
            big["trace_and_merge_s"] = made
            big["events"] = report_events(kprof, trace)
            res["big"] = big
        if a.small_kernels:
            trace = os.path.join(tmp, "small.kprof")
            if os.path.exists(trace):
                os.unlink(trace)
            made = small_trace(kprof, trace, a.small_kernels)
            events = report_events(kprof, trace)
            small = page_case("%d kernels" % a.small_kernels, kprof, trace,
                              os.path.join(tmp, "small.html"), events, a.repeat, a.timeout)
            small["kernels"] = a.small_kernels
            small["trace_and_merge_s"] = made
            res["small"] = small
    finally:
        if not a.keep:
            shutil.rmtree(tmp, ignore_errors=True)
    res["goals"] = goals_of(big, small)
    for c in (big, small):
        if c:
            print_case(c)
    print()
    print("%-44s %16s %14s  %s" % ("goal", "measured", "goal", ""))
    for g in res["goals"]:
        lim = g["limit"]
        shown = "%s %s" % (g["op"], fmt(lim, g["unit"]))
        print("%-44s %16s %14s  %s" % (g["goal"], fmt(g["measured"], g["unit"]), shown,
                                       "met" if g["met"] else "MISSED"))
    if a.json:
        with open(a.json, "w") as f:
            json.dump(res, f, indent=2)
            f.write("\n")
    if a.strict and not all(g["met"] for g in res["goals"]):
        sys.exit(1)


def cpu_model():
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if line.startswith("model name"):
                    return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor()


def version(kprof):
    p = subprocess.run([kprof, "--version"], capture_output=True, text=True)
    v = (p.stdout or p.stderr).strip()
    try:
        head = subprocess.run(["git", "-C", HERE, "rev-parse", "--short", "HEAD"],
                              capture_output=True, text=True).stdout.strip()
    except OSError:
        head = ""
    return "%s (%s)" % (v, head) if head else v


def chromium_version():
    p = subprocess.run([chromium.chromium_path(), "--version"], capture_output=True, text=True,
                       timeout=60)
    return p.stdout.strip()


if __name__ == "__main__":
    main()
