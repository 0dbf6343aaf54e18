#!/usr/bin/env python3
"""The plugin SDK as a third-party provider author uses it.

Installs ccm into a scratch prefix with `meson install`, then builds the minimal C provider
out of tree twice -- with pkg-config (`cc $(pkg-config --cflags ccm-plugin-sdk) ...`, in
strict C11) and with CMake's find_package -- and the Rust example from the installed crate with
cargo, and has the installed cloud-controller-manager load each one through the ABI and report
it. Does the same for a C++ provider on the C++ helper: C++20 with pkg-config (and a clear
#error below it), and C++20 brought by CMake's ccm::plugin-sdk target when the project sets no
standard. Also checks the installed layout.
"""
import os
import shutil
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "support"))
from abi_version import abi_text  # noqa: E402
import unittest

BUILD = os.environ["CCM_BUILD_DIR"]
SOURCE = os.environ["CCM_SOURCE_DIR"]
EXAMPLE = os.path.join(SOURCE, "plugin-sdk", "examples", "minimal-c")
CPP_CONSUMER = os.path.join(SOURCE, "test", "sdk", "cpp-consumer")


def run(cmd, **kw):
    check = kw.pop("check", True)
    kw.setdefault("capture_output", True)
    kw.setdefault("text", True)
    result = subprocess.run(cmd, **kw)
    if check and result.returncode != 0:
        raise AssertionError("%s failed (%d):\n%s\n%s" % (" ".join(cmd), result.returncode,
                                                          result.stdout, result.stderr))
    return result


class SdkInstallTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.tmp = tempfile.mkdtemp(prefix="ccm-sdk-")
        os.chmod(cls.tmp, 0o755)
        cls.destdir = os.path.join(cls.tmp, "root")
        run(["meson", "install", "-C", BUILD, "--no-rebuild", "--destdir", cls.destdir,
             "--quiet"])
        intro = run(["meson", "introspect", BUILD, "--buildoptions"]).stdout
        import json
        opts = {o["name"]: o["value"] for o in json.loads(intro)}
        cls.prefix = opts["prefix"]
        cls.libdir = opts["libdir"]
        cls.root = cls.destdir + cls.prefix
        cls.pcdir = os.path.join(cls.root, cls.libdir, "pkgconfig")
        cls.binary = os.path.join(cls.root, "bin", "cloud-controller-manager")
        cls.plugindir = os.path.join(cls.tmp, "providers")
        os.mkdir(cls.plugindir, 0o755)

    @classmethod
    def tearDownClass(cls):
        shutil.rmtree(cls.tmp, ignore_errors=True)

    def pkgconfig(self, *args):
        env = dict(os.environ, PKG_CONFIG_PATH=self.pcdir)
        # The scratch install is relocated: point pkg-config's prefix at it.
        return run(["pkg-config", "--define-variable=prefix=" + self.root, *args,
                    "ccm-plugin-sdk"], env=env).stdout.split()

    def check_loads(self, so_name):
        out = run([self.binary, "--cloud-provider=minimal",
                   "--cloud-provider-plugin-dir=" + self.plugindir,
                   "--cloud-config=" + os.path.join(EXAMPLE, "machines.txt"),
                   "--check-config"], check=False)
        self.assertEqual(out.returncode, 0, out.stderr)
        self.assertIn("provider minimal 1.0.0 (ABI %s)" % abi_text(), out.stdout)
        self.assertIn("capabilities: ccm.instances/1", out.stdout)
        self.assertIn("minimal provider ready with 2 machines", out.stderr)

    def test_layout(self):
        for rel in ["bin/cloud-controller-manager", "bin/ccm-provider-check",
                    "include/ccm/provider_abi.h", "include/ccm/provider.hpp",
                    "include/ccm/types.hpp", "include/ccm/testing/fake_host.hpp",
                    "include/ccm/validation.hpp", "include/ccm/output_checks.hpp",
                    "include/ccm/negotiation.hpp", "include/ccm/service_checks.hpp",
                    "include/ccm/catalog.hpp", "include/ccm/plugin_text.hpp",
                    "share/ccm-plugin-sdk/provider.map",
                    "share/ccm-plugin-sdk/rust/Cargo.toml",
                    "share/ccm-plugin-sdk/rust/Cargo.lock",
                    "share/ccm-plugin-sdk/rust/src/lib.rs",
                    "share/ccm-plugin-sdk/rust/example-provider/src/lib.rs",
                    os.path.join(self.libdir, "pkgconfig", "ccm-plugin-sdk.pc"),
                    os.path.join(self.libdir, "cmake", "ccm-plugin-sdk",
                                 "ccm-plugin-sdk-config.cmake"),
                    os.path.join(self.libdir, "ccm", "providers", "fake-cloud.so")]:
            self.assertTrue(os.path.exists(os.path.join(self.root, rel)), rel)
        self.assertEqual(self.pkgconfig("--modversion")[0], abi_text())
        self.assertEqual(self.pkgconfig("--variable=rustdir"),
                         [os.path.join(self.root, "share", "ccm-plugin-sdk", "rust")])
        # Only the crate: no build files, nothing a build left behind.
        rust = os.path.join(self.root, "share", "ccm-plugin-sdk", "rust")
        for rel in ["meson.build", "cargo_build.py", "target"]:
            self.assertFalse(os.path.exists(os.path.join(rust, rel)), rel)

    def test_pkg_config_build_in_strict_c11(self):
        so = os.path.join(self.plugindir, "minimal.so")
        cmd = (["cc"] + self.pkgconfig("--cflags") +
               ["-std=c11", "-pedantic", "-Wall", "-Wextra", "-Werror", "-shared", "-fPIC",
                os.path.join(EXAMPLE, "minimal.c")] + self.pkgconfig("--libs") + ["-o", so])
        run(cmd)
        os.chmod(so, 0o755)
        exported = run(["nm", "-D", "--defined-only", so]).stdout
        names = [line.split()[-1] for line in exported.splitlines() if line.strip()]
        self.assertEqual(names, ["ccm_provider_entry_v1"])
        self.check_loads(so)
        # The installed checker passes it from the install prefix.
        check = run([os.path.join(self.root, "bin", "ccm-provider-check"), "--plugin=" + so,
                     "--cloud-config=" + os.path.join(EXAMPLE, "machines.txt")], check=False)
        self.assertEqual(check.returncode, 0, check.stdout + check.stderr)
        self.assertIn("PASS contract create: provider \"minimal\"", check.stdout)
        self.assertEqual(check.stdout.splitlines()[-1], "PASS " + so)
        # The same provider refuses a broken machine list with a message naming the line.
        bad = os.path.join(self.tmp, "bad.txt")
        with open(bad, "w") as f:
            f.write("node-a zone-1 small\n")
        out = run([self.binary, "--cloud-provider=minimal",
                   "--cloud-provider-plugin-dir=" + self.plugindir, "--cloud-config=" + bad,
                   "--check-config"], check=False)
        self.assertEqual(out.returncode, 1)
        self.assertIn("provider minimal refused its configuration (--cloud-config=" + bad +
                      "): line 1: expected", out.stderr)
        os.remove(so)

    def check_tiny_loads(self):
        out = run([self.binary, "--cloud-provider=tiny",
                   "--cloud-provider-plugin-dir=" + self.plugindir, "--check-config"],
                  check=False)
        self.assertEqual(out.returncode, 0, out.stderr)
        self.assertIn("provider tiny 0.1.0 (ABI %s)" % abi_text(), out.stdout)
        self.assertIn("capabilities: ccm.instances/1", out.stdout)
        self.assertIn("tiny provider ready (ABI minor %s)" % abi_text().split(".")[1],
                      out.stderr)

    def test_cpp_provider_with_pkg_config_needs_cpp20_and_says_so(self):
        so = os.path.join(self.plugindir, "tiny.so")
        flags = (self.pkgconfig("--cflags") +
                 ["-Wall", "-Wextra", "-Werror", "-fvisibility=hidden", "-shared", "-fPIC",
                  os.path.join(CPP_CONSUMER, "tiny.cpp")] + self.pkgconfig("--libs") +
                 ["-o", so])
        old = run(["c++", "-std=c++17"] + flags, check=False)
        self.assertNotEqual(old.returncode, 0)
        self.assertIn("ccm/provider.hpp needs C++20: compile with -std=c++20", old.stderr)
        run(["c++", "-std=c++20"] + flags)
        os.chmod(so, 0o755)
        exported = run(["nm", "-D", "--defined-only", so]).stdout
        names = [line.split()[-1] for line in exported.splitlines() if line.strip()]
        self.assertEqual(names, ["ccm_provider_entry_v1"])
        self.check_tiny_loads()
        os.remove(so)
        # pkg-config cannot carry the standard (it would reach C users): it says it instead.
        with open(os.path.join(self.pcdir, "ccm-plugin-sdk.pc")) as f:
            self.assertIn("C++20 (-std=c++20) for the C++ helpers", f.read())

    def test_cpp_provider_with_cmake_gets_cpp20_from_the_target(self):
        if shutil.which("cmake") is None:
            self.skipTest("cmake is not installed")
        build = os.path.join(self.tmp, "cmake-cpp-build")
        # The project sets no C++ standard; the compiler's default is older than C++20.
        run(["cmake", "-S", CPP_CONSUMER, "-B", build, "-DCMAKE_PREFIX_PATH=" + self.root,
             "-DCMAKE_CXX_FLAGS=-Werror -Wall -Wextra"])
        run(["cmake", "--build", build])
        so = os.path.join(self.plugindir, "tiny.so")
        shutil.copy(os.path.join(build, "tiny.so"), so)
        os.chmod(so, 0o755)
        self.check_tiny_loads()
        os.remove(so)

    def test_cmake_build(self):
        if shutil.which("cmake") is None:
            self.skipTest("cmake is not installed")
        build = os.path.join(self.tmp, "cmake-build")
        run(["cmake", "-S", EXAMPLE, "-B", build, "-DCMAKE_PREFIX_PATH=" + self.root,
             "-DCMAKE_C_FLAGS=-Werror -Wall -Wextra"])
        run(["cmake", "--build", build])
        so = os.path.join(self.plugindir, "minimal.so")
        shutil.copy(os.path.join(build, "minimal.so"), so)
        os.chmod(so, 0o755)
        self.check_loads(so)
        os.remove(so)

    def test_rust_example_from_the_installed_crate(self):
        cargo = os.environ.get("CCM_CARGO")
        if not cargo:
            self.skipTest("the build found no cargo (./dev installs it)")
        rust = self.pkgconfig("--variable=rustdir")[0]
        target = os.path.join(self.tmp, "cargo-target")
        env = dict(os.environ, CARGO_TARGET_DIR=target,
                   CARGO_HOME=os.path.join(self.tmp, "cargo-home"))
        run([cargo, "build", "--offline", "--locked", "--release", "--quiet", "--manifest-path",
             os.path.join(rust, "example-provider", "Cargo.toml")], env=env)
        built = os.path.join(target, "release", "librust_example.so")
        exported = run(["nm", "-D", "--defined-only", built]).stdout
        names = [line.split()[-1] for line in exported.splitlines() if line.strip()]
        self.assertEqual(names, ["ccm_provider_entry_v1"])
        so = os.path.join(self.plugindir, "rust-example.so")
        shutil.copy(built, so)
        os.chmod(so, 0o755)
        machines = os.path.join(self.tmp, "rust-machines.txt")
        with open(machines, "w") as f:
            f.write("node-a zone-1 small 10.0.0.1\n")
        out = run([self.binary, "--cloud-provider=rust-example",
                   "--cloud-provider-plugin-dir=" + self.plugindir,
                   "--cloud-config=" + machines, "--check-config"], check=False)
        self.assertEqual(out.returncode, 0, out.stderr)
        self.assertIn("provider rust-example 0.1.0 (ABI %s)" % abi_text(), out.stdout)
        self.assertIn("capabilities: ccm.instances/1, ccm.routes/1", out.stdout)
        os.remove(so)


if __name__ == "__main__":
    unittest.main(verbosity=2)
