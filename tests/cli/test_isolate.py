"""kprof isolate: scratch kernel folders, templates, --from, and names that must not escape."""

import os

import kptest


class Isolate(kptest.KprofTestCase):
    needs_opencl = False

    def kernel_dir(self, name):
        return os.path.join(self.home, "kernels", name)

    def test_template_opencl(self):
        p = self.kprof("isolate", "demo", "--lang", "cl", expect=0)
        path = os.path.join(self.kernel_dir("demo"), "kernel.cl")
        self.assertIn(path, p.stdout)
        src = open(path).read()
        self.assertIn("__kernel void demo_add", src)
        self.assertIn("out[i] = a[i] + b[i]", src)
        self.assertIn("kprof run demo", p.stdout)

    def test_template_cuda(self):
        self.kprof("isolate", "cu", "--lang", "cu", expect=0)
        src = open(os.path.join(self.kernel_dir("cu"), "kernel.cu")).read()
        self.assertIn('extern "C" __global__ void demo_add', src)

    def test_default_language_follows_default_device(self):
        self.kprof("isolate", "d", expect=0)
        files = os.listdir(self.kernel_dir("d"))
        cuda_ok, _ = kptest.cuda_available()
        self.assertEqual(files, ["kernel.cu"] if cuda_ok else ["kernel.cl"])

    def test_kprof_home_default_is_dot_kprof(self):
        env = {"KPROF_HOME": None}
        self.kprof("isolate", "x", "--lang", "cl", env=env, expect=0)
        self.assertTrue(os.path.exists(os.path.join(self.tmp, ".kprof", "kernels", "x", "kernel.cl")))

    def test_existing_kernel_kept_unless_force(self):
        self.kprof("isolate", "k", "--lang", "cl", expect=0)
        path = os.path.join(self.kernel_dir("k"), "kernel.cl")
        with open(path, "w") as f:
            f.write("my work")
        p = self.kprof("isolate", "k", "--lang", "cl", expect=2)
        self.assertIn("already holds", p.stderr)
        self.assertIn("--force", p.stderr)
        self.assertEqual(open(path).read(), "my work")
        self.kprof("isolate", "k", "--lang", "cu", "--force", expect=0)
        self.assertEqual(os.listdir(self.kernel_dir("k")), ["kernel.cu"])

    def test_force_takes_the_old_kernels_results_along(self):
        self.kprof("isolate", "k", "--lang", "cl", expect=0)
        d = self.kernel_dir("k")
        self.kprof("run", "k", "--entry", "demo_add", "--grid", "1024", "--tg", "64", "--buffers",
                   "f32:1024,f32:1024,f32:1024,u32=1024", "--iters", "2", "--json", expect=0)
        self.assertTrue(os.path.exists(os.path.join(d, "run.json")))
        # The same source written again: its results still describe it.
        self.kprof("isolate", "k", "--lang", "cl", "--force", expect=0)
        self.assertTrue(os.path.exists(os.path.join(d, "run.json")))
        # Another source: the results of the old one go, and kprof says so.
        with open(os.path.join(d, "kernel.cl"), "a") as f:
            f.write("\n// changed\n")
        with open(os.path.join(d, "sweep.json"), "w") as f:
            f.write("{}")
        p = self.kprof("isolate", "k", "--lang", "cl", "--force", expect=0)
        self.assertEqual(sorted(os.listdir(d)), ["kernel.cl"])
        self.assertIn("run.json", p.stdout)
        self.assertIn("sweep.json", p.stdout)

    def test_from_file(self):
        src = self.write("mine.cl", "__kernel void k(__global int *x) { x[0] = 1; }\n")
        self.kprof("isolate", "m", "--from", src, expect=0)
        self.assertEqual(open(os.path.join(self.kernel_dir("m"), "kernel.cl")).read(),
                         open(src).read())

    def test_from_errors(self):
        p = self.kprof("isolate", "m", "--from", os.path.join(self.tmp, "nope.cl"), expect=2)
        self.assertIn("no such file", p.stderr)
        txt = self.write("k.txt", "x")
        p = self.kprof("isolate", "m", "--from", txt, expect=2)
        self.assertIn("unknown kernel language", p.stderr)
        p = self.kprof("isolate", "m", "--from", self.tmp + "/", expect=2)
        self.assertFalse(os.path.exists(self.kernel_dir("m")))

    def test_names_that_would_escape_are_refused(self):
        for name in ("../evil", "a/b", ".hidden", "..", "/abs", "sp ace", "x" * 101):
            p = self.kprof("isolate", name, "--lang", "cl", expect=2)
            self.assertIn("kprof: error: kernel name", p.stderr, name)
        self.assertFalse(os.path.exists(os.path.join(self.home, "evil")))
        self.assertFalse(os.path.exists(os.path.join(self.tmp, "evil")))
        self.assertFalse(os.path.exists(os.path.join(self.home, "kernels")))

    def test_usage_errors(self):
        self.kprof("isolate", expect=2)
        self.kprof("isolate", "a", "b", expect=2)
        self.kprof("isolate", "a", "--lang", "metal", expect=2)
        self.kprof("isolate", "a", "--bogus", expect=2)


if __name__ == "__main__":
    kptest.main()
