#!/usr/bin/env python3
"""The layout's rules, checked over the includes of every first-party source file:
- the host's areas form layers (LAYERS, lowest first): an area includes only itself and the
  areas below it, so there is no upward include and no circle between areas;
- nothing that ships (host/, kubesim/, plugins/, plugin-sdk/) includes test code;
- the host does not include kubesim, and kubesim uses only the host's lowest layers;
- plugins see only the SDK (plugin-sdk/include), never a host header.
docs/architecture.md ("Layers") explains the order."""
import os
import re
import sys
import unittest

SOURCE = os.environ.get("CCM_SOURCE_DIR") or os.path.dirname(os.path.dirname(
    os.path.dirname(os.path.abspath(__file__))))

# Lowest first. A path belongs to the longest prefix listed.
LAYERS = [
    "host/log",
    "host/runtime",
    "host/tls",
    "host/plugin",
    "host/providers",  # several providers behind one Provider (routes calls among them)
    "host/options",
    "host/kube/api",
    "host/kube/config",
    "host/kube/transport",
    "host/kube/objects",
    "host/kube/cache",
    "host/kube/write",
    "host/leader",
    "host/controllers/common",
    "host/controllers/ipam",
    "host/controllers/node",
    "host/controllers/lifecycle",
    "host/controllers/service",
    "host/controllers/route",
    "host/controllers",  # the registry, above every controller
    "host/server",
    "host/app",
    "host",  # main.cpp
]
# The host areas kubesim may use (it is a separate program that shares the host's basics).
KUBESIM_MAY_USE = {"host/log", "host/runtime", "host/tls", "host/kube/api"}
SOURCE_ENDINGS = (".cpp", ".hpp", ".h", ".c", ".hpp.in")
INCLUDE = re.compile(r'^\s*#\s*include\s+"([^"]+)"', re.M)


def area_of(path):
    best = None
    for layer in LAYERS:
        if path == layer or path.startswith(layer + "/"):
            if best is None or len(layer) > len(best):
                best = layer
    return best


def includes(root):
    """(file, included path) for every quoted include under root."""
    for dirpath, dirs, files in os.walk(os.path.join(SOURCE, root)):
        dirs[:] = [d for d in dirs if not d.startswith((".", "build"))]
        for f in files:
            if f.endswith(SOURCE_ENDINGS):
                path = os.path.join(dirpath, f)
                with open(path, encoding="utf-8", errors="replace") as fh:
                    for inc in INCLUDE.findall(fh.read()):
                        yield os.path.relpath(path, SOURCE), inc


def upward_includes():
    bad = []
    for f, inc in includes("host"):
        here, there = area_of(os.path.dirname(f)), area_of(os.path.dirname(inc))
        if there is None or here is None:
            continue
        if LAYERS.index(there) > LAYERS.index(here):
            bad.append(f"{f} ({here}) includes {inc} ({there})")
    return bad


class LayeringTest(unittest.TestCase):

    def test_every_host_folder_has_a_layer(self):
        missing = []
        for dirpath, dirs, files in os.walk(os.path.join(SOURCE, "host")):
            rel = os.path.relpath(dirpath, SOURCE)
            if any(f.endswith(SOURCE_ENDINGS) for f in files) and area_of(rel) is None:
                missing.append(rel)
        self.assertEqual(missing, [])

    def test_no_host_area_includes_an_area_above_it(self):
        self.assertEqual(upward_includes(), [])

    def test_the_check_sees_an_upward_include(self):
        # A node controller header including the app would be reported.
        self.assertGreater(LAYERS.index(area_of("host/app")),
                           LAYERS.index(area_of("host/controllers/node")))
        self.assertEqual(area_of("host/kube/objects"), "host/kube/objects")
        self.assertEqual(area_of("host/controllers"), "host/controllers")

    def test_shipped_code_never_includes_test_code(self):
        bad = [f"{f} includes {inc}" for root in ("host", "kubesim", "plugins", "plugin-sdk")
               for f, inc in includes(root) if inc.startswith("test/")]
        self.assertEqual(bad, [])

    def test_host_and_kubesim_stay_apart(self):
        bad = [f"{f} includes {inc}" for f, inc in includes("host") if inc.startswith("kubesim/")]
        bad += [f"{f} includes {inc}" for f, inc in includes("kubesim")
                if inc.startswith("host/") and area_of(os.path.dirname(inc)) not in KUBESIM_MAY_USE]
        self.assertEqual(bad, [])

    def test_plugins_see_only_the_sdk(self):
        bad = [f"{f} includes {inc}" for f, inc in includes("plugins")
               if inc.startswith(("host/", "kubesim/", "test/"))]
        self.assertEqual(bad, [])


if __name__ == "__main__":
    unittest.main(verbosity=2)
