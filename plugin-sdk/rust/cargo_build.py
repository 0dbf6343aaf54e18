#!/usr/bin/env python3
"""Builds one cdylib package of the Rust SDK workspace with cargo (offline, locked, release)
and installs the library under the name the host loads: cargo writes lib<crate>.so (hyphens in
the crate name become underscores), the host opens <plugin-dir>/<provider-name>.so.

    cargo_build.py CARGO MANIFEST PACKAGE LIBRARY OUTPUT

CARGO_TARGET_DIR and CARGO_HOME come from the environment (the meson build sets both inside
the build directory, so nothing is fetched or written elsewhere)."""
import os
import shutil
import subprocess
import sys


def main():
    if len(sys.argv) != 6:
        sys.exit(__doc__)
    cargo, manifest, package, library, output = sys.argv[1:]
    target_dir = os.environ.get("CARGO_TARGET_DIR")
    if not target_dir:
        sys.exit("cargo_build.py: CARGO_TARGET_DIR is not set")
    cmd = [cargo, "build", "--offline", "--locked", "--release", "--quiet",
           "--manifest-path", manifest, "--package", package]
    result = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    if result.returncode != 0:
        sys.stderr.write(result.stdout)
        sys.exit("cargo_build.py: %s failed with exit code %d" % (" ".join(cmd), result.returncode))
    built = os.path.join(target_dir, "release", library)
    if not os.path.isfile(built):
        sys.exit("cargo_build.py: cargo succeeded but %s is missing" % built)
    tmp = output + ".tmp"
    shutil.copyfile(built, tmp)
    # The host refuses plugins that anyone but their owner can write.
    os.chmod(tmp, 0o755)
    os.replace(tmp, output)


if __name__ == "__main__":
    main()
