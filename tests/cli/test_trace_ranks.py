"""kprof trace of a job's ranks on PoCL (tests/programs/cl_app.c): every process's place in the
job read from its launcher's variables (torchrun, Open MPI, Slurm), its host and boot id, and its
(CLOCK_MONOTONIC, CLOCK_REALTIME) pairs; per-rank output names (-o 'job-%r.kprof', %l, %p, %h,
%q{VAR}, %%) and every way such a name is refused; two ranks that write the same name never
overwrite each other, and the loser's records are kept for `kprof trace --merge`, which carries
host, boot id and clocks too.

Concurrency is made deterministic where it matters: ranks that must both be running before
either finishes wait for a file the test creates once it has seen them all start."""

import glob
import os
import re
import shlex
import socket
import sqlite3
import subprocess
import time

import kptest

APP = os.environ.get("KPROF_CL_APP")

# Every variable kp_job_read looks at: the tests' own kprof must not inherit a job from the
# machine running them (a CI runner under Slurm sets SLURM_PROCID).
LAUNCHER_VARS = ["RANK", "LOCAL_RANK", "WORLD_SIZE", "LOCAL_WORLD_SIZE", "GROUP_RANK",
                 "TORCHELASTIC_RUN_ID", "TORCHELASTIC_RESTART_COUNT", "OMPI_COMM_WORLD_RANK",
                 "OMPI_COMM_WORLD_LOCAL_RANK", "OMPI_COMM_WORLD_SIZE",
                 "OMPI_COMM_WORLD_LOCAL_SIZE", "PMI_RANK", "PMIX_RANK", "PMI_SIZE",
                 "MPI_LOCALRANKID", "MPI_LOCALNRANKS", "SLURM_PROCID", "SLURM_LOCALID",
                 "SLURM_NTASKS", "SLURM_NODEID"]

KERNELS = 5  # `cl_app 2`: 2 scale + 2 NDRange add_one + 1 task add_one

BOOT_ID = open("/proc/sys/kernel/random/boot_id").read().strip() \
    if os.path.exists("/proc/sys/kernel/random/boot_id") else None

KEPT = re.compile(r"the recording is kept in (\S+) \(")


def env_words(vars):
    return " ".join("%s=%s" % (k, shlex.quote(str(v))) for k, v in vars.items())


class TraceRanks(kptest.KprofTestCase):
    @classmethod
    def setUpClass(cls):
        super().setUpClass()
        if not APP:
            raise kptest.unittest.SkipTest("cl_app was not built (no OpenCL ICD loader to link)")

    def setUp(self):
        super().setUp()
        self.env.update({k: None for k in LAUNCHER_VARS})
        self.scratch = os.path.join(self.tmp, "scratch")  # the records' folders, for `kept`
        os.mkdir(self.scratch)
        self.env["TMPDIR"] = self.scratch

    def full_env(self, extra=None):
        e = dict(os.environ)
        for k, v in list(self.env.items()) + list((extra or {}).items()):
            if v is None:
                e.pop(k, None)
            else:
                e[k] = str(v)
        return e

    def start(self, *args, env=None):
        return subprocess.Popen([kptest.KPROF] + list(args), cwd=self.tmp, env=self.full_env(env),
                                stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)

    def files(self, pattern="*"):
        return sorted(os.path.basename(p) for p in glob.glob(os.path.join(self.tmp, pattern)))

    def processes(self, path):
        db = sqlite3.connect(path)
        db.row_factory = sqlite3.Row
        rows = [dict(r) for r in db.execute("SELECT * FROM processes ORDER BY id")]
        for r in rows:
            r["kernels"] = db.execute("SELECT COUNT(*) FROM events WHERE kind = 4 AND process = ?",
                                      (r["id"],)).fetchone()[0]
        db.close()
        return rows

    def check_host_and_clocks(self, path, processes):
        """Host and boot id in the meta table and on every process; each process's start and end
        clock pairs, and kprof's own, give one REALTIME - MONOTONIC offset (one host, one boot,
        a run far shorter than any clock drift), and each process's pairs lie inside kprof's."""
        db = sqlite3.connect(path)
        meta = dict(db.execute("SELECT key, value FROM meta"))
        self.assertEqual(meta["host"], socket.gethostname())
        for p in processes:
            self.assertEqual(p["host"], socket.gethostname())
        if BOOT_ID:
            self.assertEqual(meta["boot_id"], BOOT_ID)
            for p in processes:
                self.assertEqual(p["boot_id"], BOOT_ID)
        own = db.execute("SELECT mono_ns, real_ns, uncertainty_ns FROM clocks WHERE process IS "
                         "NULL ORDER BY mono_ns").fetchall()
        self.assertEqual(len(own), 2, "kprof's own pairs, at start and end")
        def agree(a, b, why):
            """Two pairs' REALTIME - MONOTONIC offsets agree within what the pairs themselves
            say (each read's uncertainty, which a busy machine widens) plus NTP's largest slew
            (500 ppm) over the time between them: nothing here depends on the machine's speed."""
            allowed = a[2] + b[2] + 500e-6 * abs(a[0] - b[0]) + 1000
            self.assertLessEqual(abs((a[1] - a[0]) - (b[1] - b[0])), allowed, why)

        agree(own[0], own[1], "kprof's own pairs")
        for p in processes:
            pairs = db.execute("SELECT mono_ns, real_ns, uncertainty_ns FROM clocks WHERE "
                               "process = ? ORDER BY mono_ns", (p["id"],)).fetchall()
            self.assertEqual(len(pairs), 2, "process %d: start and end pairs" % p["id"])
            for pair in pairs:
                mono, real, unc = pair
                self.assertGreaterEqual(unc, 0)
                agree(pair, own[0], "process %d's clocks disagree with kprof's" % p["id"])
                self.assertGreaterEqual(mono, own[0][0])
                self.assertLessEqual(mono, own[1][0])
            agree(pairs[0], pairs[1], "process %d's two pairs" % p["id"])
        db.close()

    # (a) one trace of a job whose ranks the traced command starts itself

    def test_torchrun_style_job(self):
        ranks = []
        for r in range(3):
            ranks.append(env_words({"RANK": r, "LOCAL_RANK": r, "WORLD_SIZE": 3,
                                    "LOCAL_WORLD_SIZE": 3, "GROUP_RANK": 1,
                                    "TORCHELASTIC_RUN_ID": "job7",
                                    "TORCHELASTIC_RESTART_COUNT": 2})
                         + " " + shlex.quote(APP) + " 2 &")
        script = " ".join(ranks) + " wait"
        p = self.kprof("trace", "-o", "job.kprof", "--", "sh", "-c", script, expect=0,
                       timeout=300)
        self.assertIn("from 3 processes, 0 records dropped", p.stderr)
        self.assertNotIn("every rank writes", p.stderr)  # kprof itself is no rank here
        procs = self.processes(os.path.join(self.tmp, "job.kprof"))
        self.assertEqual(len(procs), 3)
        got = sorted((q["launcher"], q["rank"], q["local_rank"], q["world_size"],
                      q["local_world_size"], q["node"], q["restart"], q["kernels"])
                     for q in procs)
        self.assertEqual(got, [("torchrun", r, r, 3, 3, 1, 2, KERNELS) for r in range(3)])
        self.check_host_and_clocks(os.path.join(self.tmp, "job.kprof"), procs)

    def test_open_mpi_and_slurm_ranks(self):
        # Told apart by their iteration counts (2, 3, ... in the command).
        jobs = [
            {"OMPI_COMM_WORLD_RANK": 0, "OMPI_COMM_WORLD_LOCAL_RANK": 0,
             "OMPI_COMM_WORLD_SIZE": 2, "OMPI_COMM_WORLD_LOCAL_SIZE": 2},
            # mpirun inside a Slurm allocation: Slurm's node index, Open MPI's rank
            {"OMPI_COMM_WORLD_RANK": 1, "OMPI_COMM_WORLD_LOCAL_RANK": 1,
             "OMPI_COMM_WORLD_SIZE": 2, "OMPI_COMM_WORLD_LOCAL_SIZE": 2,
             "SLURM_PROCID": 9, "SLURM_NODEID": 3},
            {"SLURM_PROCID": 4, "SLURM_LOCALID": 0, "SLURM_NTASKS": 6, "SLURM_NODEID": 2},
            # a rank that is not a number is no rank: Slurm's is taken
            {"RANK": "x", "SLURM_PROCID": 5, "SLURM_LOCALID": 1, "SLURM_NTASKS": 6,
             "SLURM_NODEID": 2},
        ]
        want = {
            2: ("openmpi", 0, 0, 2, 2, None),
            3: ("openmpi", 1, 1, 2, 2, 3),
            4: ("slurm", 4, 0, 6, None, 2),
            5: ("slurm", 5, 1, 6, None, 2),
        }
        script = " ".join("%s %s %d &" % (env_words(j), shlex.quote(APP), i + 2)
                          for i, j in enumerate(jobs)) + " wait"
        self.kprof("trace", "-o", "mpi.kprof", "--", "sh", "-c", script, expect=0, timeout=300)
        procs = self.processes(os.path.join(self.tmp, "mpi.kprof"))
        self.assertEqual(len(procs), 4)
        got = {int(q["command"].split()[-1]): (q["launcher"], q["rank"], q["local_rank"],
                                               q["world_size"], q["local_world_size"], q["node"])
               for q in procs}
        self.assertEqual(got, want)
        for q in procs:
            self.assertIsNone(q["restart"])
        self.check_host_and_clocks(os.path.join(self.tmp, "mpi.kprof"), procs)

    # (b) per-rank names

    def test_rank_pattern_gives_each_rank_its_file(self):
        procs = [self.start("trace", "-o", "job-%r.kprof", "--", APP, "2",
                            env={"OMPI_COMM_WORLD_RANK": r, "OMPI_COMM_WORLD_SIZE": 3})
                 for r in range(3)]
        for r, proc in enumerate(procs):
            out, err = proc.communicate(timeout=300)
            self.assertEqual(proc.returncode, 0, err)
            self.assertIn("in job-%d.kprof" % r, err)
            self.assertNotIn("every rank writes", err)
        self.assertEqual(self.files("job*"), ["job-0.kprof", "job-1.kprof", "job-2.kprof"])
        for r in range(3):
            rows = self.processes(os.path.join(self.tmp, "job-%d.kprof" % r))
            self.assertEqual([(q["launcher"], q["rank"], q["world_size"], q["kernels"])
                              for q in rows], [("openmpi", r, 3, KERNELS)])

    def test_expanded_name_is_checked_as_any_output(self):
        # The refusal to overwrite, and --force, apply to the expanded name.
        self.write("job-0.kprof", "not a trace")
        marker = os.path.join(self.tmp, "ran")
        rank0 = {"SLURM_PROCID": "0"}
        p = self.kprof("trace", "-o", "job-%r.kprof", "--", "touch", marker, env=rank0,
                       expect=2)
        self.assertIn("job-0.kprof exists; use --force", p.stderr)
        self.assertFalse(os.path.exists(marker))
        self.kprof("trace", "-o", "job-%r.kprof", "--force", "--", APP, "1", env=rank0,
                   expect=0)
        self.assertEqual(len(self.processes(os.path.join(self.tmp, "job-0.kprof"))), 1)
        # A pattern naming a folder of its own: the expanded folder must exist (an output that
        # cannot be written: exit 1, as for every writer).
        p = self.kprof("trace", "-o", "r%r/t.kprof", "--", "touch", marker, env=rank0)
        self.assertEqual(p.returncode, 1, p.stderr)
        self.assertIn("cannot write r0/t.kprof", p.stderr)
        os.mkdir(os.path.join(self.tmp, "r0"))
        self.kprof("trace", "-o", "r%r/t.kprof", "--", APP, "1", env=rank0, expect=0)
        self.assertTrue(os.path.exists(os.path.join(self.tmp, "r0", "t.kprof")))
        self.assertFalse(os.path.exists(marker))

    # (c) two ranks, one name: one file, the other's records kept

    def test_same_name_for_two_ranks_never_overwrites(self):
        # Each rank's program waits until both kprofs have made their outputs' temporaries (the
        # program starts only after that), so both find the name free and race at the end.
        script = ("touch ready.$OMPI_COMM_WORLD_RANK; while [ ! -e go ]; do sleep 0.01; done; "
                  "exec %s 2" % shlex.quote(APP))
        procs = [self.start("trace", "-o", "job.kprof", "--", "sh", "-c", script,
                            env={"OMPI_COMM_WORLD_RANK": r, "OMPI_COMM_WORLD_SIZE": 2})
                 for r in range(2)]
        try:
            deadline = time.monotonic() + 240
            while self.files("ready.*") != ["ready.0", "ready.1"]:
                self.assertTrue(all(q.poll() is None for q in procs),
                                "a rank ended before both started: %s"
                                % [q.communicate() for q in procs if q.poll() is not None])
                self.assertLess(time.monotonic(), deadline, "the ranks never started")
                time.sleep(0.02)
            self.write("go", "")
            results = [q.communicate(timeout=300) + (q.returncode,) for q in procs]
        finally:
            for q in procs:
                if q.poll() is None:
                    q.kill()
                    q.wait()
        for _, err, _ in results:  # both were told before anything ran
            self.assertIn("every rank writes job.kprof", err)
        codes = sorted(code for _, _, code in results)
        self.assertEqual(codes, [0, 1], [err for _, err, _ in results])
        winner = [r for r, res in enumerate(results) if res[2] == 0][0]
        loser = 1 - winner
        err = results[loser][1]
        self.assertIn("kprof: error: cannot write job.kprof: something else appeared there "
                      "meanwhile", err)
        self.assertIn("another process wrote", err)
        self.assertEqual(self.files("job*"), ["job.kprof"])  # no temporary left
        rows = self.processes(os.path.join(self.tmp, "job.kprof"))
        self.assertEqual([(q["rank"], q["kernels"]) for q in rows], [(winner, KERNELS)])
        # The loser's records are kept, and --merge makes its trace, host, boot id and clocks
        # included (run.txt carries kprof's own).
        kept = KEPT.findall(err)
        self.assertEqual(len(kept), 1, err)
        self.assertEqual(os.path.dirname(kept[0]), self.scratch)
        self.assertIn("kprof trace --merge %s -o FILE" % kept[0], err)
        self.kprof("trace", "--merge", kept[0], "-o", "loser.kprof", expect=0)
        self.assertFalse(os.path.exists(kept[0]))
        rows = self.processes(os.path.join(self.tmp, "loser.kprof"))
        self.assertEqual([(q["launcher"], q["rank"], q["kernels"]) for q in rows],
                         [("openmpi", loser, KERNELS)])
        self.check_host_and_clocks(os.path.join(self.tmp, "loser.kprof"), rows)

    # (d) the other patterns, and every refusal

    def test_variable_host_pid_and_percent(self):
        proc = self.start("trace", "-o", "t-%q{JOB_TAG}-%h-%p-%l-100%%.kprof", "--", APP, "1",
                          env={"JOB_TAG": "run42", "SLURM_PROCID": 3, "SLURM_LOCALID": 1})
        _, err = proc.communicate(timeout=300)
        self.assertEqual(proc.returncode, 0, err)
        name = "t-run42-%s-%d-1-100%%.kprof" % (socket.gethostname(), proc.pid)
        self.assertEqual(self.files("t-*"), [name])
        self.assertIn("in " + name, err)
        self.assertEqual(len(self.processes(os.path.join(self.tmp, name))), 1)

    def test_refused_patterns(self):
        marker = os.path.join(self.tmp, "ran")
        cases = [
            ("job-%r.kprof", {}, "no launcher variable gives it (looked for RANK, "
             "OMPI_COMM_WORLD_RANK, PMI_RANK, PMIX_RANK or SLURM_PROCID"),
            ("job-%r.kprof", {"RANK": "one", "SLURM_PROCID": "-2"}, "no launcher variable"),
            ("job-%l.kprof", {}, "looked for LOCAL_RANK, OMPI_COMM_WORLD_LOCAL_RANK, "
             "MPI_LOCALRANKID or SLURM_LOCALID"),
            ("job-%l.kprof", {"SLURM_PROCID": "0"}, "looked for SLURM_LOCALID"),
            ("job-%x.kprof", {}, "unknown pattern %x"),
            ("job-%", {}, "a % at the end of the name"),
            ("job-%q.kprof", {}, "%q takes a variable's name in braces"),
            ("job-%q{JOB_TAG.kprof", {}, "%q takes a variable's name in braces"),
            ("job-%q{JOB_TAG}.kprof", {"JOB_TAG": None}, "the variable JOB_TAG, which is not set"),
            ("job-%q{JOB_TAG}.kprof", {"JOB_TAG": ""}, "the variable JOB_TAG, which is empty"),
            ("job-%q{JOB_TAG}.kprof", {"JOB_TAG": "a/b"}, "holds '/'"),
            ("%q{JOB_TAG}/job.kprof", {"JOB_TAG": ".."}, "names a folder"),
        ]
        for pattern, env, message in cases:
            with self.subTest(pattern=pattern, env=env):
                p = self.kprof("trace", "-o", pattern, "--", "touch", marker, env=env)
                self.assertEqual(p.returncode, 2, p.stderr)
                self.assertIn("kprof: error: -o %s: " % pattern, p.stderr)
                self.assertIn(message, p.stderr)
                self.assertFalse(os.path.exists(marker), "the program ran")
        # The name is expanded before anything else is checked, --merge's too.
        p = self.kprof("trace", "--merge", self.tmp, "-o", "m-%r.kprof")
        self.assertEqual(p.returncode, 2, p.stderr)
        self.assertIn("%r is the process's rank", p.stderr)
        self.assertEqual([f for f in self.files() if f != "home"], ["scratch"])
        self.assertEqual(os.listdir(self.scratch), [])

    def test_help_names_the_patterns(self):
        out = self.kprof("trace", "--help", expect=0).stdout
        for words in ("%r (rank)", "%l (local rank)", "%p (kprof's pid)", "%h (host)",
                      "%q{VAR}", "%% (a %)", "-o 'job-%r.kprof'"):
            self.assertIn(words, out)


if __name__ == "__main__":
    kptest.main()
