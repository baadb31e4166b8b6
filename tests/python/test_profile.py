"""kprof.profile, kprof.scope and the results, in this process (scopes only: no OpenCL here, see
test_opencl.py): the rows, the tree, the events, the exports byte for byte as `kprof export`
writes them from the saved trace, Trace.report() as `kprof report` prints it, the errors, threads,
the decorator, and off-is-free (no allocation around 10,000 scopes while no profile records)."""

import csv
import json
import os
import re
import subprocess
import sys
import threading
import tracemalloc

import pytest

import kprof


def work(steps=3, leaves=2):
    for _ in range(steps):
        with kprof.scope("step"):
            for _ in range(leaves):
                with kprof.scope("leaf", flops=1e6, bytes=4e6, items=10):
                    sum(range(100))


@pytest.fixture
def prof():
    with kprof.profile() as p:
        work()
    yield p
    p.close()


def test_key_averages_and_tree(prof):
    by_name = prof.key_averages()
    assert {r["name"]: r["calls"] for r in by_name.rows} == {"step": 3, "leaf": 6}
    by_path = prof.key_averages(group_by="call_path")
    rows = {r["path"]: r for r in by_path.rows}
    assert set(rows) == {"step", "step/leaf"}
    assert rows["step/leaf"]["flops"] == 6e6 and rows["step/leaf"]["bytes"] == 24e6
    assert rows["step"]["total_s"] >= rows["step/leaf"]["total_s"] > 0
    tree = prof.tree()
    top = tree.children()
    assert [(n["name"], n["calls"]) for n in top] == [("step", 3)]
    assert [(n["path"], n["calls"]) for n in tree.children(tree.nodes.index(top[0]))] == [
        ("step/leaf", 6)]
    assert prof.summary()["events"] == 9 and prof.summary()["dropped"] == 0
    d = {x["name"]: x for x in prof.distributions()}
    assert d["leaf"]["count"] == 6 and d["step"]["count"] == 3


def test_tables_are_libkprofs(prof, tmp_path, kprof_command):
    """The tables are kprof_result_print's; kprof report of the saved trace prints the same
    table under its own header line (the trace's name)."""
    trace = str(tmp_path / "run.kprof")
    prof.save(trace)
    for args, text in ((["--tree"], str(prof.tree())),
                       (["--by", "name"], prof.key_averages().table()),
                       (["--by", "path"], prof.key_averages("call_path").table())):
        cli = subprocess.run([kprof_command, "report", trace] + args, capture_output=True,
                             text=True, check=True).stdout
        assert text.splitlines()[0].startswith(cli.splitlines()[0].split(" of ")[0])
        assert "of the in-process session (" in text.splitlines()[0]
        assert text.splitlines()[1:] == cli.splitlines()[1:]
    calls = prof.key_averages().table(sort_by="calls")
    cli = subprocess.run([kprof_command, "report", trace, "--by", "name", "--sort", "calls"],
                         capture_output=True, text=True, check=True).stdout
    assert calls.splitlines()[1:] == cli.splitlines()[1:]
    assert calls.index(" leaf") < calls.index(" step")  # 6 calls before 3
    assert "by calls" in calls.splitlines()[0]


def test_report_is_the_commands(prof, tmp_path, kprof_command):
    trace = str(tmp_path / "run.kprof")
    prof.save(trace)
    t = kprof.Trace(trace)
    for args in ([], ["--tree"], ["--by", "path"], ["--trace"]):
        cli = subprocess.run([kprof_command, "report", trace] + args, capture_output=True,
                             check=True).stdout
        assert t.report(*args).encode() == cli, args
    assert t.sql("SELECT count(*) FROM event_view WHERE kind = 'range'") == [(9,)]
    # a metric of its own (items=10 on every leaf) goes into the trace as it is
    assert t.sql("SELECT count(*), sum(m.value) FROM metrics m JOIN strings s ON s.id = m.key "
                 "WHERE s.text = 'items'") == [(6, 60.0)]
    assert t.kernels() == []
    other = str(tmp_path / "other.kprof")
    prof.save(other)
    cli = subprocess.run([kprof_command, "diff", trace, other], capture_output=True).stdout
    assert t.diff(other).encode() == cli
    assert t.diff(kprof.Trace(other)).encode() == cli


def test_exports_are_kprof_exports(prof, tmp_path, kprof_command):
    trace = str(tmp_path / "run.kprof")
    prof.save(trace)
    for method, option, suffix in (("export_chrome_trace", "--chrome", ".json"),
                                   ("export_perfetto", "--perfetto", ".pftrace"),
                                   ("export_hatchet", "--hatchet", ".hatchet.json"),
                                   ("export_csv", "--csv", ".csv"),
                                   ("export_json", "--json", ".tree.json"),
                                   ("export_html", "--html", ".html")):
        mine, cli = str(tmp_path / ("mine" + suffix)), str(tmp_path / ("cli" + suffix))
        getattr(prof, method)(mine)
        subprocess.run([kprof_command, "export", trace, option, cli], check=True)
        a, b = open(mine, "rb").read(), open(cli, "rb").read()
        if option == "--json":  # the call tree's JSON names its trace: the session, the file
            a, b = json.loads(a), json.loads(b)
            assert a.pop("trace") == "the in-process session"
            b.pop("trace")
        if option == "--html":  # the page names its trace too, in its title and data
            data = re.compile(rb'<script type="application/json" id="kprof-data">(.*?)</script>',
                              re.S)
            a, b = (json.loads(data.search(x).group(1)) for x in (a, b))
            for d in (a, b):
                d.pop("title")
                d["report"].pop("trace")
                d["tree"].pop("trace")
            assert a["tree"]["nodes"] and a["timeline"]["events"] == 9
        assert a == b, option
    doc = json.load(open(str(tmp_path / "mine.json")))
    names = sorted(e["name"] for e in doc["traceEvents"] if e.get("ph") == "X")
    assert names == ["leaf"] * 6 + ["step"] * 3
    rows = list(csv.DictReader(open(str(tmp_path / "mine.csv"))))
    assert {r["path"]: int(r["calls"]) for r in rows} == {"step": 3, "step/leaf": 6}
    # the trace itself, byte for byte
    prof.save(str(tmp_path / "again.kprof"))
    assert open(trace, "rb").read() == open(str(tmp_path / "again.kprof"), "rb").read()


def test_hatchet_reads_the_export(prof, tmp_path):
    ht = pytest.importorskip("hatchet", reason="llnl-hatchet is not installed")
    path = str(tmp_path / "p.json")
    prof.export_hatchet(path)
    gf = ht.GraphFrame.from_literal(json.load(open(path)))
    calls = {"/".join(n.frame["name"] for n in node.path()[1:]): gf.dataframe.loc[node]["calls"]
             for node in gf.graph.traverse()}
    assert calls == {"": 0, "step": 3, "step/leaf": 6}


def test_perfetto_decodes(prof, tmp_path):
    """The Perfetto export decoded with perfetto's own protobuf classes, as cli.perfetto and
    cli.inproc decode kprof's (tests/cli/test_perfetto.py's decoder)."""
    sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "cli"))
    import unittest
    import test_perfetto
    test_perfetto.perfetto_protos()  # raises SkipTest, saying why, without the classes
    path = str(tmp_path / "t.pftrace")
    prof.export_perfetto(path)
    d = test_perfetto.Decoded(unittest.TestCase(), path)
    shape = sorted({(s["name"], s["depth"], s["parent"]["name"] if s["parent"] else None)
                    for s in d.slices})
    assert shape == [("leaf", 1, "step"), ("step", 0, None)]
    assert len(d.slices) == 9
    assert len({s["track"] for s in d.slices}) == 1


def test_events(prof):
    ev = prof.events()
    assert [e["name"] for e in ev].count("leaf") == 6
    assert all(e["kind"] == "range" and e["end_ns"] >= e["start_ns"] for e in ev)
    starts = [e["start_ns"] for e in ev]
    assert starts == sorted(starts)
    assert {e["tid"] for e in ev} == {threading.get_native_id()}


def test_pandas(prof):
    try:
        import pandas  # noqa: F401
    except ImportError:
        with pytest.raises(ImportError, match="needs pandas"):
            prof.key_averages().to_pandas()
        return
    df = prof.key_averages().to_pandas()
    assert set(df["name"]) == {"step", "leaf"}


def test_errors():
    with pytest.raises(kprof.InvalidError, match="group_by must be one of"):
        with kprof.profile() as p:
            pass
        p.key_averages(group_by="nope")
    with pytest.raises(kprof.InvalidError, match="a session is already running"):
        with kprof.profile():
            kprof.profile().start()
    assert not kprof.recording()
    with pytest.raises(kprof.InvalidError, match="not started"):
        kprof.profile().key_averages()
    with pytest.raises(TypeError, match="cuda= must be True or False"):
        kprof.profile(cuda=1)
    with pytest.raises(kprof.InvalidError, match="must not be empty"):
        kprof.scope("")
    with pytest.raises(TypeError, match="must be a str"):
        kprof.scope(3)
    with pytest.raises(TypeError, match=r"exactly one positional argument \(0 given\)"):
        kprof.scope()
    with pytest.raises(TypeError, match=r"exactly one positional argument \(2 given\)"):
        kprof.scope("x", "y")
    with pytest.raises(TypeError, match="flops must be a number"):
        kprof.scope("x", flops="many")
    with pytest.raises(kprof.InvalidError, match="finite"):
        kprof.scope("x", bytes=float("nan"))
    with pytest.raises(kprof.NotFoundError, match="no such trace"):
        kprof.Trace("/no/such/file.kprof")
    assert issubclass(kprof.InvalidError, ValueError)
    for name in ("InvalidError", "NotFoundError", "UnavailableError", "CompileError",
                 "FaultError", "TimeoutError", "NomemError", "IoError", "CorruptError",
                 "BackendError", "RegressionError"):
        assert issubclass(getattr(kprof, name), kprof.Error)
    assert kprof.UnavailableError.status == "UNAVAILABLE"
    assert kprof.UnavailableError.exit_code == 3


def test_write_errors(prof, tmp_path):
    path = str(tmp_path / "run.kprof")
    prof.save(path)
    with pytest.raises(kprof.InvalidError, match="exists; pass KPROF_WRITE_FORCE"):
        prof.save(path)
    prof.save(path, force=True)
    with pytest.raises(kprof.Error, match="kprof_result_write"):
        prof.export_chrome_trace(str(tmp_path / "no" / "such" / "dir" / "t.json"))
    junk = tmp_path / "junk.kprof"
    junk.write_bytes(b"not a trace at all" * 100)
    with pytest.raises(kprof.CorruptError, match="not a kprof trace"):
        kprof.Trace(str(junk))
    with pytest.raises(kprof.InvalidError, match="no-such-option"):
        kprof.Trace(path).report("--no-such-option")
    prof.close()
    with pytest.raises(kprof.InvalidError, match="closed"):
        prof.key_averages()


def test_threads():
    """Scopes are per thread; a profile started on this thread records every thread's."""
    barrier = threading.Barrier(4)

    def body():
        barrier.wait()
        work(steps=5, leaves=1)

    with kprof.profile() as p:
        threads = [threading.Thread(target=body) for _ in range(4)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
    rows = {r["path"]: r["calls"] for r in p.key_averages("call_path").rows}
    assert rows == {"step": 20, "step/leaf": 20}
    assert p.summary()["threads"] == 4
    assert len({e["tid"] for e in p.events()}) == 4


def test_decorator_either_way():
    @kprof.scope("before")  # made while no profile records
    def f(x):
        return x * 2

    with kprof.profile() as p:
        @kprof.scope("during")  # made while one does
        def g(x):
            return f(x) + 1

        assert [g(i) for i in range(3)] == [1, 3, 5]
    assert g.__name__ == "g" and f.__wrapped__(2) == 4
    assert {r["path"]: r["calls"] for r in p.key_averages("call_path").rows} == {
        "during": 3, "during/before": 3}
    with kprof.profile() as p:
        f(1)
    assert [r["calls"] for r in p.key_averages().rows] == [1]


def test_recursion_and_one_site():
    site = kprof.scope("rec")
    assert kprof.scope("rec") is site

    def rec(n):
        with site:
            if n:
                rec(n - 1)

    with kprof.profile() as p:
        rec(4)
    assert {r["path"]: r["calls"] for r in p.key_averages("call_path").rows} == {
        "/".join(["rec"] * k): 1 for k in range(1, 6)}
    assert kprof._kprof._open_scopes() == 0


def test_scope_across_start_and_stop():
    """A scope open when the profile starts is not recorded, and leaves nothing on the stack; one
    open when it stops is dropped too."""
    s = kprof.scope("across")
    with s:
        with kprof.profile() as p:
            with kprof.scope("inside"):
                pass
    assert [r["name"] for r in p.key_averages().rows] == ["inside"]
    p2 = kprof.profile().start()
    with s:
        p2.stop()
    assert kprof._kprof._open_scopes() == 0
    assert p2.key_averages().rows == []


def test_exception_inside_scope():
    with kprof.profile() as p:
        with pytest.raises(ZeroDivisionError):
            with kprof.scope("boom"):
                1 / 0
    assert [r["calls"] for r in p.key_averages().rows] == [1]


def test_off_is_free():
    """No profile: 10,000 scope pairs allocate nothing (tracemalloc and the interpreter's block
    count), and return the one cached object."""
    site = kprof.scope("off")
    assert not kprof.recording()

    def loop():
        for _ in range(10000):
            with kprof.scope("off"):
                pass

    loop()  # warm
    tracemalloc.start()
    try:
        before = tracemalloc.take_snapshot()
        loop()
        after = tracemalloc.take_snapshot()
    finally:
        tracemalloc.stop()
    grown = [s for s in after.compare_to(before, "filename") if s.size_diff > 0 and
             "tracemalloc" not in str(s.traceback)]
    assert sum(s.size_diff for s in grown) < 512, grown[:5]
    blocks = sys.getallocatedblocks()
    loop()
    assert sys.getallocatedblocks() - blocks < 10
    assert kprof.scope("off") is site


def test_profile_repeat():
    calls = []

    def fn():
        calls.append(1)
        with kprof.scope("inner"):
            pass

    r = kprof.profile_repeat(fn, time=0.05, warmup=2, max_iterations=7)
    d = {x["name"]: x for x in r.distributions()}
    assert d["iteration"]["count"] == 7 and d["inner"]["count"] == 7
    assert len(calls) == 9
    assert "iteration: 7 calls" in r.distributions_table()
    with pytest.raises(kprof.InvalidError, match="time must be a positive"):
        kprof.profile_repeat(fn, time=0)

    def bad():
        raise RuntimeError("from the workload")

    with pytest.raises(RuntimeError, match="from the workload"):
        kprof.profile_repeat(bad, time=0.05, warmup=0)
    assert not kprof.recording()


def test_capture_raises_without_cuda():
    with pytest.raises(kprof.Error) as e:
        with kprof.capture("region"):
            pass
    assert type(e.value) in (kprof.UnavailableError, kprof.InvalidError)
    assert "kprof_capture_begin" in str(e.value)
    with pytest.raises(kprof.InvalidError, match="non-empty name"):
        with kprof.capture(""):
            pass


def test_compare_samples():
    a = [10.0 + 0.01 * (i * 7 % 5) for i in range(60)]
    assert kprof.compare_samples(a, a).verdict == "SAME"
    c = kprof.compare_samples(a, [0.8 * x for x in a])
    assert c.verdict == "FASTER" and abs(c.ratio - 0.8) < 1e-9 and c.ci[0] <= 0.8 <= c.ci[1]
    c = kprof.compare_samples([1.0], [2.0])
    assert c.verdict == "UNSURE" and "few" in c.reasons and c.reason
    with pytest.raises(kprof.InvalidError, match="kprof_compare"):
        kprof.compare_samples([], [1.0])


def test_benchmark_bad_arguments():
    with pytest.raises(kprof.InvalidError, match="cache must be one of"):
        kprof.benchmark(lambda: None, cache="warm")
    with pytest.raises(kprof.InvalidError, match="budget must be a positive"):
        kprof.benchmark(lambda: None, budget=-1)
    with pytest.raises(kprof.InvalidError, match="max_runs"):
        kprof.benchmark(lambda: None, min_runs=10, max_runs=5)
    with pytest.raises(kprof.InvalidError, match="device must be one of"):
        kprof.benchmark(lambda: None, device="metal")
    with pytest.raises(kprof.InvalidError, match="threshold"):
        kprof.compare(lambda: None, lambda: None, threshold=2)
    with pytest.raises(TypeError, match="callable"):
        kprof.benchmark(42)


def test_exit_with_a_profile_and_a_hook_left():
    """A profile left recording and a hook left set at exit: the process ends cleanly."""
    p = subprocess.run([sys.executable, "-c", "import kprof\n"
                        "kprof.register_kernel_hook('k', lambda **kw: {'flops': 1.0})\n"
                        "kprof.profile().start()\n"
                        "with kprof.scope('open at exit'): pass\n"],
                       capture_output=True, text=True, timeout=120)
    assert p.returncode == 0 and p.stderr == "", p.stderr


def test_kernel_hook_arguments():
    with pytest.raises(TypeError, match="callable"):
        kprof.register_kernel_hook("k", 3)
    with pytest.raises(TypeError, match="str"):
        kprof.register_kernel_hook(3, lambda **k: {})
    with pytest.raises(kprof.InvalidError, match="no kernel name"):
        kprof.register_kernel_hook("", lambda **k: {})
    kprof.register_kernel_hook("k", lambda **k: {})
    kprof.register_kernel_hook("k", None)


def test_command_on_path():
    exe = os.path.join(os.path.dirname(sys.executable), "kprof")
    p = subprocess.run([exe, "--version"], capture_output=True, text=True)
    assert p.returncode == 0 and kprof.version() in p.stdout
    p = subprocess.run([sys.executable, "-m", "kprof", "--version"], capture_output=True, text=True)
    assert p.returncode == 0 and kprof.version() in p.stdout


def test_wheel_layout():
    """The extension is the limited-API build, its libkprof the package's own."""
    ext = kprof._kprof.__file__
    assert ext.endswith("_kprof.abi3.so")
    here = os.path.dirname(kprof.__file__)
    for f in ("lib/libkprof.so.0", "lib/libkprof-inject.so", "bin/kprof"):
        assert os.path.isfile(os.path.join(here, f)), f
    maps = open("/proc/self/maps").read()
    assert os.path.realpath(os.path.join(here, "lib", "libkprof.so.0")) in maps
