#!/usr/bin/env python3
"""bench/python_scope_cost.py [--json OUT] [--number N] — what `with kprof.scope(name):` costs
from Python (issue 25's goals: off <= 100 ns, on <= 1 us per scope pair), with timeit:

  pass      the loop alone (`pass`)
  lock      `with lock:` of a threading.Lock held in a variable: the cheapest C-level context
            manager the interpreter has, the baseline of the `with` statement itself
  off       `with kprof.scope("x"):` with no profile recording: kprof.scope's dict lookup, the
            site's __enter__/__exit__ reading libkprof's flag
  off_site  the same with the site held in a variable (no lookup)
  on        the same while a profile records (kprof_scope_open_/close_, the per-thread stack)
  on_site   ... the site held
  on_metric `with kprof.scope("x", flops=1.0):` recording (a scope object with its metric)

Each figure is ns per scope pair: the best of 5 timeit repeats of N pairs, minus nothing (the
baseline is printed beside them). Run with the package installed (pip install .) or with
PYTHONPATH=BUILD/python after a -DKPROF_PYTHON=ON build."""

import argparse
import json
import platform
import sys
import threading
import timeit

import kprof


def best_ns(stmt, setup, number, glob):
    t = timeit.Timer(stmt, setup=setup, globals=glob)
    return min(t.repeat(repeat=5, number=number)) / number * 1e9


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--number", type=int, default=200000)
    ap.add_argument("--json")
    args = ap.parse_args()
    n = args.number
    site = kprof.scope("x")
    g = {"kprof": kprof, "lock": threading.Lock(), "site": site}
    loop = "with %s:\n    pass"
    out = {"python": sys.version.split()[0], "machine": platform.processor() or platform.machine(),
           "number": n}
    out["pass"] = best_ns("pass", "", n, g)
    out["lock"] = best_ns(loop % "lock", "", n, g)
    out["off"] = best_ns(loop % 'kprof.scope("x")', "", n, g)
    out["off_site"] = best_ns(loop % "site", "", n, g)
    # Recording: a ring per thread large enough that the loop never drains its own.
    with kprof.profile(ring_entries=1 << 22) as prof:
        out["on"] = best_ns(loop % 'kprof.scope("x")', "", n // 4, g)
        out["on_site"] = best_ns(loop % "site", "", n // 4, g)
        out["on_metric"] = best_ns(loop % 'kprof.scope("x", flops=1.0)', "", n // 4, g)
    s = prof.summary()
    out["recorded"] = s["events"]
    out["dropped"] = s["dropped"]
    prof.close()
    for k in ("pass", "lock", "off", "off_site", "on", "on_site", "on_metric"):
        print("%-10s %8.1f ns per scope pair" % (k, out[k]))
    print("recorded %d scopes, %d dropped" % (out["recorded"], out["dropped"]))
    if args.json:
        with open(args.json, "w") as f:
            json.dump(out, f, indent=1)
            f.write("\n")


if __name__ == "__main__":
    main()
