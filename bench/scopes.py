#!/usr/bin/env python3
"""bench/scopes.py [BUILD] [--quick] [--json OUT] — what a libkprof scope costs (bench/scopes.c):

  off        ns per scope pair with no session (the flag's load and a branch)
  out        ns per scope pair compiled out (-DKPROF_DISABLE)
  on         ns per scope pair while a session records, the hot path alone (a ring large enough
             for the loop: no slow path), with the time-stamp counter and with clock_gettime
             (KPROF_CLOCK=monotonic)
  on, full   ... with the default ring, so the thread drains its own full ring now and then
             (the drain writes 128-byte records: this is the sustained rate of one thread)
  instrs     instructions a scope executes with no session: valgrind --tool=lackey's count of
             N calls of a function with a scope minus N of the same function without, / N
             (perf stat's hardware counters are not available in this VM); and the off path of
             bench_scoped as objdump shows it
  threads    16 threads x 1M scopes (--quick: x 100k) in one session: every scope in the result
             or counted lost

Each timing is the best of 5 runs of its loop inside the program (bench/scopes.c)."""

import json
import os
import re
import shutil
import subprocess
import sys


def run(cmd, env=None):
    e = dict(os.environ)
    e.pop("KPROF", None)
    e.update(env or {})
    p = subprocess.run(cmd, capture_output=True, text=True, env=e, timeout=3600)
    if p.returncode != 0:
        sys.exit("bench/scopes.py: %s failed:\n%s%s" % (" ".join(cmd), p.stdout, p.stderr))
    return p.stdout


def ns(text):
    return float(re.search(r": (-?[\d.]+) ns per scope pair", text).group(1))


def main():
    args = [a for a in sys.argv[1:] if not a.startswith("--")]
    quick = "--quick" in sys.argv
    out = sys.argv[sys.argv.index("--json") + 1] if "--json" in sys.argv else None
    if out in args:
        args.remove(out)
    build = args[0] if args else os.path.join(os.path.dirname(__file__), "..", "build")
    bench = os.path.join(build, "bench_scopes")
    disabled = os.path.join(build, "bench_scopes_disabled")
    r = {}
    r["off_ns"] = ns(run([bench, "off", "20000000"]))
    r["out_ns"] = ns(run([disabled, "off", "20000000"]))
    r["on_ns"] = ns(run([bench, "on", "1000000", "2097152"]))
    r["on_monotonic_ns"] = ns(run([bench, "on", "1000000", "2097152"],
                                  {"KPROF_CLOCK": "monotonic"}))
    r["on_full_ring_ns"] = ns(run([bench, "on", "2000000"]))
    if shutil.which("valgrind"):
        counts = {}
        for mode in ("scoped", "plain"):
            p = subprocess.run(["valgrind", "--tool=lackey", "--basic-counts=yes", bench, "count",
                                mode, "1000000"], capture_output=True, text=True)
            counts[mode] = int(re.search(r"guest instrs:\s+([\d,]+)", p.stderr).group(1)
                               .replace(",", ""))
        r["off_instructions"] = (counts["scoped"] - counts["plain"]) / 1e6
    if shutil.which("objdump"):
        dis = run(["objdump", "-d", "--no-show-raw-insn", bench])
        body = re.search(r"<bench_scoped>:\n(.*?)\n\n", dis, re.S).group(1).splitlines()
        # The off path: from the entry to the first return.
        path = []
        for line in body:
            path.append(line.split(":", 1)[1].strip())
            if path[-1].startswith("ret"):
                break
        r["off_path_disassembly"] = path
    t, n = 16, 100000 if quick else 1000000
    text = run([bench, "threads", str(t), str(n)])
    m = re.search(r"(\d+) in the result, (\d+) counted lost, (\d+) missing; ([\d.]+) s recording "
                  r"\(([\d.]+) ns.*?([\d.]+) s kprof_stop", text)
    r["threads"] = {"threads": t, "scopes_each": n, "in_result": int(m.group(1)),
                    "counted_lost": int(m.group(2)), "missing": int(m.group(3)),
                    "recording_s": float(m.group(4)), "wall_ns_per_scope": float(m.group(5)),
                    "stop_s": float(m.group(6))}
    print("scope pair, no session:        %6.2f ns" % r["off_ns"])
    print("scope pair, compiled out:      %6.2f ns" % r["out_ns"])
    print("scope pair, recording (rdtsc): %6.2f ns  (hot path: the ring never full)" % r["on_ns"])
    print("scope pair, recording (clock_gettime): %6.2f ns" % r["on_monotonic_ns"])
    print("scope pair, recording, default ring:   %6.2f ns  (the thread drains its own full "
          "ring: 128-byte records written)" % r["on_full_ring_ns"])
    if "off_instructions" in r:
        print("instructions per scope, no session: %.2f (valgrind lackey)" % r["off_instructions"])
    if "off_path_disassembly" in r:
        print("off path of bench_scoped (%d instructions, the function's own store and ret "
              "included):" % len(r["off_path_disassembly"]))
        for line in r["off_path_disassembly"]:
            print("    " + line)
    th = r["threads"]
    print("%d threads x %d scopes: %d in the result, %d counted lost, %d missing; recording %.2f s "
          "(%.1f ns wall per scope), kprof_stop %.2f s" % (
              th["threads"], th["scopes_each"], th["in_result"], th["counted_lost"],
              th["missing"], th["recording_s"], th["wall_ns_per_scope"], th["stop_s"]))
    if out:
        with open(out, "w") as f:
            json.dump(r, f, indent=2)
            f.write("\n")
    return 0 if th["missing"] == 0 else 1


if __name__ == "__main__":
    sys.exit(main())
