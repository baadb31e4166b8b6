"""kprof report --tree / --by name|path and kprof export --json/--csv/--hatchet (issue 11): the
call tree and key averages of traces whose timelines are known exactly — tree_trace.py's records
merged by the real `kprof trace --merge`, and gen_trace.py's programs run under the real
`kprof trace` — checked number by number: inclusive and exclusive host time, GPU time attributed
through correlations (a kernel that ran after its range closed included), device operations,
--depth cuts, --sort orders, --top counts, --by name against --by path, polling calls left out
(their time their caller's own) unless --raw, CSV read back with the csv module, JSON parsed
strictly as UTF-8, bad values refused with exit 2 naming what is allowed, and the exports'
output rules (--force, '-', one format per run)."""

import csv
import io
import json
import os
import subprocess
import sys

import klog
import kptest
import tree_trace
from tree_trace import EXPECTED, MS, NAIVE_CSV, NAIVE_JSON, NAIVE_TEXT, ORDER_TOTAL

GEN = os.path.join(os.path.dirname(os.path.abspath(__file__)), "gen_trace.py")
US = 1e-6
NUMBERS = ("calls", "total_s", "self_s", "inclusive_s", "exclusive_s", "gpu_s", "gpu_self_s",
           "device_ops", "min_s", "mean_s", "max_s", "std_s", "flops", "bytes")


def loads(data):
    """JSON from bytes, decoded strictly as UTF-8."""
    return json.loads(data.decode("utf-8"))


class CallTree(kptest.KprofTestCase):
    needs_opencl = False

    def setUp(self):
        super().setUp()
        self.env["NO_COLOR"] = "1"
        self.trace = os.path.basename(tree_trace.make(self))  # kprof runs in self.tmp

    def raw(self, *args, expect=0):
        """kprof's stdout as bytes."""
        env = dict(os.environ)
        for k, v in self.env.items():
            if v is None:
                env.pop(k, None)
            else:
                env[k] = v
        p = subprocess.run([kptest.KPROF] + list(args), cwd=self.tmp, env=env,
                           capture_output=True, timeout=300)
        self.assertEqual(p.returncode, expect, "kprof %s: %s" % (" ".join(args),
                                                                 p.stderr.decode(errors="replace")))
        return p.stdout

    def tree(self, *extra, trace=None):
        return loads(self.raw("report", trace or self.trace, "--tree", "--json", *extra))

    def by_path(self, doc):
        return {tuple(n["path"]): n for n in doc["nodes"]}

    def assert_numbers(self, node, expected, where):
        kind, calls, inc, exc, gpu, gpu_self, ops, nbytes = expected
        self.assertEqual(node["kind"], kind, where)
        self.assertEqual(node["calls"], calls, where)
        self.assertAlmostEqual(node["inclusive_s"], inc, delta=1e-12, msg=where)
        self.assertAlmostEqual(node["exclusive_s"], exc, delta=1e-12, msg=where)
        self.assertAlmostEqual(node["gpu_s"], gpu, delta=1e-12, msg=where)
        self.assertAlmostEqual(node["gpu_self_s"], gpu_self, delta=1e-12, msg=where)
        self.assertEqual(node["device_ops"], ops, where)
        self.assertEqual(node["bytes"], nbytes, where)
        self.assertEqual(node["flops"], 0, where)
        # total and self are what --sort orders by
        device = kind in ("kernel", "memcpy", "memset")
        if kind == "unattributed":
            total, self_ = gpu, gpu
        elif device:
            total, self_ = gpu_self, gpu_self
        else:
            total, self_ = inc, exc
        self.assertAlmostEqual(node["total_s"], total, delta=1e-12, msg=where)
        self.assertAlmostEqual(node["self_s"], self_, delta=1e-12, msg=where)

    # ---- the tree ----------------------------------------------------------------------------

    def test_tree_numbers_order_and_shape(self):
        doc = self.tree()
        self.assertEqual(doc["view"], "tree")
        self.assertEqual(doc["command"], tree_trace.COMMAND)
        self.assertEqual(doc["sort"], "total")
        self.assertIsNone(doc["depth"])
        self.assertIsNone(doc["top"])
        self.assertFalse(doc["polling_calls"])
        self.assertEqual(doc["top_level_not_shown"], 0)
        nodes = self.by_path(doc)
        self.assertEqual(set(nodes), set(EXPECTED))
        for path, expected in EXPECTED.items():
            self.assert_numbers(nodes[path], expected, "/".join(path))
        # Depth-first, children by total time; every parent before its children.
        self.assertEqual([tuple(n["path"]) for n in doc["nodes"]], ORDER_TOTAL)
        ids = {n["id"]: n for n in doc["nodes"]}
        for n in doc["nodes"]:
            self.assertEqual(n["depth"], len(n["path"]))
            self.assertEqual(n["name"], n["path"][-1])
            self.assertEqual(n["children_not_shown"], 0)
            if n["depth"] == 1:
                self.assertEqual(n["parent"], 0)
            else:
                self.assertEqual(ids[n["parent"]]["path"], n["path"][:-1])
        gemm = nodes[("train", "step", "cudaLaunchKernel", "gemm")]
        self.assertAlmostEqual(gemm["min_s"], 1.5 * MS, delta=1e-12)
        self.assertAlmostEqual(gemm["max_s"], 2 * MS, delta=1e-12)
        self.assertAlmostEqual(gemm["mean_s"], 1.75 * MS, delta=1e-12)
        self.assertAlmostEqual(gemm["std_s"], (0.125 * MS * MS) ** 0.5, delta=1e-12)
        unattributed = nodes[("(unattributed)",)]
        for key in ("min_s", "mean_s", "max_s", "std_s"):
            self.assertIsNone(unattributed[key])
        t = doc["totals"]
        self.assertEqual(t["call_paths"], 11)
        self.assertEqual(t["device_ops"], 5)
        self.assertEqual(t["device_ops_without_call"], 1)
        self.assertEqual(t["events"], 13)  # 14 recorded, the poll left out
        self.assertAlmostEqual(t["host_s"], 11.1 * MS, delta=1e-12)
        self.assertAlmostEqual(t["gpu_s"], 5.2 * MS, delta=1e-12)
        # gemm [2.6,4.6] and the copy [3.1,4.1] overlap: busy is their union
        self.assertAlmostEqual(t["gpu_busy_s"], 4.2 * MS, delta=1e-12)
        self.assertEqual((t["folded"], t["unordered"]), (0, 0))

    def test_tree_text(self):
        out = self.raw("report", self.trace, "--tree").decode("utf-8")
        lines = out.splitlines()
        self.assertIn("Call tree of tree.kprof (%s): 11 call paths, children by total time"
                      % tree_trace.COMMAND, lines[0])
        self.assertIn("Host time 11.1 ms in top-level calls and ranges; GPU time 5.2 ms "
                      "attributed over 5 device operations (1 with no recorded launching call, "
                      "under (unattributed)); GPU busy 4.2 ms", out)
        self.assertIn("Polling and query calls left out", out)
        header = [i for i, l in enumerate(lines) if l.split()[:2] == ["Calls", "Host"]]
        self.assertEqual(len(header), 1)
        rows = [l for l in lines[header[0] + 1:] if l.strip()]
        self.assertEqual(len(rows), len(ORDER_TOTAL))
        name_at = lines[header[0]].index("Name")
        for row, path in zip(rows, ORDER_TOTAL):
            # the name, indented two spaces per level below the top
            name = path[-1].replace(NAIVE_JSON, NAIVE_TEXT)
            self.assertEqual(row[name_at:], "  " * (len(path) - 1) + name, row)
        cells = [r[:name_at].split() for r in rows]
        self.assertEqual(cells[0], ["1", "10", "ms", "2", "ms", "4.5", "ms", "3", "range"])
        self.assertEqual(cells[1], ["2", "8", "ms", "5.8", "ms", "4.5", "ms", "3", "range"])
        # device work: no host time of its own
        self.assertEqual(cells[5], ["2", "-", "-", "3.5", "ms", "2", "kernel"])
        self.assertEqual(cells[6], ["1", "1", "ms", "1", "ms", "-", "-", "range"])
        self.assertEqual(cells[7], ["-", "-", "-", "500", "µs", "1", "-"])

    def test_polling_calls_left_out_unless_raw(self):
        plain = self.by_path(self.tree())
        self.assertFalse([p for p in plain if p[-1] == "cudaGetLastError"])
        raw = self.tree("--raw")
        self.assertTrue(raw["polling_calls"])
        nodes = self.by_path(raw)
        self.assertEqual(set(nodes), set(EXPECTED) | {("train", "step", "cudaGetLastError")})
        self.assert_numbers(nodes[("train", "step", "cudaGetLastError")],
                            ("api", 1, 0.1 * MS, 0.1 * MS, 0, 0, 0, 0), "poll")
        # Left out, the poll's time was step's own; shown, it is the poll's.
        self.assertAlmostEqual(plain[("train", "step")]["exclusive_s"], 5.8 * MS, delta=1e-12)
        self.assertAlmostEqual(nodes[("train", "step")]["exclusive_s"], 5.7 * MS, delta=1e-12)
        self.assertEqual(raw["totals"]["events"], 14)
        text = self.raw("report", self.trace, "--tree", "--raw").decode()
        self.assertIn("cudaGetLastError", text)
        self.assertIn("Polling and query calls included (--raw)", text)

    def test_depth_cuts(self):
        one = self.tree("--depth", "1")
        self.assertEqual(one["depth"], 1)
        self.assertEqual([n["path"] for n in one["nodes"]],
                         [["train"], [NAIVE_JSON], ["(unattributed)"], ["cudaLaunchKernel"]])
        self.assertEqual([n["children_not_shown"] for n in one["nodes"]], [1, 0, 1, 1])
        two = self.tree("--depth", "2")
        self.assertEqual([tuple(n["path"]) for n in two["nodes"]],
                         [p for p in ORDER_TOTAL if len(p) <= 2])
        self.assertEqual(self.by_path(two)[("train", "step")]["children_not_shown"], 2)
        # the numbers do not change with what is shown
        self.assert_numbers(self.by_path(two)[("train",)], EXPECTED[("train",)], "train")
        three = self.tree("--depth", "3")
        self.assertEqual(len(three["nodes"]), len([p for p in ORDER_TOTAL if len(p) <= 3]))
        text = self.raw("report", self.trace, "--tree", "--depth", "1").decode()
        self.assertIn("1 level shown", text)
        self.assertNotIn(" step\n", text)
        self.assertIn(" train\n", text)
        csv_rows = list(csv.DictReader(io.StringIO(
            self.raw("report", self.trace, "--tree", "--depth", "2", "--csv").decode())))
        self.assertEqual(max(int(r["depth"]) for r in csv_rows), 2)

    def test_sort_orders(self):
        def children(doc, parent):
            return [n["path"][-1] for n in doc["nodes"] if n["path"][:-1] == list(parent)]

        want = {
            "total": (["train", NAIVE_JSON, "(unattributed)", "cudaLaunchKernel"],
                      ["cudaMemcpy", "cudaLaunchKernel"]),
            "self": (["train", NAIVE_JSON, "(unattributed)", "cudaLaunchKernel"],
                     ["cudaMemcpy", "cudaLaunchKernel"]),
            "gpu": (["train", "(unattributed)", "cudaLaunchKernel", NAIVE_JSON],
                    ["cudaLaunchKernel", "cudaMemcpy"]),
            # ties of calls go to the larger total
            "calls": (["train", NAIVE_JSON, "cudaLaunchKernel", "(unattributed)"],
                      ["cudaLaunchKernel", "cudaMemcpy"]),
        }
        for key, (top, under_step) in want.items():
            doc = self.tree("--sort", key)
            self.assertEqual(doc["sort"], key)
            self.assertEqual(children(doc, ()), top, key)
            self.assertEqual(children(doc, ("train", "step")), under_step, key)
            self.assertEqual(set(self.by_path(doc)), set(EXPECTED))

    def test_top_counts(self):
        doc = self.tree("--top", "1")
        self.assertEqual(doc["top"], 1)
        self.assertEqual([tuple(n["path"]) for n in doc["nodes"]], ORDER_TOTAL[:4])
        self.assertEqual(doc["top_level_not_shown"], 3)
        nodes = self.by_path(doc)
        self.assertEqual(nodes[("train", "step")]["children_not_shown"], 1)
        self.assertEqual(nodes[("train",)]["children_not_shown"], 0)
        text = self.raw("report", self.trace, "--tree", "--top", "1").decode()
        self.assertIn("… 1 more", text)
        self.assertIn("… 3 more", text)
        self.assertIn("(the first 1 of each)", text)
        two = self.tree("--top", "2", "--sort", "gpu")
        top = [n["path"] for n in two["nodes"] if n["depth"] == 1]
        self.assertEqual(top, [["train"], ["(unattributed)"]])

    # ---- key averages ------------------------------------------------------------------------

    def test_by_name_merges_paths_by_path_keeps_them(self):
        by_name = loads(self.raw("report", self.trace, "--by", "name", "--json"))
        self.assertEqual(by_name["view"], "key_averages")
        self.assertEqual(by_name["group"], "name")
        rows = {(r["kind"], r["name"]): r for r in by_name["rows"]}
        self.assertEqual(by_name["rows_in_all"], 8)
        self.assertEqual(set(rows), {("range", "train"), ("range", "step"),
                                     ("api", "cudaMemcpy"), ("memcpy", "[CUDA memcpy HtoD]"),
                                     ("api", "cudaLaunchKernel"), ("kernel", "gemm"),
                                     ("range", NAIVE_JSON), ("kernel", "orphan")})
        launch = rows[("api", "cudaLaunchKernel")]  # train/step/... and the worker's, together
        self.assertEqual(launch["calls"], 3)
        self.assertAlmostEqual(launch["total_s"], 0.8 * MS, delta=1e-12)
        self.assertAlmostEqual(launch["gpu_s"], 3.7 * MS, delta=1e-12)
        self.assertAlmostEqual(launch["min_s"], 0.1 * MS, delta=1e-12)
        self.assertAlmostEqual(launch["max_s"], 0.5 * MS, delta=1e-12)
        gemm = rows[("kernel", "gemm")]
        self.assertEqual(gemm["calls"], 3)
        self.assertAlmostEqual(gemm["total_s"], 3.7 * MS, delta=1e-12)
        self.assertAlmostEqual(gemm["mean_s"], 3.7 * MS / 3, delta=1e-12)
        self.assertAlmostEqual(gemm["min_s"], 0.2 * MS, delta=1e-12)
        self.assertEqual(rows[("memcpy", "[CUDA memcpy HtoD]")]["bytes"], 1 << 20)
        self.assertNotIn("path", launch)
        totals = [r["total_s"] for r in by_name["rows"]]
        self.assertEqual(totals, sorted(totals, reverse=True))

        by_path = loads(self.raw("report", self.trace, "--by", "path", "--json"))
        self.assertEqual(by_path["group"], "path")
        self.assertEqual(by_path["rows_in_all"], 11)
        rows = {tuple(r["path"]): r for r in by_path["rows"]}
        self.assertEqual(set(rows), set(EXPECTED))
        for path, expected in EXPECTED.items():
            self.assert_numbers(rows[path], expected, "/".join(path))
        self.assertEqual(rows[("cudaLaunchKernel",)]["calls"], 1)
        self.assertEqual(rows[("train", "step", "cudaLaunchKernel")]["calls"], 2)

        text = self.raw("report", self.trace, "--by", "path").decode("utf-8")
        self.assertIn("Key averages by call path of tree.kprof", text)
        self.assertIn("train/step/cudaLaunchKernel/gemm", text)
        self.assertIn("(unattributed)/orphan", text)
        self.assertIn("Bytes", text)  # a copy has some
        text = self.raw("report", self.trace, "--by", "name").decode("utf-8")
        self.assertIn("Key averages by name of tree.kprof", text)
        line = [l for l in text.splitlines() if l.endswith(" cudaLaunchKernel")]
        self.assertEqual(len(line), 1)
        self.assertEqual(line[0].split()[:12],
                         ["api", "3", "800", "µs", "800", "µs", "3.7", "ms", "100", "µs",
                          "266.67", "µs"])

    def test_by_sort_and_top(self):
        doc = loads(self.raw("report", self.trace, "--by", "name", "--sort", "calls", "--top",
                             "2", "--json"))
        self.assertEqual(doc["rows_in_all"], 8)
        self.assertEqual([(r["kind"], r["name"]) for r in doc["rows"]],
                         [("kernel", "gemm"), ("api", "cudaLaunchKernel")])  # 3 calls each
        doc = loads(self.raw("report", self.trace, "--by", "path", "--sort", "gpu", "--top", "3",
                             "--json"))
        self.assertEqual([r["path"] for r in doc["rows"]],
                         [["train"], ["train", "step"],
                          # 3.5 ms each: the tie goes to the larger total (the kernels')
                          ["train", "step", "cudaLaunchKernel", "gemm"]])
        doc = loads(self.raw("report", self.trace, "--by", "name", "--sort", "self", "--json"))
        selfs = [r["self_s"] for r in doc["rows"]]
        self.assertEqual(selfs, sorted(selfs, reverse=True))
        self.assertEqual(doc["rows"][0]["name"], "step")  # 5.8 ms of its own
        text = self.raw("report", self.trace, "--by", "name", "--top", "3").decode()
        self.assertIn("8 rows by total time, the first 3 shown", text)
        self.assertEqual(len([l for l in text.splitlines() if l.startswith("  range")
                              or l.startswith("  api") or l.startswith("  kernel")
                              or l.startswith("  memcpy")]), 3)

    # ---- CSV ---------------------------------------------------------------------------------

    def test_csv_reads_back_as_the_json(self):
        for args, key in ((["--tree"], "nodes"), (["--by", "path"], "rows"),
                          (["--by", "name"], "rows"), (["--tree", "--top", "2"], "nodes")):
            doc = loads(self.raw("report", self.trace, *args, "--json"))
            text = self.raw("report", self.trace, *args, "--csv").decode("utf-8")
            rows = list(csv.DictReader(io.StringIO(text, newline="")))
            self.assertEqual(len(rows), len(doc[key]), args)
            for row, node in zip(rows, doc[key]):
                where = "%s %s" % (args, node["name"])
                self.assertEqual(row["kind"], node["kind"], where)
                self.assertEqual(row["name"], node["name"].replace(NAIVE_JSON, NAIVE_CSV), where)
                if "path" in node:
                    self.assertEqual(row["path"], "/".join(node["path"]).replace(NAIVE_JSON,
                                                                                 NAIVE_CSV))
                    for k in ("id", "parent", "depth"):
                        self.assertEqual(int(row[k]), node[k], where)
                else:
                    self.assertNotIn("path", row)
                for k in NUMBERS:
                    if node[k] is None:
                        self.assertEqual(row[k], "", where + " " + k)
                    else:
                        self.assertEqual(float(row[k]), node[k], where + " " + k)
                if key == "nodes":
                    self.assertEqual(int(row["children_not_shown"]), node["children_not_shown"])
        header = self.raw("report", self.trace, "--tree", "--csv").decode().splitlines()[0]
        self.assertEqual(header, "id,parent,depth,kind,name,path," + ",".join(NUMBERS)
                         + ",children_not_shown")

    # ---- bad values ---------------------------------------------------------------------------

    def test_bad_values_exit_2_naming_what_is_allowed(self):
        cases = [
            (["--tree", "--depth", "0"], "--depth '0': expected a whole number >= 1"),
            (["--tree", "--depth", "x"], "--depth 'x'"),
            (["--tree", "--depth", "-1"], "--depth '-1'"),
            (["--tree", "--depth", "2x"], "--depth '2x'"),
            (["--tree", "--top", "0"], "--top '0': expected a whole number >= 1"),
            (["--by", "name", "--top", "ten"], "--top 'ten'"),
            (["--tree", "--sort", "time"], "--sort 'time': choose total, self, gpu or calls"),
            (["--by", "kind"], "--by 'kind': choose name or path"),
            (["--by"], "--by needs a value"),
            (["--tree", "--by", "name"], "--tree or --by, not both"),
            (["--tree", "--trace"], "--trace lists events; --tree, call paths"),
            (["--by", "path", "--trace"], "--trace lists events; --by, call paths"),
            (["--by", "name", "--depth", "2"], "--depth goes with --tree"),
            (["--depth", "2"], "--depth goes with --tree"),
            (["--sort", "gpu"], "--sort and --top go with --tree or --by"),
            (["--top", "3"], "--sort and --top go with --tree or --by"),
            (["--tree", "--json", "--csv"], "--json or --csv, not both"),
        ]
        for args, message in cases:
            p = self.kprof("report", self.trace, *args, expect=2)
            self.assertIn("kprof: error: " + message, p.stderr, args)
            self.assertEqual(p.stdout, "", args)

    def test_bad_trace_files_exit_2(self):
        junk = os.path.join(self.tmp, "junk.kprof")
        with open(junk, "w") as f:
            f.write("not a trace\n" * 100)
        for args in (["report", junk, "--tree"], ["report", junk, "--by", "name"],
                     ["report", os.path.join(self.tmp, "missing.kprof"), "--tree"],
                     ["export", junk, "--hatchet", os.path.join(self.tmp, "h.json")],
                     ["export", junk, "--csv", os.path.join(self.tmp, "t.csv")]):
            p = self.kprof(*args, expect=2)
            self.assertIn("kprof: error:", p.stderr)
        self.assertFalse(os.path.exists(os.path.join(self.tmp, "h.json")))
        self.assertFalse(os.path.exists(os.path.join(self.tmp, "t.csv")))

    def test_empty_trace(self):
        records = os.path.join(self.tmp, "empty")
        os.mkdir(records)
        w = klog.Writer(os.path.join(records, "7-cuda-1.klog"), 7, "true", tree_trace.at(0))
        w.close(end=tree_trace.at(1))
        with open(os.path.join(records, "run.txt"), "w") as f:
            f.write("kprof-trace-run 1\nstart_ns %d\nend_ns %d\nexit_status 0\ncollectors cuda\n"
                    "command true\n"
                    % (tree_trace.at(0), tree_trace.at(1)))
        path = os.path.join(self.tmp, "empty.kprof")
        self.kprof("trace", "--merge", records, "-o", path, expect=0)
        doc = self.tree(trace=path)
        self.assertEqual(doc["nodes"], [])
        self.assertEqual(doc["totals"]["call_paths"], 0)
        text = self.raw("report", path, "--tree").decode()
        self.assertIn("(no calls, ranges or device work recorded)", text)
        text = self.raw("report", path, "--by", "name").decode()
        self.assertIn("(no calls, ranges or device work recorded)", text)
        self.assertEqual(self.raw("report", path, "--tree", "--csv").decode().count("\n"), 1)
        out = os.path.join(self.tmp, "empty.hatchet.json")
        self.kprof("export", path, "--hatchet", out, expect=0)
        with open(out, "rb") as f:
            root = loads(f.read())
        self.assertEqual(root[0]["frame"], {"name": "true", "type": "root"})
        self.assertEqual(root[0]["children"], [])

    # ---- exports -----------------------------------------------------------------------------

    def test_export_json_and_csv_are_report_tree(self):
        for fmt in ("json", "csv"):
            out = os.path.join(self.tmp, "tree." + fmt)
            self.kprof("export", self.trace, "--" + fmt, out, expect=0)
            with open(out, "rb") as f:
                exported = f.read()
            printed = self.raw("report", self.trace, "--tree", "--" + fmt)
            self.assertEqual(exported, printed, fmt)
            # --raw: the polling calls in
            self.kprof("export", self.trace, "--" + fmt, out, "--raw", "--force", expect=0)
            with open(out, "rb") as f:
                self.assertIn(b"cudaGetLastError", f.read())
        self.assertEqual(self.raw("export", self.trace, "--json", "-"),
                         self.raw("report", self.trace, "--tree", "--json"))

    def test_export_hatchet(self):
        out = os.path.join(self.tmp, "tree.hatchet.json")
        self.kprof("export", self.trace, "--hatchet", out, expect=0)
        with open(out, "rb") as f:
            doc = loads(f.read())
        self.assertEqual(len(doc), 1)
        root = doc[0]
        self.assertEqual(root["frame"], {"name": tree_trace.COMMAND, "type": "root"})
        self.assertAlmostEqual(root["metrics"]["time (inc)"], 11.1 * MS, delta=1e-12)
        self.assertAlmostEqual(root["metrics"]["gpu_time (inc)"], 5.2 * MS, delta=1e-12)
        seen = {}

        def walk(node, path):
            for c in node.get("children", []):  # leaves have none
                p = path + (c["frame"]["name"],)
                seen[p] = c
                walk(c, p)

        walk(root, ())
        self.assertEqual(set(seen), set(EXPECTED))
        for path, (kind, calls, inc, exc, gpu, gpu_self, ops, nbytes) in EXPECTED.items():
            m = seen[path]["metrics"]
            self.assertEqual(seen[path]["frame"]["type"], kind)
            self.assertEqual(m["calls"], calls)
            self.assertAlmostEqual(m["time (inc)"], inc, delta=1e-12)
            self.assertAlmostEqual(m["time"], exc, delta=1e-12)
            self.assertAlmostEqual(m["gpu_time (inc)"], gpu, delta=1e-12)
            self.assertAlmostEqual(m["gpu_time"], gpu_self, delta=1e-12)
            self.assertEqual(m["bytes"], nbytes)
        # children in the tree's order (by total)
        self.assertEqual([c["frame"]["name"] for c in root["children"]],
                         ["train", NAIVE_JSON, "(unattributed)", "cudaLaunchKernel"])
        # --raw puts the poll in
        self.kprof("export", self.trace, "--hatchet", out, "--raw", "--force", expect=0)
        with open(out, "rb") as f:
            self.assertIn(b'"cudaGetLastError"', f.read())

    def test_export_output_rules(self):
        for fmt in ("hatchet", "json", "csv"):
            out = os.path.join(self.tmp, "out." + fmt)
            self.kprof("export", self.trace, "--" + fmt, out, expect=0)
            with open(out, "rb") as f:
                first = f.read()
            # an existing output needs --force, and is left as it was without it
            with open(out, "w") as f:
                f.write("keep")
            p = self.kprof("export", self.trace, "--" + fmt, out, expect=2)
            self.assertIn("exists; use --force to replace it", p.stderr)
            with open(out) as f:
                self.assertEqual(f.read(), "keep")
            self.kprof("export", self.trace, "--" + fmt, out, "--force", expect=0)
            with open(out, "rb") as f:
                self.assertEqual(f.read(), first)
            # the trace itself is never an output
            p = self.kprof("export", self.trace, "--" + fmt, self.trace, "--force", expect=2)
            self.assertIn("kprof: error:", p.stderr)
            # '-' is standard output
            self.assertEqual(self.raw("export", self.trace, "--" + fmt, "-"), first)
            # no temporary left behind
            self.assertEqual([n for n in os.listdir(self.tmp) if ".tmp." in n], [])
        p = self.kprof("export", self.trace, "--hatchet", "a.json", "--csv", "b.csv", expect=2)
        self.assertIn("one format at a time: --hatchet or --csv", p.stderr)
        p = self.kprof("export", self.trace, expect=2)
        for option in ("--chrome", "--perfetto", "--hatchet", "--json", "--csv"):
            self.assertIn(option, p.stderr)
        p = self.kprof("export", self.trace, "--chrome", "c.json", "--raw", expect=2)
        self.assertIn("--raw goes with --hatchet, --json or --csv", p.stderr)
        p = self.kprof("export", self.trace, "--hatchet", expect=2)
        self.assertIn("--hatchet needs a value", p.stderr)


class ProgramTrees(kptest.KprofTestCase):
    """gen_trace.py's programs under the real `kprof trace`: their timelines are fixed relative
    to their first record, so the tree's numbers are exact."""

    needs_opencl = False

    def gen(self, pattern, *extra):
        out = os.path.join(self.tmp, pattern + ".kprof")
        self.kprof("trace", "-o", out, "--", sys.executable, GEN, pattern, *extra, expect=0)
        return out

    def tree(self, path, *extra):
        p = self.kprof("report", path, "--tree", "--json", *extra, expect=0)
        return {tuple(n["path"]): n for n in json.loads(p.stdout)["nodes"]}

    def test_deep_nesting(self):
        # Ranges nested 100k deep (issue 23): the tree, --by path, diff and the exports read it
        # in about a second (the placement is linear: unit.aggregate_tree counts its steps);
        # the timeout only catches a hang, far above what any machine needs.
        depth = 100000
        deep = os.path.basename(tree_trace.make_deep(self, depth))
        p = self.kprof("report", deep, "--tree", expect=0, timeout=240)
        # L64.. and the launch and its kernel fold onto level 64, beside L63, under L62.
        note = "%d events deeper than 64 levels placed at that depth" % (depth - 64 + 2)
        self.assertTrue(note in p.stdout, p.stdout[:2000])
        self.assertEqual(len(p.stdout.splitlines()), depth + 2 + 6)
        got = loads(self.kprof("export", deep, "--json", "-", expect=0, timeout=240).stdout
                    .encode())
        nodes = {tuple(n["path"]): n for n in got["nodes"]}
        self.assertEqual(max(n["depth"] for n in got["nodes"]), 64)
        chain = tuple("L%d" % i for i in range(63))
        self.assertEqual(nodes[chain + ("L63",)]["calls"], 1)
        self.assertEqual(nodes[chain + ("cudaLaunchKernel",)]["calls"], 1)
        self.assertEqual(nodes[chain + ("gemm",)]["device_ops"], 1)
        self.assertEqual(nodes[chain + ("gemm",)]["kind"], "kernel")
        self.assertEqual(len(got["nodes"]), depth + 2)
        self.assertAlmostEqual(nodes[("L0",)]["gpu_s"], 300e-9, delta=1e-15)
        for args in (("report", deep, "--by", "path"), ("diff", deep, deep),
                     ("export", deep, "--csv", "-"),
                     ("export", deep, "--hatchet", os.path.join(self.tmp, "deep.json"))):
            self.kprof(*args, expect=0, timeout=240)

    def test_host_bound(self):
        # start-up: 10 cudaMalloc of 5 ms, a 50 ms module load; then 3 NVTX 'step' ranges of
        # 20 ms, each 20 launches of 8 us with a 24 us kernel, and a 1 ms sync.
        path = self.gen("host-bound", "--steps", "3", "--kernels", "20", "--seconds", "0.2")
        nodes = self.tree(path)
        launch, kernel = "cudaLaunchKernel", "elementwise_kernel"
        self.assertEqual(set(nodes), {("cudaMalloc",), ("cuModuleLoadData",), ("step",),
                                      ("step", launch), ("step", launch, kernel),
                                      ("step", "cudaDeviceSynchronize")})
        close = lambda a, b: self.assertAlmostEqual(a, b, delta=1e-12)
        step = nodes[("step",)]
        self.assertEqual(step["calls"], 3)
        close(step["inclusive_s"], 60 * MS)
        close(step["exclusive_s"], 3 * (20 * MS - 20 * 8 * US - 1 * MS))
        close(step["gpu_s"], 60 * 24 * US)
        self.assertEqual(step["device_ops"], 60)
        call = nodes[("step", launch)]
        self.assertEqual(call["calls"], 60)
        close(call["inclusive_s"], 60 * 8 * US)
        close(call["exclusive_s"], 60 * 8 * US)
        close(call["gpu_s"], 60 * 24 * US)
        k = nodes[("step", launch, kernel)]
        self.assertEqual((k["kind"], k["calls"], k["device_ops"]), ("kernel", 60, 60))
        close(k["gpu_self_s"], 60 * 24 * US)
        close(k["min_s"], 24 * US)
        close(k["max_s"], 24 * US)
        sync = nodes[("step", "cudaDeviceSynchronize")]
        self.assertEqual((sync["calls"], sync["device_ops"]), (3, 0))
        close(sync["inclusive_s"], 3 * MS)
        self.assertEqual(nodes[("cudaMalloc",)]["calls"], 10)
        close(nodes[("cudaMalloc",)]["inclusive_s"], 50 * MS)
        close(nodes[("cuModuleLoadData",)]["inclusive_s"], 50 * MS)
        by_calls = self.kprof("report", path, "--tree", "--sort", "calls", "--depth", "1",
                              "--json", expect=0)
        self.assertEqual([n["name"] for n in json.loads(by_calls.stdout)["nodes"]],
                         ["cudaMalloc", "step", "cuModuleLoadData"])

    def test_launch_bound_polls_are_the_ranges_own_time(self):
        # 50 launches of 40 us, each with a 1 us poll, 45 us apart, in one NVTX range 'outer'
        # of 50 * 45 + 55 us.
        path = self.gen("launch-bound", "--kernels", "50")
        close = lambda a, b: self.assertAlmostEqual(a, b, delta=1e-12)
        plain = self.tree(path)
        raw = self.tree(path, "--raw")
        self.assertEqual(set(plain), {("outer",), ("outer", "cudaLaunchKernel"),
                                      ("outer", "cudaLaunchKernel", "small(float*, int)")})
        self.assertEqual(set(raw), set(plain) | {("outer", "cudaGetLastError")})
        close(plain[("outer",)]["inclusive_s"], 2305 * US)
        close(plain[("outer",)]["exclusive_s"], 2305 * US - 50 * 40 * US)
        close(raw[("outer",)]["exclusive_s"], 2305 * US - 50 * 41 * US)
        self.assertEqual(raw[("outer", "cudaGetLastError")]["calls"], 50)
        close(plain[("outer",)]["gpu_s"], 50 * 5 * US)
        self.assertEqual(plain[("outer",)]["device_ops"], 50)


if __name__ == "__main__":
    kptest.main()
