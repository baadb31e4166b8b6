"""The Hatchet export (src/export/hatchet.c) loads in the real hatchet: `llnl-hatchet` from PyPI
(a manylinux wheel), installed in this test's own virtual environment under the build folder
(kpvenv), reads it with hatchet.GraphFrame.from_literal, and the tree and metrics it reads back
are the ones the aggregate (src/core/aggregate.c) must produce for tests/programs/hatchet_tree.c's
timeline and, through `kprof export --hatchet`, for a merged trace of one like it (tree_trace.py): node
names and types, calls, inclusive and exclusive host time, GPU time attributed to the launching
call's path (a kernel that ran after its range closed included), device work with
no recorded call under (unattributed), a name that was not UTF-8. Hatchet's own subtree sums of
the exclusive columns must give back our inclusive ones. Skips, saying why, when hatchet cannot
be installed (no python3-venv, no network)."""

import json
import os
import subprocess
import unittest

import kptest
import kpvenv
import tree_trace

TREE = os.environ.get("KPROF_HATCHET_TREE")
HATCHET = "llnl-hatchet==2026.2.0"

# Runs inside the virtual environment: what hatchet made of the file, as JSON on stdout.
READ_BACK = r"""
import json, sys
import hatchet as ht
gf = ht.GraphFrame.from_literal(json.load(open(sys.argv[1], encoding="utf-8")))
metrics = list(gf.exc_metrics) + list(gf.inc_metrics)
# hatchet's own inclusive sums of our exclusive columns (new columns; ours stay as read)
gf.subgraph_sum(["time", "gpu_time"], ["time sum", "gpu_time sum"])
nodes = []
for node in gf.graph.traverse():
    row = gf.dataframe.loc[node]
    nodes.append({
        "path": [n.frame["name"] for n in node.path()],
        "type": node.frame["type"],
        "name": row["name"],
        "children": [c.frame["name"] for c in node.children],
        "metrics": {m: float(row[m]) for m in metrics + ["time sum", "gpu_time sum"]},
    })
print(json.dumps({"exc": list(gf.exc_metrics), "inc": list(gf.inc_metrics),
                  "default": gf.default_metric, "roots": len(gf.graph.roots),
                  "nodes": nodes, "tree": gf.tree(metric_column="time (inc)")}))
"""

MS = 1e-3
ROOT = "hatchet_tree"
NAIVE = "na\u00efve\u00ff"  # "naïve" then the byte 0xff, which the JSON writer wrote as \u00ff

# path below the root -> (type, calls, time (inc), time, gpu_time (inc), gpu_time, extra metrics)
EXPECTED = {
    (): ("root", 0, 11 * MS, 0, 5 * MS, 0, {"flops (inc)": 1e9, "bytes (inc)": 1 << 20}),
    ("train",): ("range", 1, 10 * MS, 2 * MS, 4.5 * MS, 0, {"flops (inc)": 1e9}),
    ("train", "step"): ("range", 2, 8 * MS, 5.8 * MS, 4.5 * MS, 0, {}),
    ("train", "step", "cudaLaunchKernel"): ("api", 2, 0.7 * MS, 0.7 * MS, 3.5 * MS, 0,
                                            {"flops": 0, "flops (inc)": 1e9}),
    ("train", "step", "cudaLaunchKernel", "gemm"): ("kernel", 2, 0, 0, 3.5 * MS, 3.5 * MS,
                                                    {"flops": 1e9, "flops (inc)": 1e9}),
    ("train", "step", "cudaMemcpy"): ("api", 1, 1.5 * MS, 1.5 * MS, 1 * MS, 0,
                                      {"bytes": 0, "bytes (inc)": 1 << 20}),
    ("train", "step", "cudaMemcpy", "[CUDA memcpy HtoD]"): ("memcpy", 1, 0, 0, 1 * MS, 1 * MS,
                                                            {"bytes": 1 << 20}),
    (NAIVE,): ("range", 1, 1 * MS, 1 * MS, 0, 0, {}),
    ("(unattributed)",): ("unattributed", 0, 0, 0, 0.5 * MS, 0, {}),
    ("(unattributed)", "orphan"): ("kernel", 1, 0, 0, 0.5 * MS, 0.5 * MS, {}),
}


class Hatchet(kptest.KprofTestCase):
    needs_opencl = False

    @classmethod
    def setUpClass(cls):
        super().setUpClass()
        if not TREE:
            raise unittest.SkipTest("KPROF_HATCHET_TREE not set (run through ctest)")
        cls.python = kpvenv.python_with("hatchet", [HATCHET])

    def export(self, *args):
        out = os.path.join(self.tmp, "tree.json")
        p = subprocess.run([TREE] + list(args) + [out], capture_output=True, text=True,
                           timeout=120)
        self.assertEqual(p.returncode, 0, p.stderr)
        with open(out, "rb") as f:
            json.loads(f.read().decode("utf-8"))  # strict UTF-8, valid JSON
        return out

    def read_back(self, path):
        p = subprocess.run([self.python, "-c", READ_BACK, path], capture_output=True, text=True,
                           timeout=300)
        self.assertEqual(p.returncode, 0, "hatchet could not load the export:\n" + p.stderr)
        return json.loads(p.stdout)

    def test_tree_and_metrics(self):
        got = self.read_back(self.export())
        self.assertEqual(got["roots"], 1)
        for m in ("time", "calls", "gpu_time", "flops", "bytes"):
            self.assertIn(m, got["exc"])
        for m in ("time (inc)", "gpu_time (inc)", "flops (inc)", "bytes (inc)"):
            self.assertIn(m, got["inc"])
        self.assertEqual(got["default"], "time")
        nodes = {tuple(n["path"][1:]): n for n in got["nodes"]}
        self.assertEqual(set(nodes), set(EXPECTED))
        for path, (kind, calls, inc, exc, gpu_inc, gpu, extra) in EXPECTED.items():
            n = nodes[path]
            m = n["metrics"]
            where = "/".join(path) or "root"
            self.assertEqual(n["path"][0], ROOT)
            self.assertEqual(n["name"], path[-1] if path else ROOT, where)
            self.assertEqual(n["type"], kind, where)
            self.assertEqual(m["calls"], calls, where)
            self.assertAlmostEqual(m["time (inc)"], inc, delta=1e-12, msg=where)
            self.assertAlmostEqual(m["time"], exc, delta=1e-12, msg=where)
            self.assertAlmostEqual(m["gpu_time (inc)"], gpu_inc, delta=1e-12, msg=where)
            self.assertAlmostEqual(m["gpu_time"], gpu, delta=1e-12, msg=where)
            for key, value in extra.items():
                self.assertAlmostEqual(m[key], value, delta=1e-6, msg=where + " " + key)
            # Hatchet's own inclusive sums agree with ours (the ranges nest properly here).
            self.assertAlmostEqual(m["time sum"], inc, delta=1e-12, msg=where)
            self.assertAlmostEqual(m["gpu_time sum"], gpu_inc, delta=1e-12, msg=where)
        # Children in the aggregate's order: by total time, largest first.
        self.assertEqual(nodes[()]["children"], ["train", NAIVE, "(unattributed)"])
        self.assertEqual(nodes[("train", "step")]["children"], ["cudaMemcpy", "cudaLaunchKernel"])
        self.assertIn("cudaLaunchKernel", got["tree"])

    def test_deep_tree(self):
        got = self.read_back(self.export("--deep"))
        depth = max(len(n["path"]) - 1 for n in got["nodes"])
        self.assertEqual(depth, 64)  # KP_AGGREGATION_MAX_DEPTH
        # L0 > ... > L62, then L63 and the six ranges inside it placed beside it, at depth 64.
        self.assertEqual(len(got["nodes"]), 1 + 70)
        deepest = sorted(n["name"] for n in got["nodes"] if len(n["path"]) == 65)
        self.assertEqual(deepest, sorted("L%d" % i for i in range(63, 70)))
        top = [n for n in got["nodes"] if n["path"] == [ROOT, "L0"]][0]
        self.assertAlmostEqual(top["metrics"]["time (inc)"], 1000e-6, delta=1e-12)
        self.assertAlmostEqual(top["metrics"]["time sum"], 1000e-6, delta=1e-12)

    def test_cli_export_of_a_trace(self):
        # `kprof export --hatchet` of a merged trace (tree_trace.py's timeline): the root is the
        # traced command, the tree and metrics are the aggregate's, polling calls left out.
        trace = tree_trace.make(self)
        out = os.path.join(self.tmp, "cli.json")
        self.kprof("export", trace, "--hatchet", out, expect=0)
        got = self.read_back(out)
        self.assertEqual(got["roots"], 1)
        nodes = {tuple(n["path"][1:]): n for n in got["nodes"]}
        self.assertEqual(set(nodes), set(tree_trace.EXPECTED) | {()})
        root = nodes[()]
        self.assertEqual((root["name"], root["type"]), (tree_trace.COMMAND, "root"))
        self.assertAlmostEqual(root["metrics"]["time (inc)"], 11.1 * MS, delta=1e-12)
        self.assertAlmostEqual(root["metrics"]["gpu_time (inc)"], 5.2 * MS, delta=1e-12)
        for path, expected in tree_trace.EXPECTED.items():
            kind, calls, inc, exc, gpu_inc, gpu, ops, nbytes = expected
            n, m, where = nodes[path], nodes[path]["metrics"], "/".join(path)
            self.assertEqual(n["path"][0], tree_trace.COMMAND)
            self.assertEqual((n["name"], n["type"]), (path[-1], kind), where)
            self.assertEqual(m["calls"], calls, where)
            self.assertAlmostEqual(m["time (inc)"], inc, delta=1e-12, msg=where)
            self.assertAlmostEqual(m["time"], exc, delta=1e-12, msg=where)
            self.assertAlmostEqual(m["gpu_time (inc)"], gpu_inc, delta=1e-12, msg=where)
            self.assertAlmostEqual(m["gpu_time"], gpu, delta=1e-12, msg=where)
            self.assertEqual(m["bytes"], nbytes, where)
            # hatchet's own sums of the exclusive columns give back the inclusive ones
            self.assertAlmostEqual(m["time sum"], inc, delta=1e-12, msg=where)
            self.assertAlmostEqual(m["gpu_time sum"], gpu_inc, delta=1e-12, msg=where)
        self.assertEqual(root["children"], ["train", tree_trace.NAIVE_JSON, "(unattributed)",
                                            "cudaLaunchKernel"])


if __name__ == "__main__":
    kptest.main()
