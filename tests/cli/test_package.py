"""An installed kprof, used from outside its tree as a user would: `cmake --install` of this
build into a temporary prefix, then tests/package/consumer.c built against it with pkg-config
(libkprof.so, and libkprof.a with --static) and with find_package(kprof CONFIG) (kprof::kprof and
kprof::kprof_static), each run and its output compared; the installed files, the soname, no path
of the build tree in what was installed, and the installed kprof finding libkprof-inject.so."""

import glob
import os
import re
import shlex
import shutil
import subprocess
import tempfile
import unittest

import kptest

BUILD_DIR = os.environ.get("KPROF_BUILD_DIR")
CMAKE = os.environ.get("KPROF_CMAKE", "cmake")
PACKAGE_DIR = os.path.join(kptest.SOURCE_DIR, "tests", "package")
# A sanitized build installs a sanitized libkprof: its consumers must be built with the runtime.
SANITIZE = ["-fsanitize=address,undefined"] if os.environ.get("KPROF_SANITIZED") == "1" else []


def header_version():
    text = open(os.path.join(kptest.SOURCE_DIR, "include", "kprof.h")).read()
    return re.search(r'#define KPROF_VERSION_STRING "([^"]+)"', text).group(1)


def build_cache(name):
    """A variable of kprof's own build's CMakeCache.txt, or None."""
    with open(os.path.join(BUILD_DIR, "CMakeCache.txt")) as f:
        m = re.search(r"^%s:[A-Z]+=(.*)$" % re.escape(name), f.read(), re.M)
    return m.group(1) if m and m.group(1) else None


def run(args, env=None, cwd=None):
    full_env = dict(os.environ)
    full_env.update(env or {})
    return subprocess.run(args, env=full_env, cwd=cwd, capture_output=True, text=True,
                          timeout=120)


class Package(kptest.KprofTestCase):
    needs_opencl = False

    @classmethod
    def setUpClass(cls):
        if not BUILD_DIR:
            raise unittest.SkipTest("KPROF_BUILD_DIR not set (run through ctest)")
        cls.root = tempfile.mkdtemp(prefix="kprof-package-")
        cls.prefix = os.path.join(cls.root, "prefix")
        p = run([CMAKE, "--install", BUILD_DIR, "--prefix", cls.prefix])
        if p.returncode != 0:
            shutil.rmtree(cls.root, ignore_errors=True)
            raise AssertionError("cmake --install failed:\n" + p.stdout + p.stderr)
        libs = glob.glob(os.path.join(cls.prefix, "lib*", "**", "libkprof.so"), recursive=True)
        cls.libdir = os.path.dirname(libs[0]) if len(libs) == 1 else None
        cls.version = header_version()
        cls.expected = "kprof %s\nFAULT: kernel fault (exit 4)\n" % cls.version

    @classmethod
    def tearDownClass(cls):
        shutil.rmtree(cls.root, ignore_errors=True)

    def setUp(self):
        super().setUp()
        self.assertIsNotNone(self.libdir, "no single libkprof.so installed under %s" % self.prefix)

    def check_runs(self, program, env=None):
        p = run([program], env=env)
        self.assertEqual((p.returncode, p.stdout), (0, self.expected),
                         "%s\nstderr:\n%s" % (program, p.stderr))

    def needed(self, program):
        out = run(["readelf", "-d", program]).stdout
        return re.findall(r"\(NEEDED\)\s+Shared library: \[([^\]]+)\]", out)

    def pkg_config(self, *args):
        # pkg-config is part of kprof's install, as PoCL is: missing, this fails, unless the
        # machine is known to lack it (scripts/gpu-suite's GPU image).
        if not shutil.which("pkg-config"):
            if os.environ.get("KPROF_ALLOW_NO_PKG_CONFIG") == "1":
                self.skipTest("no pkg-config on this machine")
            self.fail("no pkg-config on this machine (run scripts/install: it installs pkgconf)")
        p = run(["pkg-config"] + list(args) + ["kprof"],
                env={"PKG_CONFIG_PATH": os.path.join(self.libdir, "pkgconfig")})
        self.assertEqual(p.returncode, 0, p.stderr)
        return shlex.split(p.stdout)

    def compile(self, out, flags):
        # Strict flags: the installed header must compile clean on its own as C11.
        args = ["cc", "-std=c11", "-Wall", "-Wextra", "-Werror", "-pedantic"] + SANITIZE + [
            os.path.join(PACKAGE_DIR, "consumer.c"), "-o", out] + flags
        p = run(args)
        self.assertEqual(p.returncode, 0, " ".join(args) + "\n" + p.stderr)
        return out

    def test_installed_files(self):
        lib = os.path.relpath(self.libdir, self.prefix)
        for f in ["bin/kprof", "include/kprof.h", lib + "/libkprof.so.%s" % self.version,
                  lib + "/libkprof.a", lib + "/libkprof-inject.so", lib + "/pkgconfig/kprof.pc",
                  lib + "/cmake/kprof/kprofConfig.cmake",
                  lib + "/cmake/kprof/kprofConfigVersion.cmake",
                  lib + "/cmake/kprof/kprofTargets.cmake"]:
            self.assertTrue(os.path.isfile(os.path.join(self.prefix, f)), f + " not installed")
        # Versioned soname: libkprof.so -> libkprof.so.0 -> libkprof.so.0.1.0.
        major = self.version.split(".")[0]
        so = os.path.join(self.libdir, "libkprof.so")
        self.assertEqual(os.readlink(so), "libkprof.so." + major)
        self.assertEqual(os.readlink(so + "." + major), "libkprof.so." + self.version)
        out = run(["readelf", "-d", so + "." + self.version]).stdout
        self.assertIn("Library soname: [libkprof.so.%s]" % major, out)
        # The project's version and the header's are one.
        cmake_lists = open(os.path.join(kptest.SOURCE_DIR, "CMakeLists.txt")).read()
        self.assertEqual(re.search(r"project\(kprof VERSION (\S+)", cmake_lists).group(1),
                         self.version)
        # Every public header, and nothing else, in include/.
        public = sorted(os.path.basename(f) for pattern in ("*.h", "*.hpp") for f in
                        glob.glob(os.path.join(kptest.SOURCE_DIR, "include", pattern)))
        self.assertEqual(sorted(os.listdir(os.path.join(self.prefix, "include"))), public)

    def test_no_build_tree_paths(self):
        # An installed file that names the build or the source tree breaks once they are gone.
        trees = [os.path.realpath(BUILD_DIR), os.path.realpath(kptest.SOURCE_DIR)]
        for folder, _, files in os.walk(self.prefix):
            for name in files:
                path = os.path.join(folder, name)
                if os.path.islink(path):
                    continue
                if name.endswith((".cmake", ".pc", ".h", ".hpp")):
                    text = open(path).read()
                else:  # the binaries' RPATH/RUNPATH
                    text = run(["readelf", "-d", path]).stdout
                for tree in trees:
                    self.assertNotIn(tree, text, path)

    def test_pkg_config_shared(self):
        cflags = self.pkg_config("--cflags", "--libs")
        self.assertIn("-lkprof", cflags)
        app = self.compile(os.path.join(self.root, "consumer_pc"), cflags)
        self.assertIn("libkprof.so.%s" % self.version.split(".")[0], self.needed(app))
        inherited = os.environ.get("LD_LIBRARY_PATH")
        self.check_runs(app, env={"LD_LIBRARY_PATH": ":".join(
            d for d in (self.libdir, inherited) if d)})

    def test_pkg_config_static(self):
        flags = self.pkg_config("--static", "--cflags", "--libs")
        # libkprof.a, not the libkprof.so beside it; the rest is what it needs (Libs.private).
        flags = ["-l:libkprof.a" if f == "-lkprof" else f for f in flags]
        # SQLite where kprof's build found it (.carry/lib on the GPU machine; nothing on Debian).
        flags += ["-L" + d for d in (build_cache("CMAKE_LIBRARY_PATH") or "").split(";") if d]
        app = self.compile(os.path.join(self.root, "consumer_pc_static"), flags)
        self.assertFalse([n for n in self.needed(app) if "kprof" in n], self.needed(app))
        self.check_runs(app)

    def test_find_package(self):
        src = os.path.join(self.root, "consumer-src")
        build = os.path.join(self.root, "consumer-build")
        shutil.copytree(PACKAGE_DIR, src)
        flags = " ".join(SANITIZE)
        # kprof::kprof_static's SQLite is found where kprof's build found it: by default paths
        # on a Debian machine, through .carry/ on the GPU one (scripts/gpu-suite).
        prefixes = [self.prefix] + [build_cache("CMAKE_PREFIX_PATH")]
        args = ["-DCMAKE_PREFIX_PATH=" + ";".join(p for p in prefixes if p)]
        for name in ("CMAKE_INCLUDE_PATH", "CMAKE_LIBRARY_PATH"):
            if build_cache(name):
                args.append("-D%s=%s" % (name, build_cache(name)))
        p = run([CMAKE, "-S", src, "-B", build, "-DCMAKE_C_FLAGS=" + flags,
                 "-DCMAKE_EXE_LINKER_FLAGS=" + flags] + args)
        self.assertEqual(p.returncode, 0, p.stdout + p.stderr)
        cache = open(os.path.join(build, "CMakeCache.txt")).read()
        found = re.search(r"^kprof_DIR:PATH=(.*)$", cache, re.M).group(1)
        self.assertEqual(os.path.realpath(found),
                         os.path.realpath(os.path.join(self.libdir, "cmake", "kprof")))
        p = run([CMAKE, "--build", build])
        self.assertEqual(p.returncode, 0, p.stdout + p.stderr)
        # kprof::kprof through the build's RPATH to the installed libdir, no LD_LIBRARY_PATH.
        self.check_runs(os.path.join(build, "consumer"))
        static = os.path.join(build, "consumer_static")
        self.assertFalse([n for n in self.needed(static) if "kprof" in n], self.needed(static))
        self.check_runs(static)

    def test_installed_kprof_finds_its_collector(self):
        # `kprof trace` names libkprof-inject.so to the traced program; installed, it is in the
        # libdir (lib/ or lib/<multiarch>/), not beside bin/kprof.
        out = os.path.join(self.root, "t.kprof")
        kprof = os.path.join(self.prefix, "bin", "kprof")
        env = dict(os.environ)
        for k in ("KPROF_INJECT_LIBRARY", "NVTX_INJECTION64_PATH", "CUDA_INJECTION64_PATH"):
            env.pop(k, None)
        env.update({"KPROF_HOME": self.home, "KPROF_CACHE_DIR": self.cache,
                    "KPROF_STORE": os.path.join(self.tmp, "store.db")})
        p = subprocess.run([kprof, "trace", "-o", out, "--", "sh", "-c",
                            "echo $NVTX_INJECTION64_PATH"], env=env, capture_output=True,
                           text=True, timeout=120)
        self.assertEqual(p.returncode, 0, p.stderr)
        self.assertEqual(p.stdout.strip(),
                         os.path.realpath(os.path.join(self.libdir, "libkprof-inject.so")))


if __name__ == "__main__":
    kptest.main()
