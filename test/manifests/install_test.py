#!/usr/bin/python3
"""The Containerfile, checked without a container engine, and the install layout.

No engine runs here, so the image cannot be built. What can be checked is checked:
  - the Containerfile's shape: a Debian bookworm build stage with the packages ./dev installs
    for building, a debian:bookworm-slim runtime stage with only runtime libraries, a non-root
    user, the entrypoint, the providers in the default plugin directory;
  - its build steps, replayed in a scratch directory: the files it COPYs into the build stage
    are copied into a scratch source tree, `meson setup` runs there with the Containerfile's
    exact options, `meson compile` is dry-run with its targets (they must exist), and
    `meson install --no-rebuild --destdir` installs with the image's layout. Compiling a
    second, release build would take far too long on this machine, so the binaries that
    install copies are the ones of the build under test (same sources; only the
    configuration-dependent default plugin directory is checked separately);
  - the installed tree: binary, providers (permissions the host accepts), SDK headers,
    pkg-config and CMake files, the binary loading a provider from the installed plugin
    directory;
  - the runtime stage's COPY lines applied to that tree, and every shared library the binary
    and the providers load mapped to its Debian package (dpkg -S): each must come from a
    package the runtime stage installs, from what those depend on, or from the base image.

Environment (set by meson): CCM_BUILD_DIR, CCM_SOURCE_DIR.
"""
import glob
import json
import os
import re
import shlex
import shutil
import stat
import subprocess
import tempfile
import unittest

BUILD = os.environ["CCM_BUILD_DIR"]
SOURCE = os.environ["CCM_SOURCE_DIR"]
CONTAINERFILE = os.path.join(SOURCE, "Containerfile")
IMAGE_PLUGIN_DIR = "/usr/lib/ccm/providers"
# In debian:bookworm-slim already (apt needs them): the C and C++ runtimes.
BASE_IMAGE_PACKAGES = {"libc6", "libgcc-s1", "libstdc++6"}


def run(cmd, check=True, **kw):
    kw.setdefault("capture_output", True)
    kw.setdefault("text", True)
    r = subprocess.run(cmd, **kw)
    if check and r.returncode != 0:
        raise AssertionError("%s failed (%d):\n%s\n%s" % (" ".join(cmd), r.returncode,
                                                          r.stdout[-3000:], r.stderr[-3000:]))
    return r


# ---- Containerfile parsing ---------------------------------------------------------------------

class Stage:
    def __init__(self, image, name):
        self.image = image
        self.name = name
        self.instructions = []  # (KEYWORD, argument text)

    def runs(self):
        """Every shell command of the RUN instructions, split at && and ;."""
        out = []
        for kw, arg in self.instructions:
            if kw == "RUN":
                for part in re.split(r"&&|;", arg):
                    words = shlex.split(part)
                    if words:
                        out.append(words)
        return out

    def command(self, *prefix):
        found = [w for w in self.runs() if w[:len(prefix)] == list(prefix)]
        return found

    def apt_packages(self):
        pkgs = []
        for words in self.runs():
            # DEBIAN_FRONTEND=... apt-get install ...
            while words and "=" in words[0]:
                words = words[1:]
            if words[:2] == ["apt-get", "install"]:
                pkgs += [w for w in words[2:] if not w.startswith("-")]
        return pkgs

    def values(self, keyword):
        return [arg for kw, arg in self.instructions if kw == keyword]


def parse_containerfile(path):
    with open(path) as f:
        text = f.read()
    # Join continuation lines; drop comments.
    logical = []
    current = ""
    for line in text.splitlines():
        if line.strip().startswith("#") and not current:
            continue
        if line.strip().startswith("#"):
            continue
        if line.rstrip().endswith("\\"):
            current += line.rstrip()[:-1] + " "
            continue
        current += line
        if current.strip():
            logical.append(current.strip())
        current = ""
    stages = []
    for line in logical:
        kw, _, arg = line.partition(" ")
        kw = kw.upper()
        if kw == "FROM":
            words = arg.split()
            name = words[2] if len(words) == 3 and words[1].upper() == "AS" else None
            stages.append(Stage(words[0], name))
        else:
            if not stages:
                raise AssertionError("instruction before FROM: " + line)
            stages[-1].instructions.append((kw, arg.strip()))
    return stages


def dev_packages():
    with open(os.path.join(SOURCE, "dev")) as f:
        text = f.read()
    m = re.search(r"^PACKAGES=\((.*?)^\)", text, re.S | re.M)
    if not m:
        raise AssertionError("no PACKAGES=( ... ) in ./dev")
    words = []
    for line in m.group(1).splitlines():
        line = line.split("#")[0]
        words += line.split()
    return words


# ---- Debian packages -------------------------------------------------------------------------

_OWNERS = {}


def _candidates(path):
    """`path` and the spellings dpkg may know it by (usr-merged /lib vs /usr/lib)."""
    out = [path, os.path.realpath(path)]
    for p in list(out):
        if p.startswith("/usr/lib/"):
            out.append(p[4:])
        elif p.startswith(("/lib/", "/lib64/")):
            out.append("/usr" + p)
    return list(dict.fromkeys(out))


def packages_of(paths):
    """{path: owning Debian package or None}, with one dpkg -S call for all of them."""
    todo = sorted({c for p in paths if p not in _OWNERS for c in _candidates(p)})
    found = {}
    if todo:
        r = run(["dpkg", "-S"] + todo, check=False)
        for line in r.stdout.splitlines():
            if line.startswith("diversion") or ": " not in line:
                continue
            pkgs, path = line.split(": ", 1)
            found[path.strip()] = pkgs.split(",")[0].split(":")[0].strip()
    for p in paths:
        if p not in _OWNERS:
            _OWNERS[p] = next((found[c] for c in _candidates(p) if c in found), None)
    return {p: _OWNERS[p] for p in paths}


def package_of(path):
    return packages_of([path])[path]


def depends_closure(packages):
    """The packages and, recursively, what they depend on (installed packages only)."""
    seen = set()
    todo = set(packages)
    while todo:
        r = run(["dpkg-query", "-W", "-f=${Package}\t${Depends}, ${Pre-Depends}\n"] +
                sorted(todo), check=False)  # not installed (or virtual) ones are left out
        seen |= todo
        todo = set()
        for line in r.stdout.splitlines():
            deps = line.split("\t", 1)[1] if "\t" in line else ""
            for group in deps.split(","):
                for alt in group.split("|"):
                    name = alt.strip().split(" ")[0].split(":")[0]
                    if name and name not in seen:
                        todo.add(name)
    installed = run(["dpkg-query", "-W", "-f=${Package}\n"] + sorted(seen), check=False)
    return set(installed.stdout.split())


def needed(path):
    out = run(["objdump", "-p", path]).stdout
    return re.findall(r"^\s*NEEDED\s+(\S+)", out, re.M)


def resolved_libraries(path):
    """{soname: resolved path} of everything `path` loads, transitively (ldd)."""
    out = run(["ldd", path]).stdout
    libs = {}
    for line in out.splitlines():
        line = line.strip()
        m = re.match(r"(\S+) => (\S+) \(", line)
        if m:
            libs[m.group(1)] = m.group(2)
        elif line.startswith("/"):
            libs[os.path.basename(line.split()[0])] = line.split()[0]
        elif "not found" in line:
            libs[line.split()[0]] = None
    return libs


# ---- the tests -------------------------------------------------------------------------------

class ContainerfileTest(unittest.TestCase):

    @classmethod
    def setUpClass(cls):
        cls.stages = parse_containerfile(CONTAINERFILE)

    def build_stage(self):
        return self.stages[0]

    def runtime_stage(self):
        return self.stages[-1]

    def test_stages(self):
        self.assertEqual(len(self.stages), 2, [s.image for s in self.stages])
        self.assertEqual(self.build_stage().image, "debian:bookworm")
        self.assertEqual(self.build_stage().name, "build")
        self.assertEqual(self.runtime_stage().image, "debian:bookworm-slim")

    def test_build_stage_has_what_the_build_needs_from_what_dev_installs(self):
        have = set(self.build_stage().apt_packages())
        # The same Debian packages as ./dev (which also installs test-only ones).
        self.assertEqual(sorted(have - set(dev_packages())), [],
                         "build stage packages that ./dev does not install")
        # Everything the build uses comes from them or from what they pull in: the tools
        # meson runs and the libraries it finds through pkg-config or headers (-Dtests=false:
        # no doctest, no test definitions).
        closure = depends_closure(have)
        paths = [shutil.which(t) for t in ["meson", "ninja", "cc", "c++", "pkg-config"]]
        for pc in ["libcurl", "yaml-cpp", "fmt", "openssl", "RapidJSON"]:
            d = run(["pkg-config", "--variable=pcfiledir", pc]).stdout.strip()
            paths.append(os.path.join(d, pc + ".pc"))
        paths += ["/usr/include/boost/version.hpp"]
        owners = packages_of([os.path.realpath(p) for p in paths])
        for path, pkg in owners.items():
            self.assertIn(pkg, closure, "%s comes from %s, which the build stage does not "
                                        "install" % (path, pkg))

    def test_runtime_stage(self):
        rt = self.runtime_stage()
        self.assertEqual(sorted(rt.apt_packages()),
                         sorted(["libcurl4", "libyaml-cpp0.7", "libfmt9", "libssl3",
                                 "ca-certificates"]))
        for pkg in rt.apt_packages():  # bookworm has them (this machine is bookworm)
            self.assertEqual(run(["dpkg-query", "-W", "-f=${Status}", pkg],
                                 check=False).stdout, "install ok installed", pkg)
        self.assertEqual(rt.values("USER"), ["65532:65532"])
        useradd = rt.command("useradd")
        self.assertEqual(len(useradd), 1)
        self.assertIn("--uid", useradd[0])
        self.assertEqual(useradd[0][useradd[0].index("--uid") + 1], "65532")
        self.assertEqual([json.loads(v) for v in rt.values("ENTRYPOINT")],
                         [["/usr/bin/cloud-controller-manager"]])
        copies = [v.split() for v in rt.values("COPY")]
        self.assertTrue(copies)
        for c in copies:
            self.assertEqual(c[0], "--from=build", c)
        dests = [c[-1] for c in copies]
        self.assertIn("/usr/bin/cloud-controller-manager", dests)
        self.assertIn(IMAGE_PLUGIN_DIR + "/", dests)
        # Nothing but the binary and the providers: no compiler, no sources, no SDK.
        self.assertEqual(len(copies), 2)

    def test_build_steps(self):
        b = self.build_stage()
        setup = b.command("meson", "setup")
        self.assertEqual(len(setup), 1)
        opts = setup[0][3:]
        self.assertIn("--buildtype=release", opts)
        self.assertIn("--prefix=/usr", opts)
        self.assertIn("-Dplugin_dir=" + IMAGE_PLUGIN_DIR, opts)
        install = b.command("meson", "install")
        self.assertEqual(len(install), 1)
        self.assertIn("--destdir", install[0])
        self.assertEqual(b.command("umask"), [["umask", "022"]])
        # The runtime stage copies from where the build stage installs.
        destdir = install[0][install[0].index("--destdir") + 1]
        for c in self.runtime_stage().values("COPY"):
            self.assertTrue(c.split()[1].startswith(destdir + "/"), c)

    def test_manifests_and_docs_agree_with_the_image(self):
        for path in ["manifests/daemonset.yaml", "manifests/ha/deployment.yaml"]:
            with open(os.path.join(SOURCE, path)) as f:
                text = f.read()
            self.assertIn("--cloud-provider-plugin-dir=" + IMAGE_PLUGIN_DIR, text, path)
            self.assertIn("runAsUser: 65532", text, path)
        with open(os.path.join(SOURCE, "docs", "deployment.md")) as f:
            doc = f.read()
        self.assertIn(IMAGE_PLUGIN_DIR, doc)
        self.assertIn("-Dplugin_dir=" + IMAGE_PLUGIN_DIR, doc)


class ReplayTest(unittest.TestCase):
    """The build stage's steps in a scratch directory, then the runtime stage's COPYs."""

    @classmethod
    def setUpClass(cls):
        cls.stages = parse_containerfile(CONTAINERFILE)
        build, runtime = cls.stages[0], cls.stages[-1]
        cls.tmp = tempfile.mkdtemp(prefix="ccm-image-")
        os.chmod(cls.tmp, 0o755)
        src = os.path.join(cls.tmp, "src")
        os.mkdir(src)
        # COPY <paths...> <dest> into WORKDIR (the build stage's context copy).
        for arg in build.values("COPY"):
            words = arg.split()
            if words[0].startswith("--"):
                raise AssertionError("unexpected COPY option in the build stage: " + arg)
            *paths, dest = words
            for p in paths:
                target = os.path.join(src, dest if dest not in ("./", ".") else "",
                                      os.path.basename(p) if dest in ("./", ".") else "")
                origin = os.path.join(SOURCE, p)
                if os.path.isdir(origin):
                    shutil.copytree(origin, target, symlinks=True,
                                    ignore=shutil.ignore_patterns("__pycache__"))
                else:
                    shutil.copy2(origin, target)
        cls.src = src
        setup = build.command("meson", "setup")[0]
        cls.setup_opts = setup[3:]
        cls.builddir = os.path.join(cls.tmp, "build")
        run(["meson", "setup", cls.builddir] + cls.setup_opts, cwd=src)
        words = build.command("meson", "compile")[0][2:]
        if words[:1] == ["-C"]:
            words = words[2:]
        cls.compile_targets = words
        install = build.command("meson", "install")[0]
        cls.destdir = os.path.join(cls.tmp, "out")
        cls.install_cmd = install
        cls.runtime = runtime
        cls.rootfs = os.path.join(cls.tmp, "rootfs")

    @classmethod
    def tearDownClass(cls):
        if os.environ.get("CCM_KEEP_TEST_DIRS") != "1":
            shutil.rmtree(cls.tmp, ignore_errors=True)

    def intro(self, what):
        return json.loads(run(["meson", "introspect", self.builddir, "--" + what]).stdout)

    def install(self):
        """meson install from the scratch build, with our build's binaries in it."""
        if os.path.exists(self.destdir):
            return
        for built in self.intro("installed"):
            rel = os.path.relpath(built, self.builddir)
            if rel.startswith(".."):
                continue  # a source file (headers, provider.map)
            if os.path.exists(built):
                continue  # generated at configure time (pkg-config, CMake files)
            ours = os.path.join(BUILD, rel)
            self.assertTrue(os.path.exists(ours), "%s is not built in %s" % (rel, BUILD))
            os.makedirs(os.path.dirname(built), exist_ok=True)
            shutil.copy2(ours, built)
        args = ["meson", "install", "-C", self.builddir, "--no-rebuild", "--quiet",
                "--destdir", self.destdir]
        run(args, preexec_fn=lambda: os.umask(0o022))  # the Containerfile's umask
        # The runtime stage: COPY --from=build <destdir>/x <y>.
        build_dest = self.install_cmd[self.install_cmd.index("--destdir") + 1]
        for arg in self.runtime.values("COPY"):
            _frm, src, dst = arg.split()
            local_src = os.path.join(self.destdir, os.path.relpath(src, build_dest))
            local_dst = os.path.join(self.rootfs, dst.lstrip("/"))
            if os.path.isdir(local_src):
                shutil.copytree(local_src, local_dst, symlinks=True, dirs_exist_ok=True)
            else:
                os.makedirs(os.path.dirname(local_dst), exist_ok=True)
                shutil.copy2(local_src, local_dst)

    def test_compile_targets_exist_and_cover_every_installed_target(self):
        self.assertEqual(sorted(self.compile_targets),
                         ["ccm-provider-check", "cloud-controller-manager", "fake-cloud",
                          "openstack"])
        # A dry run: the names resolve (meson compile fails on an unknown target).
        r = run(["meson", "compile", "-C", self.builddir, "--ninja-args=-n"] +
                self.compile_targets)
        self.assertIn("cloud-controller-manager", r.stdout)
        installed_targets = {t["name"] for t in self.intro("targets") if t.get("installed")}
        self.assertEqual(installed_targets, set(self.compile_targets))

    def test_default_plugin_dir_is_compiled_in(self):
        with open(os.path.join(self.builddir, "compile_commands.json")) as f:
            cmds = json.load(f)
        app = [c for c in cmds if c["file"].endswith("host/app/app.cpp")]
        self.assertEqual(len(app), 1)
        self.assertIn('-DCCM_PLUGIN_DIR="%s"' % IMAGE_PLUGIN_DIR,
                      app[0]["command"].replace('\\"', '"').replace("'", ""))
        # Our build's binary reports its own configured default the same way.
        opts = {o["name"]: o["value"] for o in json.loads(run(
            ["meson", "introspect", BUILD, "--buildoptions"]).stdout)}
        help_text = run([os.path.join(BUILD, "host", "cloud-controller-manager"),
                         "--help"]).stdout
        ours = opts["plugin_dir"] or os.path.join(opts["prefix"], opts["libdir"], "ccm",
                                                  "providers")
        self.assertIn(ours, help_text)
        if ours != IMAGE_PLUGIN_DIR:
            print("note: %s is configured with plugin_dir %s; the image's default (%s) is "
                  "checked in the compile command only" % (BUILD, ours, IMAGE_PLUGIN_DIR))

    def test_installed_tree(self):
        self.install()
        root = self.destdir
        libdir = {o["name"]: o["value"] for o in self.intro("buildoptions")}["libdir"]
        want = {
            "usr/bin/cloud-controller-manager": 0o755,
            "usr/lib/ccm/providers/fake-cloud.so": 0o755,
            "usr/lib/ccm/providers/openstack.so": 0o755,
            "usr/include/ccm/provider_abi.h": 0o644,
            "usr/include/ccm/provider.hpp": 0o644,
            "usr/include/ccm/types.hpp": 0o644,
            "usr/include/ccm/testing/fake_host.hpp": 0o644,
            "usr/include/ccm/validation.hpp": 0o644,
            "usr/include/ccm/output_checks.hpp": 0o644,
            "usr/include/ccm/service_checks.hpp": 0o644,
            "usr/include/ccm/negotiation.hpp": 0o644,
            "usr/include/ccm/catalog.hpp": 0o644,
            "usr/include/ccm/plugin_text.hpp": 0o644,
            "usr/bin/ccm-provider-check": 0o755,
            "usr/share/ccm-plugin-sdk/provider.map": 0o644,
            # The Rust crate's sources (the tree below it is checked apart).
            "usr/share/ccm-plugin-sdk/rust/Cargo.toml": 0o644,
            "usr/share/ccm-plugin-sdk/rust/src/lib.rs": 0o644,
            "usr/%s/pkgconfig/ccm-plugin-sdk.pc" % libdir: 0o644,
            "usr/%s/cmake/ccm-plugin-sdk/ccm-plugin-sdk-config.cmake" % libdir: 0o644,
            "usr/%s/cmake/ccm-plugin-sdk/ccm-plugin-sdk-config-version.cmake" % libdir: 0o644,
        }
        for rel, mode in want.items():
            path = os.path.join(root, rel)
            self.assertTrue(os.path.isfile(path), rel)
            self.assertEqual(stat.S_IMODE(os.stat(path).st_mode), mode, rel)
        # Nothing else is installed (no test programs, no kubesim).
        found = sorted(os.path.relpath(os.path.join(d, f), root)
                       for d, _, files in os.walk(root) for f in files)
        rust = "usr/share/ccm-plugin-sdk/rust/"
        crate = [f for f in found if f.startswith(rust)]
        for rel in crate:
            # Sources and cargo's metadata only: no build output, nothing executable.
            self.assertRegex(rel[len(rust):], r"^[a-z_/-]*[A-Za-z_.-]+\.(rs|toml|lock|md)$", rel)
            self.assertEqual(stat.S_IMODE(os.stat(os.path.join(root, rel)).st_mode), 0o644, rel)
        self.assertEqual([f for f in found if not f.startswith(rust)],
                         sorted(k for k in want if not k.startswith(rust)))
        # The plugin directory and its parents: not group/world-writable (the host checks).
        d = os.path.join(root, "usr/lib/ccm/providers")
        while d != root:
            self.assertEqual(os.stat(d).st_mode & 0o022, 0, d)
            d = os.path.dirname(d)
        with open(os.path.join(root, "usr/%s/pkgconfig/ccm-plugin-sdk.pc" % libdir)) as f:
            pc = f.read()
        self.assertIn("plugindir=" + IMAGE_PLUGIN_DIR, pc)
        self.assertIn("prefix=/usr", pc)
        with open(os.path.join(
                root, "usr/%s/cmake/ccm-plugin-sdk/ccm-plugin-sdk-config.cmake" % libdir)) as f:
            cmake = f.read()
        m = re.search(r'set\(CCM_PLUGIN_DIR "\$\{_ccm_prefix\}/([^"]*)"\)', cmake)
        self.assertIsNotNone(m, cmake)
        # The package is relocatable: the path is relative to its prefix (/usr here).
        self.assertEqual("/usr/" + m.group(1), IMAGE_PLUGIN_DIR,
                         "the CMake package and pkg-config must name the same plugin dir")

    def test_runtime_root_loads_a_provider_from_the_plugin_dir(self):
        self.install()
        binary = os.path.join(self.rootfs, "usr/bin/cloud-controller-manager")
        plugins = os.path.join(self.rootfs, IMAGE_PLUGIN_DIR.lstrip("/"))
        self.assertEqual(sorted(os.listdir(plugins)), ["fake-cloud.so", "openstack.so"])
        r = run([binary, "--cloud-provider=fake-cloud", "--cloud-provider-plugin-dir=" + plugins,
                 "--cloud-config=" + os.path.join(SOURCE, "manifests/examples/fake-cloud.yaml"),
                 "--check-config"], check=False)
        self.assertEqual(r.returncode, 0, r.stderr[-2000:])
        self.assertIn("configuration valid", r.stdout)
        # Nothing of the SDK or the headers in the runtime image.
        self.assertFalse(glob.glob(os.path.join(self.rootfs, "usr/include")))

    @unittest.skipIf(os.environ.get("CCM_SANITIZE") == "1",
                     "a sanitizer build links libasan and libubsan, which no image ships")
    def test_shared_libraries_come_from_the_runtime_packages(self):
        self.install()
        runtime_pkgs = set(self.runtime.apt_packages())
        closure = depends_closure(runtime_pkgs | BASE_IMAGE_PACKAGES)
        direct_ok = runtime_pkgs | BASE_IMAGE_PACKAGES
        files = [os.path.join(self.rootfs, "usr/bin/cloud-controller-manager")] + sorted(
            glob.glob(os.path.join(self.rootfs, IMAGE_PLUGIN_DIR.lstrip("/"), "*.so")))
        report = []
        used_pkgs = set()
        packages_of([p for f in files for p in resolved_libraries(f).values() if p])
        for f in files:
            libs = resolved_libraries(f)
            self.assertNotIn(None, libs.values(), "%s: unresolved %s" % (f, libs))
            for soname in needed(f):
                pkg = package_of(libs[soname])
                report.append("%s: %s -> %s" % (os.path.basename(f), soname, pkg))
                self.assertIn(pkg, direct_ok, "%s needs %s from %s, which the runtime stage "
                                              "does not install" % (f, soname, pkg))
                used_pkgs.add(pkg)
            for soname, path in libs.items():
                if soname.startswith("linux-vdso"):
                    continue
                pkg = package_of(path)
                self.assertIn(pkg, closure, "%s loads %s (%s) from %s, which neither the "
                                            "runtime packages nor the base image bring" %
                              (f, soname, path, pkg))
        print("\n" + "\n".join(report))
        # Every library package the runtime stage installs is needed by something.
        self.assertEqual(sorted(runtime_pkgs - used_pkgs - {"ca-certificates"}), [])


if __name__ == "__main__":
    unittest.main(verbosity=2)
