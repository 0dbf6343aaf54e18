#!/usr/bin/env python3
"""Fault containment from the operator's side, with the broken plugins of the conformance kit
(test/abi/plugins): a plugin that hangs in its entry point or in create is given up on at
--provider-start-timeout, SIGTERM and SIGINT end a hung start-up at once, a crash inside a
plugin call prints one line naming the provider, the capability and the call before the
process dies of the same signal, and each malformed plugin gets a one-line reason."""
import json
import os
import signal
import subprocess
import sys
import tempfile
import time
import unittest

sys.path.insert(0, os.path.join(os.environ["CCM_SOURCE_DIR"], "test", "support"))
from harness import Cluster, wait_for  # noqa: E402

BINARY = os.path.join(os.environ["CCM_BUILD_DIR"], "host", "cloud-controller-manager")
KIT = os.environ["CCM_CONFORMANCE_DIR"]
# Under AddressSanitizer its report follows the crash line and the process exits 1 instead
# of dying of the signal (its handler runs after the host's).
SANITIZED = os.environ.get("CCM_SANITIZE", "none") not in ("", "none")


def ccm(*args, timeout=60):
    return subprocess.run([BINARY, *args], capture_output=True, text=True, timeout=timeout)


def error_lines(stderr):
    return [l for l in stderr.splitlines() if l.startswith("E")]


def kit_args(name, *extra):
    return ["--cloud-provider=" + name, "--cloud-provider-plugin-dir=" + KIT, *extra]


class StartupDeadlineTest(unittest.TestCase):
    def check_one_error(self, r, fragment):
        self.assertEqual(r.returncode, 1, r.stderr)
        errors = error_lines(r.stderr)
        self.assertEqual(len(errors), 1, r.stderr)
        self.assertIn(fragment, errors[0])

    def test_hung_entry_and_create_are_given_up_on_at_the_deadline(self):
        for check_config in ([], ["--check-config"]):
            r = ccm(*kit_args("hangs-in-entry", "--provider-start-timeout=1s", *check_config))
            self.check_one_error(r, "hangs-in-entry.so: ccm_provider_entry_v1 did not return "
                                    "within the start-up deadline of 1s "
                                    "(--provider-start-timeout)")
            r = ccm(*kit_args("hangs-in-create", "--provider-start-timeout=1500ms",
                              *check_config))
            self.check_one_error(r, "provider hangs-in-create: create did not return within "
                                    "the start-up deadline of 1.5s (--provider-start-timeout)")

    def test_the_flag_is_validated(self):
        r = ccm(*kit_args("baseline", "--provider-start-timeout=0s"))
        self.assertEqual(r.returncode, 2, r.stderr)
        self.assertIn("--provider-start-timeout must be positive", r.stderr)

    def interrupt(self, name, sig, waiting_for):
        """Starts the host on a plugin that hangs (the deadline is far away), signals it once
        it is inside the call and returns its output; fails if it does not exit."""
        with tempfile.TemporaryFile("w+") as log:
            p = subprocess.Popen([BINARY, *kit_args(name, "--provider-start-timeout=10m")],
                                 stdout=log, stderr=subprocess.STDOUT, text=True)
            try:
                def started():
                    log.seek(0)
                    return waiting_for in log.read()
                wait_for(started, waiting_for, timeout=30)
                p.send_signal(sig)
                rc = p.wait(timeout=30)
            finally:
                if p.poll() is None:
                    p.kill()
                    p.wait()
            log.seek(0)
            return rc, log.read()

    def test_sigterm_during_a_hung_create_exits_promptly(self):
        rc, out = self.interrupt("hangs-in-create", signal.SIGTERM, "Creating the cloud provider")
        self.assertEqual(rc, 1, out)
        self.assertIn("Interrupted while starting the cloud provider", out)
        self.assertIn("provider hangs-in-create: interrupted by a signal while in create", out)

    def test_sigint_during_a_hung_entry_point_exits_promptly(self):
        rc, out = self.interrupt("hangs-in-entry", signal.SIGINT, "Loading the cloud provider")
        self.assertEqual(rc, 1, out)
        self.assertIn("interrupted by a signal while in ccm_provider_entry_v1", out)


class MalformedPluginTest(unittest.TestCase):
    def refused(self, name, fragment, *extra):
        r = ccm(*kit_args(name, *extra))
        self.assertEqual(r.returncode, 1, r.stderr)
        errors = error_lines(r.stderr)
        self.assertEqual(len(errors), 1, r.stderr)
        self.assertIn(fragment, errors[0])
        return errors[0]

    def test_each_gets_a_one_line_reason(self):
        for check_config in ([], ["--check-config"]):
            self.refused("no-capability", "provider no-capability provides no capability",
                         *check_config)
            line = self.refused("bad-version", 'its version \\"1.0\\\\x1b[2J\\\\n\\" has a '
                                               "control character at byte 3", *check_config)
            self.assertNotIn("\x1b", line)
            line = self.refused("long-version", "its version is 1048576 bytes long (at most 64)",
                                *check_config)
            self.assertLess(len(line), 1000)

    def test_plugin_text_is_bounded_and_json_logs_stay_valid(self):
        r = ccm(*kit_args("noisy", "--logging-format=json"))
        self.assertEqual(r.returncode, 1, r.stderr)
        lines = [json.loads(l) for l in r.stderr.splitlines()]  # every line is JSON
        logged = [l for l in lines if l.get("provider") == "noisy" and l.get("level") == "warning"]
        self.assertEqual(len(logged), 1, r.stderr[:2000])
        msg = logged[0]["msg"]
        # Invalid UTF-8 and control characters are escaped, not passed on.
        self.assertTrue(msg.startswith("noisy \\xff\\xfe \\x1b[31mred\\nnnn"), msg[:80])
        self.assertTrue(msg.endswith("\u2026 [cut 4096 bytes]"), msg[-80:])
        failed = [l for l in lines if l.get("level") == "error"]
        self.assertEqual(len(failed), 1)
        self.assertIn("long refusal: eee", failed[0]["err"])
        self.assertTrue(failed[0]["err"].endswith("\u2026 [cut 1024 bytes]"))


class CrashLineTest(unittest.TestCase):
    """A plugin that crashes in instance_metadata, reached the way a cluster reaches it: a
    node waiting for initialisation."""

    def crash(self, provider, sig, extra=()):
        with Cluster(nodes=1) as c:
            config = os.path.join(c.tmp, "empty.conf")
            with open(config, "w"):
                pass
            p = c.start_ccm(config, provider=provider, plugin_dir=KIT, extra=extra)
            wait_for(lambda: not p.alive(), "the host to die of the plugin's crash", timeout=60)
            rc = p.stop()
            out = p.output()
        line = 'provider "%s" crashed in ccm.instances/1 instance_metadata (%s)' % (
            provider, signal.Signals(sig).name)
        if SANITIZED and sig != signal.SIGABRT:
            self.assertNotEqual(rc, 0, out[-3000:])
        else:
            self.assertEqual(rc, -sig, out[-3000:])
        return line, out

    def test_sigsegv(self):
        line, out = self.crash("crashes", signal.SIGSEGV)
        self.assertIn(line + "\n", out)

    def test_abort(self):
        line, out = self.crash("aborts", signal.SIGABRT)
        self.assertIn(line + "\n", out)

    def test_stack_overflow_is_reported_from_the_alternate_stack(self):
        line, out = self.crash("overflows", signal.SIGSEGV)
        self.assertIn(line + "\n", out)

    def test_json_crash_line(self):
        line, out = self.crash("crashes", signal.SIGSEGV, extra=["--logging-format=json"])
        crash = [json.loads(l) for l in out.splitlines()
                 if l.startswith("{") and '"level":"fatal"' in l]
        self.assertEqual(len(crash), 1, out[-3000:])
        self.assertEqual(crash[0]["msg"], line)
        self.assertEqual(crash[0]["call"], "instance_metadata")
        self.assertEqual(crash[0]["capability"], "ccm.instances/1")


if __name__ == "__main__":
    unittest.main(verbosity=2)
