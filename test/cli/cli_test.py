#!/usr/bin/env python3
"""cloud-controller-manager from the operator's side: --help, --version, bad flags (exit 2),
provider loading failures (exit 1, one line naming the file and the cause) and
--check-config with the real fake-cloud plugin."""
import os
import re
import shutil
import subprocess
import sys
import tempfile
import unittest

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "support"))
from abi_version import abi_text  # noqa: E402

BINARY = os.environ["CCM_BINARY"]
PLUGINS = os.environ["CCM_PLUGIN_DIR"]
KIT = os.environ["CCM_CONFORMANCE_DIR"]


def ccm(*args):
    return subprocess.run([BINARY, *args], capture_output=True, text=True, timeout=60)


def error_lines(stderr):
    return [l for l in stderr.splitlines() if l.startswith("E")]


class CliTest(unittest.TestCase):
    def test_help_and_version(self):
        r = ccm("--help")
        self.assertEqual(r.returncode, 0)
        self.assertIn("--cloud-provider string", r.stdout)
        self.assertIn("--cloud-provider-plugin-dir string", r.stdout)
        self.assertIn("Leader election flags:", r.stdout)
        r = ccm("--version")
        self.assertEqual(r.returncode, 0)
        self.assertRegex(r.stdout, r"^cloud-controller-manager v\d+\.\d+\.\d+ \(ccm; plugin ABI " +
                         re.escape(abi_text()) + r"\)")

    def test_bad_command_lines_exit_2_naming_the_flag(self):
        for args, message in [
            (["--no-such-flag"], "Error: unknown flag: --no-such-flag"),
            (["--secure-port=abc"], "invalid argument \"abc\" for \"--secure-port\" flag"),
            (["--node-monitor-period=5"], "time: invalid duration \"5\""),
            (["--cloud-provider=fake-cloud", "--controllers=bogus"],
             "\"bogus\" is not in the list of known controllers"),
            ([], "--cloud-provider cannot be empty"),
            (["positional"], "unknown command \"positional\""),
        ]:
            r = ccm(*args)
            self.assertEqual(r.returncode, 2, (args, r.stderr))
            self.assertIn(message, r.stderr)
            self.assertIn("Run 'cloud-controller-manager --help' for usage.", r.stderr)

    def load_failure(self, name, plugin_dir, fragment, config=None):
        args = ["--cloud-provider=" + name, "--cloud-provider-plugin-dir=" + plugin_dir]
        if config:
            args.append("--cloud-config=" + config)
        r = ccm(*args)
        self.assertEqual(r.returncode, 1, r.stderr)
        errors = error_lines(r.stderr)
        self.assertEqual(len(errors), 1, r.stderr)
        self.assertIn(fragment, errors[0])
        return errors[0]

    def test_provider_failures_are_one_line(self):
        line = self.load_failure("nope", PLUGINS, "unknown cloud provider \\\"nope\\\"")
        self.assertIn("fake-cloud", line)  # lists what the directory has
        self.load_failure("not-a-library", KIT, "not a loadable shared library")
        self.load_failure("no-entry", KIT, "does not export ccm_provider_entry_v1")
        self.load_failure("wrong-major", KIT, "it speaks plugin ABI 2.0, this host speaks ABI " + abi_text())
        self.load_failure("short-struct", KIT, "struct_size is 8 bytes")
        self.load_failure("null-slot", KIT, "ccm_plugin.create slot is NULL")
        self.load_failure("refuses-config", KIT, "auth-url is required but missing")
        line = self.load_failure("baseline", "/nonexistent/dir", "does not exist")
        self.assertIn("/nonexistent/dir", line)

    def test_missing_or_bad_cloud_config(self):
        self.load_failure("fake-cloud", PLUGINS, "cannot read --cloud-config=/no/such/file",
                          config="/no/such/file")
        with tempfile.NamedTemporaryFile("w", suffix=".yaml", delete=False) as f:
            f.write("instances:\n  - name: a\n    state: sleepy\n")
        try:
            line = self.load_failure("fake-cloud", PLUGINS, "instances[0].state", config=f.name)
            self.assertIn(f.name, line)
            self.assertIn("line 3", line)
        finally:
            os.unlink(f.name)

    def test_writable_plugin_is_refused(self):
        tmp = tempfile.mkdtemp()
        try:
            os.chmod(tmp, 0o755)
            so = os.path.join(tmp, "fake-cloud.so")
            shutil.copy(os.path.join(PLUGINS, "fake-cloud.so"), so)
            os.chmod(so, 0o666)
            self.load_failure("fake-cloud", tmp, "writable by everyone (mode 0666)")
        finally:
            shutil.rmtree(tmp)

    def test_check_config_reports_the_provider(self):
        with tempfile.NamedTemporaryFile("w", suffix=".yaml", delete=False) as f:
            f.write("region: demo-1\nautoInstances: {zones: [a, b]}\n")
        try:
            r = ccm("--cloud-provider=fake-cloud", "--cloud-provider-plugin-dir=" + PLUGINS,
                    "--cloud-config=" + f.name, "--check-config", "--profiling=false")
            self.assertEqual(r.returncode, 0, r.stderr)
            self.assertIn("provider fake-cloud", r.stdout)
            self.assertIn("ccm.instances/1, ccm.instances.batch/1 (max batch 500), "
                          "ccm.loadbalancer/1, ccm.routes/1", r.stdout)
            self.assertIn("configuration valid", r.stdout)
            # The start-up log names the provider, its version and capabilities...
            self.assertRegex(r.stderr, r'"Loaded cloud provider" provider="fake-cloud" '
                                       r'version="[^"]+" abi="' + re.escape(abi_text()) +
                                       r'" path="[^"]+fake-cloud.so" '
                                       r'capabilities="ccm.instances/1')
            # ...and says which set flags have no effect.
            self.assertIn("not implemented by ccm; it has no effect\" flag=\"--profiling\"",
                          r.stderr)
        finally:
            os.unlink(f.name)

    def test_occm_deployment_arguments_start_unchanged(self):
        """The argument lists openstack-cloud-controller-manager is deployed with (its Helm
        chart's DaemonSet with the chart's defaults, and the kubeadm-style control-plane flags
        operators add for delegated authentication), written out as they are, plus upstream
        flags of component-base that have no effect here. Only the program, the provider
        name (fake-cloud stands in for openstack: no OpenStack here) and file paths differ.
        Every flag is accepted; the ones without effect get a one-line notice."""
        tmp = tempfile.mkdtemp()
        try:
            cloud_conf = os.path.join(tmp, "cloud.conf")
            with open(cloud_conf, "w") as f:
                f.write("region: demo-1\n")
            for name in ("ca", "front-proxy-ca"):
                subprocess.run(["openssl", "req", "-x509", "-newkey", "ec", "-pkeyopt",
                                "ec_paramgen_curve:prime256v1", "-nodes", "-days", "2",
                                "-subj", "/CN=" + name, "-keyout",
                                os.path.join(tmp, name + ".key"), "-out",
                                os.path.join(tmp, name + ".crt")],
                               check=True, capture_output=True, timeout=60)
            pki = lambda n: os.path.join(tmp, n)  # noqa: E731 (/etc/kubernetes/pki/<n>)
            chart = [
                "--v=2",
                "--cloud-config=" + cloud_conf,
                "--cluster-name=kubernetes",
                "--cloud-provider=fake-cloud",
                "--use-service-account-credentials=false",
                "--controllers=cloud-node,cloud-node-lifecycle,route,service",
                "--bind-address=127.0.0.1",
            ]
            control_plane = [
                "--authentication-kubeconfig=" + pki("controller-manager.conf"),
                "--authorization-kubeconfig=" + pki("controller-manager.conf"),
                "--kubeconfig=" + pki("controller-manager.conf"),
                "--client-ca-file=" + pki("ca.crt"),
                "--requestheader-client-ca-file=" + pki("front-proxy-ca.crt"),
                "--requestheader-allowed-names=front-proxy-client",
                "--requestheader-extra-headers-prefix=X-Remote-Extra-",
                "--requestheader-group-headers=X-Remote-Group",
                "--requestheader-username-headers=X-Remote-User",
                "--leader-elect=true",
                "--profiling=false",
                "--secure-port=10258",
                "--allocate-node-cidrs=true",
                "--cluster-cidr=10.244.0.0/16",
                "--configure-cloud-routes=true",
            ]
            component_base = [
                "--feature-gates=AllAlpha=false",
                "--disabled-metrics=cloudprovider_openstack_api_request_duration_seconds",
                "--allow-metric-labels=service_controller_loadbalancer_sync_total,x='a,b'",
                "--show-hidden-metrics-for-version=1.35",
                "--log-json-split-stream",
                "--log-text-split-stream=true",
                "--log-json-info-buffer-size=0",
                "--log-text-info-buffer-size=0",
                "--log-flush-frequency=5s",
                "--vmodule=",
                "--requestheader-uid-headers=X-Remote-Uid",
                "--tls-min-version=VersionTLS12",
                "--tls-cipher-suites=TLS_ECDHE_RSA_WITH_AES_128_GCM_SHA256",
                "--permit-address-sharing",
                "--authentication-skip-lookup",
                "--authentication-tolerate-lookup-failure=false",
                "--webhook-secure-port=0",
                "--webhook-cert-dir=" + tmp,
                "--webhook-tls-cert-file=",
                "--webhook-tls-private-key-file=",
                "--min-resync-period=12h",
                "--kube-api-content-type=application/json",
                "--node-sync-period=0s",
            ]
            r = ccm(*chart, *control_plane, *component_base,
                    "--cloud-provider-plugin-dir=" + PLUGINS, "--check-config")
            self.assertEqual(r.returncode, 0, r.stderr)
            self.assertIn("configuration valid", r.stdout)
            notices = [l for l in r.stderr.splitlines()
                       if "not implemented by ccm; it has no effect" in l]
            for flag in ("--use-service-account-credentials", "--disabled-metrics",
                         "--log-json-split-stream", "--feature-gates", "--profiling"):
                self.assertEqual(sum(('flag="' + flag + '"') in l for l in notices), 1,
                                 (flag, r.stderr))
            # Implemented flags get no notice.
            for flag in ("--client-ca-file", "--requestheader-client-ca-file",
                         "--requestheader-allowed-names", "--bind-address"):
                self.assertFalse(any(('flag="' + flag + '"') in l for l in notices),
                                 (flag, r.stderr))
            # The CA files are read: a missing one is a configuration error naming it.
            r = ccm(*chart, "--client-ca-file=" + pki("missing.crt"),
                    "--cloud-provider-plugin-dir=" + PLUGINS, "--check-config")
            self.assertEqual(r.returncode, 1, r.stderr)
            self.assertIn("--client-ca-file " + pki("missing.crt") + ": cannot read the file",
                          r.stderr)
        finally:
            shutil.rmtree(tmp)

    def test_json_logging(self):
        r = ccm("--cloud-provider=nope", "--cloud-provider-plugin-dir=" + PLUGINS,
                "--logging-format=json")
        self.assertEqual(r.returncode, 1)
        import json
        lines = [json.loads(l) for l in r.stderr.splitlines()]
        self.assertTrue(any(l.get("level") == "error" and "unknown cloud provider" in l["err"]
                            for l in lines))


if __name__ == "__main__":
    unittest.main(verbosity=2)
