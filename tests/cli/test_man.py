"""kprof's man pages, written at build time from the help text the tool prints (tools/kprof/man.c
over help.c): a page for every command `kprof --help` lists and main.c dispatches; each page says
what `kprof CMD --help` says, word for word (its options line for line, a line too long cut and
carried on below), through `man -l`; every page renders without a warning and fits 80 columns;
and after `cmake --install --prefix P`, `MANPATH=P/share/man man -w kprof-run` finds the
installed page. Skipped, saying so, where man is not installed."""

import os
import re
import shutil
import subprocess
import tempfile
import unittest

import kptest

BUILD_DIR = os.environ.get("KPROF_BUILD_DIR")
CMAKE = os.environ.get("KPROF_CMAKE", "cmake")
UTF8 = {"LC_ALL": "C.UTF-8", "LANG": "C.UTF-8", "MANWIDTH": "250", "MANPAGER": "cat",
        "PAGER": "cat", "MAN_KEEP_FORMATTING": ""}


def sh(args, env=None):
    full = dict(os.environ)
    full.update(UTF8)
    full.update(env or {})
    return subprocess.run(args, env=full, capture_output=True, text=True, timeout=120)


def help_commands(text):
    """The commands `kprof --help` lists, in order."""
    block = text.split("\ncommands:\n", 1)[1].split("\n\n", 1)[0]
    return [line.split()[0] for line in block.splitlines()]


def sections(rendered):
    """{header: [lines]} of a page man rendered: a header is an unindented line."""
    out, current = {}, None
    lines = rendered.splitlines()
    for line in lines[1:-1]:  # the page's header and footer lines
        if line and not line[0].isspace():
            current = line.strip()
            out[current] = []
        elif current is not None:
            out[current].append(line)
    return out


def option_lines(usage):
    """The lines of the help's option blocks (indented blocks with a line starting '  -')."""
    lines = []
    for block in usage.rstrip("\n").split("\n\n")[1:]:
        rows = block.split("\n")
        if all(r.startswith(" ") for r in rows) and any(r.startswith("  -") for r in rows):
            lines += rows
    return lines


class ManPages(kptest.KprofTestCase):
    needs_opencl = False

    @classmethod
    def setUpClass(cls):
        if not BUILD_DIR:
            raise unittest.SkipTest("KPROF_BUILD_DIR not set (run through ctest)")
        if not shutil.which("man"):
            raise unittest.SkipTest("man is not installed (scripts/install installs man-db)")
        if not shutil.which("groff"):
            # man renders a page through groff: without it, it prints nothing to compare.
            raise unittest.SkipTest("groff is not installed (scripts/install installs groff-base)")
        cls.man_dir = os.path.join(BUILD_DIR, "man", "man1")
        cls.commands = help_commands(kptest.run(["--help"]).stdout)

    def render(self, page):
        p = sh(["man", "--warnings", "-l", os.path.join(self.man_dir, page)])
        self.assertEqual(p.returncode, 0, page + ": " + p.stderr)
        self.assertEqual(p.stderr, "", page + " renders with warnings")
        return p.stdout

    def test_every_command_has_a_page(self):
        main_c = open(os.path.join(kptest.SOURCE_DIR, "tools", "kprof", "main.c")).read()
        dispatched = re.findall(r'^\s*\{"(\w+)", kp_cmd_\w+, [01]\},', main_c, re.M)
        self.assertEqual(sorted(dispatched), sorted(self.commands),
                         "main.c's table and help.c's differ")
        for c in ["run", "sweep", "bench", "caps", "isolate", "trace", "merge", "report",
                  "export", "history", "notes", "diff", "help"]:
            self.assertIn(c, self.commands)
        pages = sorted(os.listdir(self.man_dir))
        self.assertEqual(pages, sorted(["kprof.1"] + ["kprof-%s.1" % c for c in self.commands]))

    def test_pages_say_what_help_says(self):
        for c in self.commands:
            with self.subTest(command=c):
                usage = self.kprof(c, "--help", expect=0).stdout
                self.assertEqual(self.kprof("help", c, expect=0).stdout, usage)
                page = os.path.join(self.man_dir, "kprof-%s.1" % c)
                raw = open(page, "rb").read()
                self.assertTrue(all(b < 0x80 for b in raw), page + ": not ASCII roff")
                got = sections(self.render("kprof-%s.1" % c))
                blocks = usage.rstrip("\n").split("\n\n")
                # SYNOPSIS: the usage block, "usage:" aside.
                self.assertEqual(" ".join(got["SYNOPSIS"]).split(), blocks[0].split()[1:])
                # NAME: kprof-CMD - summary, the summary `kprof --help` shows.
                summary = re.search(r"^  %s +(.*)$" % c, kptest.run(["--help"]).stdout,
                                    re.M).group(1)
                self.assertEqual(" ".join(got["NAME"]).split(),
                                 ["kprof-" + c, "-"] + summary.split())
                # OPTIONS: the help's option lines, line for line, a line too long for 80
                # columns cut at spaces and carried on the lines below it.
                want = [l.strip() for l in option_lines(usage)]
                have = [l.strip() for l in got.get("OPTIONS", []) if l.strip()]
                self.assert_lines_cut(have, want)
                # Every word of the help after the usage, in order, from DESCRIPTION to NOTES
                # (escapes: backslashes, quotes, leading dots, UTF-8).
                body = []
                for name, lines in got.items():
                    if name not in ("NAME", "SYNOPSIS", "SEE ALSO"):
                        body += " ".join(lines).split()
                rest = "\n\n".join(blocks[1:]) if len(blocks) > 1 else summary
                self.assertEqual(body, rest.split())

    def assert_lines_cut(self, have, want):
        """have is want, each line either whole or its start followed by lines holding the
        rest of its words."""
        rows = iter(have)
        for w in want:
            h = next(rows, None)
            self.assertIsNotNone(h, "missing: " + w)
            self.assertTrue(w.startswith(h), "%r does not start %r" % (h, w))
            rest = w[len(h):].split()
            while rest:
                more = next(rows, "").split()
                self.assertTrue(more, "the rest of %r is missing" % w)
                self.assertEqual(more, rest[:len(more)], w)
                rest = rest[len(more):]
        self.assertEqual(list(rows), [])

    def test_pages_fit_80_columns(self):
        # man's width when it writes to no terminal: every line of every page fits it.
        for page in sorted(os.listdir(self.man_dir)):
            with self.subTest(page=page):
                p = sh(["man", "--warnings", "-l", os.path.join(self.man_dir, page)],
                       env={"MANWIDTH": "80"})
                self.assertEqual((p.returncode, p.stderr), (0, ""), page)
                lines = p.stdout.splitlines()
                self.assertGreater(len(lines), 5, page)
                wide = [l for l in lines if len(l) > 80]
                self.assertEqual(wide, [], page + ": lines wider than 80 columns")

    def test_kprof_page(self):
        got = sections(self.render("kprof.1"))
        text = kptest.run(["--help"]).stdout
        for c in self.commands:
            self.assertIn("kprof-%s(1)" % c, " ".join(got["DESCRIPTION"]))
        codes = [l.split()[0] for l in text.split("exit codes:\n")[1].splitlines()
                 if l.startswith("  ") and not l.startswith("   ")]
        have = [l.split()[0] for l in got["EXIT STATUS"] if re.match(r"^ {7}\S", l)]
        self.assertEqual(have, codes)
        # The environment the reference documents (its first table) is on the page.
        doc = open(os.path.join(kptest.SOURCE_DIR, "docs", "reference", "environment.md")).read()
        table = doc.split("\n\n")[1]
        env = " ".join(got["ENVIRONMENT"])
        for var in re.findall(r"`([A-Z_]+)`", table):
            self.assertIn(var, env)

    def test_groff_renders_without_warnings(self):
        if not shutil.which("groff"):
            self.skipTest("groff is not installed (scripts/install installs groff-base)")
        for page in os.listdir(self.man_dir):
            p = sh(["groff", "-man", "-Tutf8", "-ww", "-z", os.path.join(self.man_dir, page)])
            self.assertEqual((p.returncode, p.stderr), (0, ""), page)

    def test_installed_pages(self):
        root = tempfile.mkdtemp(prefix="kprof-man-")
        try:
            prefix = os.path.join(root, "prefix")
            p = sh([CMAKE, "--install", BUILD_DIR, "--prefix", prefix])
            self.assertEqual(p.returncode, 0, p.stdout + p.stderr)
            mandir = os.path.join(prefix, "share", "man")
            for c in ["kprof"] + ["kprof-" + c for c in self.commands]:
                self.assertTrue(os.path.isfile(os.path.join(mandir, "man1", c + ".1")), c)
            p = sh(["man", "-w", "kprof-run"], env={"MANPATH": mandir})
            self.assertEqual(p.returncode, 0, p.stderr)
            self.assertEqual(p.stdout.strip(), os.path.join(mandir, "man1", "kprof-run.1"))
            p = sh(["man", "kprof-run"], env={"MANPATH": mandir})
            self.assertEqual(p.returncode, 0, p.stderr)
            self.assertIn("--buffers SPEC", p.stdout)
        finally:
            shutil.rmtree(root, ignore_errors=True)


if __name__ == "__main__":
    kptest.main()
