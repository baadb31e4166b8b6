"""kprof — the GPU kernel profiler, in Python.

A C extension over libkprof (include/kprof.h), with a thin layer of Python on top:

    import kprof
    with kprof.profile(opencl=True) as prof:      # scopes always; cuda= / opencl= collectors
        with kprof.scope("step", flops=2e9):
            run()
    print(prof.key_averages(group_by="call_path").table())
    prof.save("run.kprof")                        # kprof report run.kprof reads it

- profile(): a session (kprof_start / kprof_stop) and its results: key_averages(), tree(),
  events(), distributions(), and the exports (export_hatchet, export_chrome_trace,
  export_perfetto, save) written by libkprof, byte for byte what the C API writes.
- scope(name, flops=, bytes=, **metrics): a context manager and a decorator; free while no
  profile records.
- register_kernel_hook(name, fn): every launch of a kernel gets its flops and bytes.
- benchmark(fn) / compare(fn_a, fn_b): the device time of any callable, kprof bench's rules.
- profile_repeat(fn, time=1.0): Metal.jl's @bprofile.
- capture(name): hand a region to Nsight Systems / Nsight Compute.
- Trace(path): a .kprof trace: its kernels, SQL, `kprof report` and `kprof diff`.

Errors are exceptions: kprof.Error and one subclass per kprof status (InvalidError,
UnavailableError, ...), carrying libkprof's one-line reason. docs/guide/python.md is the guide.
"""

import atexit
import contextlib
import functools
import os
import sqlite3
import subprocess
import sys
import tempfile

from . import _kprof
from ._kprof import Error, scope

__all__ = [
    "Error", "profile", "scope", "register_kernel_hook", "benchmark", "compare",
    "profile_repeat", "capture", "Trace", "KeyAverages", "CallTree", "BenchmarkResult",
    "Comparison", "Result", "version", "recording", "bundled_command",
]

# kprof.InvalidError, kprof.UnavailableError, ...: one per kprof_status, made by the extension.
for _name in dir(_kprof):
    if _name.endswith("Error") and _name != "Error":
        globals()[_name] = getattr(_kprof, _name)
        __all__.append(_name)
del _name

__version__ = _kprof.version()

_HERE = os.path.dirname(os.path.abspath(__file__))


def version():
    """libkprof's version string ("0.1.0")."""
    return _kprof.version()


def recording():
    """True while a profile (a libkprof session) records in this process."""
    return _kprof.recording()


def _decorate(site, fn):
    """The function `@kprof.scope(name)` makes of fn: each call is a scope (kprof.scope's
    object, the same whether a profile records at def time or not)."""

    @functools.wraps(fn)
    def scoped(*args, **kwargs):
        with site:
            return fn(*args, **kwargs)

    return scoped


_kprof._set_decorator(_decorate)


@atexit.register
def _shutdown():
    # Before the interpreter goes: no hook may be called (a CUDA hook runs on kprof's collector
    # thread, which must not take the GIL of a finalizing interpreter), and a profile left
    # recording is stopped and discarded here rather than by libkprof's exit handler.
    for name in list(_kprof._hooked()):
        with contextlib.suppress(Error):
            _kprof.kernel_hook(name, None)
    if _kprof.recording():
        with contextlib.suppress(Error):
            _kprof.stop(False)


def _invalid(message):
    return InvalidError(message)  # noqa: F821 (made above from the extension)


def _choice(what, value, choices):
    if value not in choices:
        raise _invalid("%s must be one of %s, not %r" % (
            what, ", ".join(repr(c) for c in choices), value))
    return choices[value] if isinstance(choices, dict) else value


def _collectors(cuda, opencl, nvtx):
    c = _kprof.COLLECTORS
    bits = c["scopes"]
    for flag, name in ((cuda, "cuda"), (opencl, "opencl"), (nvtx, "nvtx")):
        if not isinstance(flag, bool):
            raise TypeError("%s= must be True or False, not %r" % (name, flag))
        if flag:
            bits |= c[name]
    return bits


def _to_pandas(rows, what):
    try:
        import pandas
    except ImportError as e:
        raise ImportError("%s.to_pandas() needs pandas, which is not installed: pip install "
                          "pandas (or pip install 'kprof[pandas]')" % what) from e
    return pandas.DataFrame(rows)


# ---- results --------------------------------------------------------------------------------

_GROUPS = {"name": 0, "call_path": 1, "path": 1}
_SORTS = {"total": "total", "self": "self", "gpu": "gpu", "calls": "calls",
          "cpu_total": "total", "host_total": "total", "self_cpu_total": "self",
          "gpu_total": "gpu", "cuda_time_total": "gpu", "count": "calls"}


class KeyAverages:
    """Key averages of a result, one row per name (group_by="name") or per call path
    (group_by="call_path"), largest total first.

    .rows        the rows as dicts: kind, name, path, calls, total_s, self_s, min_s, mean_s,
                 max_s, std_s, gpu_s, flops, bytes, gflops_per_s, gb_per_s,
                 host_gflops_per_s, host_gb_per_s (kprof_row's fields)
    .table()     the text table libkprof prints (kprof_result_print)
    .to_pandas() the rows as a pandas DataFrame (needs pandas)
    """

    def __init__(self, result, group_by, rows):
        self._result = result
        self.group_by = group_by
        self.rows = rows

    def __len__(self):
        return len(self.rows)

    def __iter__(self):
        return iter(self.rows)

    def __getitem__(self, i):
        return self.rows[i]

    def table(self, sort_by="total"):
        """The table as text. sort_by="total" (host time of scopes and calls, device time of
        device work) is libkprof's own text (kprof_result_print, byte for byte); "self", "gpu"
        ("gpu_total") and "calls" order the rows by that key, largest first, and give the text
        of `kprof report --by name|path --sort KEY` on the result's trace (the bundled kprof)."""
        key = _choice("sort_by", sort_by, _SORTS)
        view = "by-path" if self.group_by == "call_path" else "by-name"
        if key == "total":
            return self._result._print(view)
        by = "path" if self.group_by == "call_path" else "name"
        return self._result._report("--by", by, "--sort", key)

    def __str__(self):
        return self.table()

    def to_pandas(self):
        """The rows as a pandas DataFrame, one column per field (needs pandas)."""
        return _to_pandas(self.rows, "KeyAverages")


class CallTree:
    """The call tree of a result: .nodes (dicts, node 0 the root; parent, first_child and
    next_sibling are indices; inclusive_s, exclusive_s, calls, gpu_s, flops, bytes, ...: those of
    kprof_node), str() the text of `kprof report --tree` (kprof_result_print), .to_pandas()."""

    def __init__(self, result, nodes):
        self._result = result
        self.nodes = nodes

    def __len__(self):
        return len(self.nodes)

    def __iter__(self):
        return iter(self.nodes)

    def __getitem__(self, i):
        return self.nodes[i]

    def children(self, i=0):
        """The nodes under node i (the root's by default), largest first."""
        out, c = [], self.nodes[i]["first_child"]
        while c:
            out.append(self.nodes[c])
            c = self.nodes[c]["next_sibling"]
        return out

    def table(self):
        """The tree as text: libkprof's (kprof_result_print's TREE view)."""
        return self._result._print("tree")

    def __str__(self):
        return self.table()

    def to_pandas(self):
        """The nodes as a pandas DataFrame (needs pandas)."""
        return _to_pandas(self.nodes, "CallTree")


_DISPATCH_SQL = """
SELECT k.name, s.text, e.start_ns, e.end_ns, e.device, e.stream, e.correlation,
       e.grid_x, e.grid_y, e.grid_z, e.block_x, e.block_y, e.block_z, e.registers,
       e.static_smem, e.dynamic_smem, e.local_mem, e.bytes, e.copy_kind, e.queued_ns,
       e.submitted_ns, e.status%s
FROM events e JOIN kinds k ON k.id = e.kind LEFT JOIN strings s ON s.id = e.name
WHERE k.name IN ('kernel', 'memcpy', 'memset')
"""
_DISPATCH_FIELDS = ("device", "stream", "correlation", "grid", "block", "registers",
                    "static_smem", "dynamic_smem", "local_mem", "bytes", "copy_kind",
                    "queued_ns", "submitted_ns", "status", "flops", "metric_bytes")


class Result:
    """What one profile recorded (a libkprof result). Its views and exports; the .kprof trace
    behind it lives in a scratch folder until close() (or until the object is collected)."""

    def __init__(self, handle):
        self._h = handle
        self._trace = None  # the trace written once for events()' dispatch metadata and report

    def close(self):
        """Free the result and remove its scratch folder now."""
        if self._trace:
            with contextlib.suppress(OSError):
                os.unlink(self._trace)
                os.rmdir(os.path.dirname(self._trace))
            self._trace = None
        self._h.close()

    def _print(self, view):
        return self._h.print(_kprof.VIEWS[view])

    def _write(self, fmt, path, force):
        self._h.write(_kprof.FORMATS[fmt], os.fspath(path), bool(force))

    def _trace_path(self):
        if self._trace is None:
            d = tempfile.mkdtemp(prefix="kprof-py-")
            path = os.path.join(d, "result.kprof")
            self._write("kprof", path, False)
            self._trace = path
        return self._trace

    def _report(self, *args):
        # The trace is the session's, written out: name it as libkprof's own tables do.
        path = self._trace_path()
        text = _run_kprof(["report", path] + list(args))
        first, sep, rest = text.partition("\n")
        return first.replace(" of %s (" % path, " of the in-process session (", 1) + sep + rest

    def summary(self):
        """The whole session: events, dropped (lost on the way: 0 when whole), threads,
        start_ns, end_ns, host_s (kprof_result_summary)."""
        return self._h.summary()

    def key_averages(self, group_by="name"):
        """Key averages grouped by "name" (every call path of a name together) or by
        "call_path": a KeyAverages (.rows, .table(), .to_pandas())."""
        g = _choice("group_by", group_by, _GROUPS)
        return KeyAverages(self, "call_path" if g == 1 else "name", self._h.key_averages(g))

    def tree(self):
        """The call tree: a CallTree (.nodes; str() is the text of `kprof report --tree`)."""
        return CallTree(self, self._h.tree())

    def distributions(self):
        """One distribution per (kind, name): count, min_s, p50_s, p90_s, max_s, mean_s, std_s,
        total_s, flops and bytes per event (kprof_result_distributions)."""
        return self._h.distributions()

    def distributions_table(self):
        """The distributions as libkprof prints them (one line per name)."""
        return self._print("distributions")

    def events(self):
        """Every event in order of start, as dicts: kind ("range" for scopes, "api", "kernel",
        "memcpy", "memset", ...), name, start_ns, end_ns (CLOCK_MONOTONIC), pid, tid, id; device
        work carries its dispatch metadata too: device, stream, correlation, grid (threadgroups
        per dimension), block (threads per group; 0 where the runtime chose), registers,
        static_smem, dynamic_smem, local_mem, bytes, copy_kind, queued_ns, submitted_ns, status,
        flops and metric_bytes (None where unknown), as the trace's events table has them."""
        events = self._h.events()
        if not any(e["kind"] in ("kernel", "memcpy", "memset") for e in events):
            return events
        db = sqlite3.connect("file:%s?mode=ro" % self._trace_path(), uri=True)
        try:
            cols = {r[1] for r in db.execute("PRAGMA table_info(events)")}
            extra = "".join(", e." + c if c in cols else ", NULL"
                            for c in ("flops", "metric_bytes"))
            meta = {}
            for row in db.execute(_DISPATCH_SQL % extra):
                kind, name, start, end = row[:4]
                v = row[4:]
                meta.setdefault((kind, name or "", start, end), []).append({
                    "device": v[0], "stream": v[1], "correlation": v[2],
                    "grid": (v[3], v[4], v[5]) if v[3] is not None else None,
                    "block": (v[6], v[7], v[8]) if v[6] is not None else None,
                    "registers": v[9], "static_smem": v[10], "dynamic_smem": v[11],
                    "local_mem": v[12], "bytes": v[13], "copy_kind": v[14], "queued_ns": v[15],
                    "submitted_ns": v[16], "status": v[17], "flops": v[18],
                    "metric_bytes": v[19]})
        finally:
            db.close()
        for e in events:
            found = meta.get((e["kind"], e["name"], e["start_ns"], e["end_ns"]))
            if found:
                e.update(found.pop(0))
            elif e["kind"] in ("kernel", "memcpy", "memset"):
                e.update(dict.fromkeys(_DISPATCH_FIELDS))
        return events

    def save(self, path, force=False):
        """The .kprof trace (`kprof report`, `kprof export` and sqlite3 read it). An existing
        file is replaced only with force=True."""
        self._write("kprof", path, force)

    def export_chrome_trace(self, path, force=False):
        """Chrome trace event JSON (Perfetto UI, chrome://tracing), as `kprof export --chrome`."""
        self._write("chrome", path, force)

    def export_perfetto(self, path, force=False):
        """A native Perfetto trace (.pftrace), as `kprof export --perfetto`."""
        self._write("perfetto", path, force)

    def export_hatchet(self, path, force=False):
        """The call tree in Hatchet's literal format (hatchet.GraphFrame.from_literal)."""
        self._write("hatchet", path, force)

    def export_json(self, path, force=False):
        """The call tree as JSON (what `kprof report --tree --json` prints)."""
        self._write("json", path, force)

    def export_csv(self, path, force=False):
        """The call tree as CSV (what `kprof report --tree --csv` prints)."""
        self._write("csv", path, force)

    def export_html(self, path, force=False):
        """One offline HTML page (what `kprof report FILE --html` writes): the verdicts, the
        tables, the call tree, kernel histograms and the timeline, script and style inline."""
        self._write("html", path, force)

    def __del__(self):
        if getattr(self, "_trace", None):
            with contextlib.suppress(Exception):
                os.unlink(self._trace)
                os.rmdir(os.path.dirname(self._trace))


class profile:
    """A profile: a libkprof session from __enter__ (kprof_start) to __exit__ (kprof_stop).

        with kprof.profile(opencl=True) as prof:
            ...
        print(prof.key_averages().table())

    The scopes every thread opens are always recorded; cuda=True records the process's CUDA
    work (API calls, kernels, copies, syncs; CUPTI), opencl=True its OpenCL calls and device
    work (start the first profile before the program's first OpenCL call: the ICD loader takes
    kprof's layer in then), nvtx=True its NVTX ranges (on with cuda or opencl). One profile at
    a time per process. A collector that cannot run raises UnavailableError saying why (another
    profiler holding CUPTI, kprof trace around the program, ...). After the block, the results:
    key_averages(), tree(), events(), distributions(), summary(), and the exports
    export_hatchet(), export_chrome_trace(), export_perfetto(), export_json(), export_csv(),
    save() (libkprof's writers: byte for byte what the C API writes).
    """

    def __init__(self, cuda=False, opencl=False, nvtx=False, ring_entries=0, scratch_dir=None):
        self._collectors = _collectors(cuda, opencl, nvtx)
        if not isinstance(ring_entries, int) or ring_entries < 0:
            raise _invalid("ring_entries must be a count >= 0, not %r" % (ring_entries,))
        self._ring = ring_entries
        self._scratch = os.fspath(scratch_dir) if scratch_dir is not None else ""
        self._result = None
        self._running = False

    def start(self):
        """Start recording (what `with` does)."""
        if self._running:
            raise _invalid("this profile is recording already")
        if self._result is not None:
            raise _invalid("this profile has recorded already: make a new kprof.profile()")
        _kprof.start(self._collectors, self._ring, self._scratch)
        self._running = True
        return self

    def stop(self):
        """Stop recording and collect the result (what leaving `with` does)."""
        if not self._running:
            raise _invalid("this profile is not recording")
        self._running = False
        self._result = Result(_kprof.stop())
        return self

    def __enter__(self):
        return self.start()

    def __exit__(self, *exc):
        if self._running:
            self.stop()
        return False

    @property
    def result(self):
        """The Result (after the profile stopped)."""
        if self._result is None:
            raise _invalid("the profile is %s: its results come once it stopped" %
                           ("still recording" if self._running else "not started"))
        return self._result

    def __getattr__(self, name):
        # The results' calls (key_averages, tree, events, exports, ...) on the profile itself.
        if name.startswith("_") or not hasattr(Result, name):
            raise AttributeError(name)
        return getattr(self.result, name)


# ---- kernel hooks ---------------------------------------------------------------------------

def register_kernel_hook(name, fn):
    """Give every launch of kernel `name` its work without touching the call sites: while a
    profile records CUDA (or OpenCL), fn(kernel_name=..., grid=(x, y, z), threads=(x, y, z)) is
    called for each launch and returns a dict with "flops" and/or "bytes", which the results
    turn into GFLOP/s and GB/s of device time. CUDA: grid in blocks, threads per block; the name
    as CUDA has it, demangled, or demangled without parameters; fn runs on kprof's collector
    thread some time after the launch. OpenCL: the kernel's function name, grid in work-groups
    and threads the work-group size (threads 0 and grid the work-items where the runtime chose
    the group size); fn runs at the enqueue. An exception in fn, or a value other than such a
    dict, is reported through sys.unraisablehook and the launch gets no work. fn=None removes
    the hook."""
    _kprof.kernel_hook(name, fn)


# ---- benchmarks -----------------------------------------------------------------------------

_STOPS = ("noise", "settled", "budget", "runs", "decided")


def _device_collector(device):
    c = _kprof.COLLECTORS
    if device is None:
        gpu = any(m in sys.modules for m in ("torch", "cupy", "triton", "numba.cuda"))
        device = "opencl" if "pyopencl" in sys.modules and not gpu else "cuda"
    return device, c[_choice("device", device, ("cuda", "opencl"))]


def _bench_options(cache, warmup, min_runs, max_runs, budget, max_noise, flops, bytes,
                   device):
    for what, v in (("warmup", warmup), ("min_runs", min_runs), ("max_runs", max_runs)):
        if not isinstance(v, int) or isinstance(v, bool) or v < 0:
            raise _invalid("%s must be a count >= 0, not %r" % (what, v))
    if max_runs < max(min_runs, 1):
        raise _invalid("max_runs (%d) must be at least min_runs (%d)" % (max_runs, min_runs))
    for what, v, positive in (("budget", budget, True), ("max_noise", max_noise, False)):
        if not isinstance(v, (int, float)) or isinstance(v, bool) or not v == v or \
                (v <= 0 if positive else v < 0) or v == float("inf"):
            raise _invalid("%s must be a %s number, not %r" %
                           (what, "positive" if positive else "non-negative", v))
    for what, v in (("flops", flops), ("bytes", bytes)):
        if v is not None and (not isinstance(v, (int, float)) or isinstance(v, bool) or
                              not 0 <= v < float("inf")):
            raise _invalid("%s must be a number >= 0 (per call), not %r" % (what, v))
    device, collector = _device_collector(device)
    return {"cold": _choice("cache", cache, {"hot": False, "cold": True}), "warmup": warmup,
            "min_runs": min_runs, "max_runs": max_runs, "budget": float(budget),
            "max_noise": float(max_noise), "collector": collector,
            "flops": float(flops or 0), "bytes": float(bytes or 0)}, device


def _si(ns):
    for unit, scale in (("s", 1e9), ("ms", 1e6), ("us", 1e3)):
        if ns >= scale:
            return "%.4g %s" % (ns / scale, unit)
    return "%.4g ns" % ns


class BenchmarkResult:
    """The device time of a callable's work, run by run (kprof_benchmark_result): runs,
    kernels (device operations in the last run), min_ns, p50_ns, p90_ns, max_ns, mean_ns (per
    run: its first device operation's start to its last one's end), busy_p50_ns (the
    operations' own time), wall_p50_ns (host time of the call and its synchronize), lo_ns and
    hi_ns (p50's 95% interval), noise (its relative half-width), discarded (runs dropped while
    the clock was throttled), stop (the rule that stopped it: noise, settled, budget, runs,
    decided), flush_ns (cold: one flush), gbps, gflops, .samples (the kept runs' spans, ns) and
    summary()."""

    _FIELDS = ("runs", "kernels", "min_ns", "p50_ns", "p90_ns", "max_ns", "mean_ns",
               "busy_p50_ns", "wall_p50_ns", "lo_ns", "hi_ns", "noise", "discarded", "stop",
               "flush_ns", "gbps", "gflops", "samples")

    def __init__(self, d, cache="hot", device="cuda"):
        for f in self._FIELDS:
            setattr(self, f, d.get(f, [] if f == "samples" else None))
        self.cache = cache
        self.device = device

    def summary(self):
        """One block of text: min p50 mean p90 max, the 95% interval, samples, the stop rule,
        GB/s and GFLOP/s."""
        lines = ["%s (%s, %s): %d runs, %d device operations per run" % (
            "benchmark", self.device, self.cache, self.runs or 0, self.kernels or 0),
            "  min %s  p50 %s  mean %s  p90 %s  max %s" % tuple(
                _si(getattr(self, f) or 0) for f in ("min_ns", "p50_ns", "mean_ns", "p90_ns",
                                                     "max_ns"))]
        if self.lo_ns is not None:
            lines.append("  p50 95%% interval [%s, %s] (+-%.2f%%)" % (
                _si(self.lo_ns), _si(self.hi_ns), 100 * (self.noise or 0)))
        lines.append("  samples %d%s  stop: %s" % (
            len(self.samples or []) or (self.runs or 0),
            ", %d discarded (throttled)" % self.discarded if self.discarded else "",
            self.stop or "-"))
        if self.gbps:
            lines.append("  %.4g GB/s" % self.gbps)
        if self.gflops:
            lines.append("  %.4g GFLOP/s" % self.gflops)
        return "\n".join(lines)

    def __repr__(self):
        return "<kprof.BenchmarkResult p50 %s, %s runs>" % (_si(self.p50_ns or 0), self.runs)


class Comparison:
    """A / B by kprof's one comparison engine: ratio (B's p50 / A's), ci (its 95% interval,
    (lo, hi)), verdict ("SAME", "FASTER", "SLOWER" or "UNSURE": B against A), reasons (why
    UNSURE, as words: straddles, few, drift, modes, busy, small, one_run, runs, clock, invalid,
    libkprof's KPROF_UNSURE_* bits), reason (in a sentence), a and b (each side's
    BenchmarkResult)."""

    _REASONS = sorted((bit, word) for word, bit in _kprof.UNSURE_REASONS.items())

    def __init__(self, d, a=None, b=None):
        self.verdict = d["verdict"]
        self.ratio = d["ratio"]
        self.ci = (d["lo"], d["hi"])
        self.reasons = [w for bit, w in self._REASONS if d["reasons"] & bit]
        self.reason = d["reason"]
        self.a = a
        self.b = b

    def __repr__(self):
        return "<kprof.Comparison %s ratio %.4f [%.4f, %.4f]>" % (
            self.verdict, self.ratio, self.ci[0], self.ci[1])


def benchmark(fn, cache="hot", warmup=3, min_runs=10, max_runs=1000, budget=1.0,
              max_noise=0.005, flops=None, bytes=None, device=None):
    """Time the device work of fn() (any callable: torch, triton, cupy, pyopencl), as kprof
    bench does: `warmup` untimed calls, then runs (each synchronized, its device work read from
    device timestamps) until the median's 95% interval is within max_noise of it (after
    min_runs), or the noise settled, or `budget` seconds or `max_runs` runs went.
    cache="cold" flushes the device's L2 before every run (not timed). flops and bytes per call
    give GFLOP/s and GB/s. device: "cuda", "opencl" or None (OpenCL when pyopencl is imported and
    none of torch, cupy, triton is; else CUDA). Returns a BenchmarkResult. Raises
    UnavailableError when the device cannot be timed, InvalidError for bad options or a call
    that launched no device work, and whatever fn raised."""
    opts, dev = _bench_options(cache, warmup, min_runs, max_runs, budget, max_noise, flops,
                               bytes, device)
    return BenchmarkResult(_kprof.benchmark(fn, opts), cache, dev)


def compare(fn_a, fn_b, threshold=0.01, cache="hot", warmup=3, min_runs=10, max_runs=1000,
            budget=1.0, max_noise=0.005, flops=None, bytes=None, device=None):
    """Is fn_b faster than fn_a? Both are run interleaved in batches (A's, B's, ...) and the
    pairs judged by kprof's one comparison engine (kprof bench's: paired, its UNSURE and reasons
    included), stopping when it decides, on noise or on the budget. threshold: the SAME band
    (0.01: +-1%). The other options as benchmark(). Returns a Comparison (.ratio, .ci, .verdict,
    .reasons, .reason, .a, .b)."""
    if not isinstance(threshold, (int, float)) or not 0 < threshold < 1:
        raise _invalid("threshold must be a fraction in (0, 1), not %r" % (threshold,))
    opts, dev = _bench_options(cache, warmup, min_runs, max_runs, budget, max_noise, flops,
                               bytes, device)
    a, b, c = _kprof.compare(fn_a, fn_b, opts, float(threshold))
    return Comparison(c, BenchmarkResult(a, cache, dev), BenchmarkResult(b, cache, dev))


def compare_samples(a, b, threshold=0.01, paired=False):
    """kprof's comparison engine on two lists of samples (any one unit): is B faster than A?
    A Comparison (without .a and .b). Needs no device."""
    if not isinstance(threshold, (int, float)) or not 0 < threshold < 1:
        raise _invalid("threshold must be a fraction in (0, 1), not %r" % (threshold,))
    return Comparison(_kprof.compare_samples(list(a), list(b), float(threshold), bool(paired)))


def profile_repeat(fn, time=1.0, warmup=1, max_iterations=0, name="iteration", cuda=False,
                   opencl=False, nvtx=False):
    """Metal.jl's @bprofile: call fn() `warmup` times untimed, then in a profile again and again,
    each call a scope named `name`, until `time` seconds passed (at least one call) or
    max_iterations calls were made. Returns the Result: distributions() gives the iterations'
    (count, min, p50, p90, max, mean) and every scope's inside; distributions_table() prints
    them."""
    if not isinstance(time, (int, float)) or isinstance(time, bool) or not time > 0 or \
            time == float("inf"):
        raise _invalid("time must be a positive number of seconds, not %r" % (time,))
    for what, v in (("warmup", warmup), ("max_iterations", max_iterations)):
        if not isinstance(v, int) or isinstance(v, bool) or v < 0:
            raise _invalid("%s must be a count >= 0, not %r" % (what, v))
    if not isinstance(name, str) or not name:
        raise _invalid("name must be a non-empty str, not %r" % (name,))
    return Result(_kprof.profile_repeat(fn, float(time), warmup, max_iterations, name,
                                        _collectors(cuda, opencl, nvtx)))


@contextlib.contextmanager
def capture(name):
    """Hand the block to an external profiler (Enigma's capture): cuProfilerStart and an NVTX
    range named `name` around it (nsys --capture-range=cudaProfilerApi or
    --capture-range=nvtx --nvtx-capture=NAME; ncu --profile-from-start off). Raises
    UnavailableError where there is no CUDA to hand off to, InvalidError without a CUDA context
    or inside another capture."""
    if not isinstance(name, str) or not name:
        raise _invalid("a capture needs a non-empty name, not %r" % (name,))
    _kprof.capture_begin(name)
    try:
        yield
    finally:
        _kprof.capture_end()


# ---- traces and the kprof command ------------------------------------------------------------

def bundled_command():
    """The path of the `kprof` command this package carries (kprof/bin/kprof), or of the one
    $KPROF_COMMAND names."""
    env = os.environ.get("KPROF_COMMAND")
    if env:
        return env
    path = os.path.join(_HERE, "bin", "kprof")
    if not os.access(path, os.X_OK):
        raise UnavailableError(  # noqa: F821
            "the kprof command is not in this package (%s): set KPROF_COMMAND to one" % path)
    return path


_EXIT = {1: "IoError", 2: "InvalidError", 3: "UnavailableError", 4: "FaultError",
         5: "RegressionError"}


def _run_kprof(args, ok=(0,)):
    p = subprocess.run([bundled_command()] + [os.fspath(a) for a in args],
                       stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    if p.returncode not in ok:
        err = p.stderr.decode("utf-8", "backslashreplace").strip().splitlines()
        said = [x[len("kprof: error: "):] for x in err if x.startswith("kprof: error: ")]
        line = said[0] if said else err[-1] if err else "kprof %s exited with %d" % (
            args[0], p.returncode)
        raise globals().get(_EXIT.get(p.returncode, ""), Error)(line)
    return p.stdout.decode("utf-8", "backslashreplace")


class Trace:
    """A .kprof trace (kprof trace, kprof.profile().save(), KPROF=1): an SQLite database of
    documented schema (docs/formats/trace.md).

    .kernels()        the kernels: name, start_ns, end_ns, duration_ns, device, stream, grid,
                      block, flops, bytes
    .sql(query, ...)  any query on it (read-only), rows as tuples
    .report(*args)    the text `kprof report FILE ARGS...` prints (the bundled kprof)
    .diff(other)      the text `kprof diff FILE OTHER ARGS...` prints
    """

    def __init__(self, path):
        self.path = os.fspath(path)
        if not os.path.exists(self.path):
            raise NotFoundError("%s: no such trace" % self.path)  # noqa: F821
        if not os.path.isfile(self.path):
            raise InvalidError("%s is not a regular file" % self.path)  # noqa: F821
        try:
            fmt = self.sql("SELECT value FROM meta WHERE key = 'format'")
        except sqlite3.DatabaseError as e:
            raise CorruptError("%s is not a kprof trace: %s" % (self.path, e)) from None  # noqa
        if fmt != [("kprof-trace",)]:
            raise CorruptError("%s is not a kprof trace (no meta format kprof-trace)" %  # noqa
                               self.path)

    def sql(self, query, params=()):
        """Run a query on the trace (opened read-only): the rows as a list of tuples."""
        db = sqlite3.connect("file:%s?mode=ro" % self.path, uri=True)
        try:
            return db.execute(query, params).fetchall()
        finally:
            db.close()

    def kernels(self):
        """The trace's kernels in order of start, as dicts."""
        cols = {r[1] for r in self.sql("PRAGMA table_info(events)")}
        flops = "e.flops" if "flops" in cols else "NULL"
        mbytes = "e.metric_bytes" if "metric_bytes" in cols else "NULL"
        rows = self.sql(
            "SELECT s.text, e.start_ns, e.end_ns, e.device, e.stream, e.grid_x, e.grid_y, "
            "e.grid_z, e.block_x, e.block_y, e.block_z, e.pid, e.tid, %s, %s FROM events e "
            "JOIN kinds k ON k.id = e.kind LEFT JOIN strings s ON s.id = e.name "
            "WHERE k.name = 'kernel' ORDER BY e.start_ns, e.id" % (flops, mbytes))
        return [{"name": r[0], "start_ns": r[1], "end_ns": r[2], "duration_ns": r[2] - r[1],
                 "device": r[3], "stream": r[4], "grid": (r[5], r[6], r[7]),
                 "block": (r[8], r[9], r[10]), "pid": r[11], "tid": r[12], "flops": r[13],
                 "bytes": r[14]} for r in rows]

    def report(self, *args):
        """What `kprof report FILE ARGS...` prints (e.g. report("--tree"), report("--by",
        "name")), byte for byte: the bundled kprof runs it. Raises the kprof error of its exit
        status with its message."""
        return _run_kprof(["report", self.path] + list(args))

    def diff(self, other, *args):
        """What `kprof diff FILE OTHER ARGS...` prints (other: a path or a Trace)."""
        other = other.path if isinstance(other, Trace) else other
        return _run_kprof(["diff", self.path, other] + list(args), ok=(0, 5))

    def __repr__(self):
        return "kprof.Trace(%r)" % self.path
