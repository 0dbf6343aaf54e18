#!/usr/bin/python3
"""Security of the host, through the real binary:

  * TLS to the API server is verified by default: a server certificate from a CA the
    kubeconfig does not trust, from no CA it names (the system trust store), for another
    host name, or expired, is refused with an error line that says why — and nothing is
    written; the same cluster with the right CA works (so the refusals are not an accident);
  * a kubeconfig tokenFile that is rewritten while the host runs is picked up before the old
    token expires (no request is refused with 401);
  * no secret reaches a log line, at -v=0 and -v=10, over a full run (nodes initialised and
    deleted, a load balancer, metrics scraped, bad scrape tokens): the kubeconfig's token and
    client key, a service-account token file, the openstack cloud.conf password and
    application-credential secret, every Keystone token the provider was issued, and the
    tokens presented to the secure port;
  * the plugin directory checks cannot be sidestepped with a symbolic link;
  * the secure port serves only TLS, only GET/HEAD, and per-check health details and
    /metrics only to authorised callers.
"""
import base64
import glob
import json
import os
import shutil
import socket
import ssl
import subprocess
import sys
import tempfile
import time
import unittest

SOURCE = os.environ["CCM_SOURCE_DIR"]
sys.path.insert(0, os.path.join(SOURCE, "test", "reliability"))
sys.path.insert(0, os.path.join(SOURCE, "test", "plugins", "openstack"))
from relsupport import (BUILD, Cluster, Scraper, ccm_kubeconfig, free_port,  # noqa: E402
                        https_get, metric_sum, secure_args, wait_for)
from harness import is_initialized  # noqa: E402

BINARY = os.path.join(BUILD, "host", "cloud-controller-manager")


def openssl(*args, env=None):
    r = subprocess.run(["openssl", *args], capture_output=True, text=True,
                       env=None if env is None else dict(os.environ, **env))
    if r.returncode != 0:
        raise AssertionError("openssl %s: %s" % (" ".join(args), r.stderr))


def faketime_library():
    found = glob.glob("/usr/lib/*/faketime/libfaketime.so.1")
    if not found:
        raise AssertionError("libfaketime is not installed (./dev installs it)")
    return found[0]


class Pki:
    """CAs and server certificates made with the openssl command line."""

    def __init__(self, directory):
        self.dir = directory
        os.makedirs(directory, exist_ok=True)

    def ca(self, name):
        crt, key = os.path.join(self.dir, name + ".crt"), os.path.join(self.dir, name + ".key")
        openssl("req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:P-256", "-nodes",
                "-keyout", key, "-out", crt, "-subj", "/CN=" + name, "-days", "30",
                "-addext", "basicConstraints=critical,CA:TRUE",
                "-addext", "keyUsage=critical,keyCertSign,cRLSign")
        return crt, key

    def server(self, name, ca, san, days=30, faked_time=None):
        """A server certificate signed by `ca`; with faked_time (libfaketime syntax, e.g.
        "-40d") it is issued as if at that time, so `days` later it may be long expired."""
        crt, key = os.path.join(self.dir, name + ".crt"), os.path.join(self.dir, name + ".key")
        csr, ext = crt + ".csr", crt + ".ext"
        openssl("req", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:P-256", "-nodes",
                "-keyout", key, "-out", csr, "-subj", "/CN=" + name)
        with open(ext, "w") as f:
            f.write("subjectAltName=%s\nextendedKeyUsage=serverAuth\n"
                    "keyUsage=critical,digitalSignature\nbasicConstraints=CA:FALSE\n" % san)
        env = None
        if faked_time:
            env = {"LD_PRELOAD": faketime_library(), "FAKETIME": faked_time}
        openssl("x509", "-req", "-in", csr, "-CA", ca[0], "-CAkey", ca[1], "-CAcreateserial",
                "-out", crt, "-days", str(days), "-extfile", ext, env=env)
        return crt, key


def read(path):
    with open(path) as f:
        return f.read()


class TlsTest(unittest.TestCase):

    def run_case(self, server_cert=None, trusted_ca=True, want=()):
        """kubesim (serving server_cert, if given, from its own CA) and a host trusting
        `trusted_ca` (True: kubesim's CA; None: none; else a PEM). Waits for a warning or
        error line containing every fragment of `want` (a fragment may be a tuple of
        alternatives), then checks nothing was initialised and SIGTERM still stops the host."""
        c = Cluster(nodes=1)
        certs = os.path.join(c.tmp, "certs")
        pki = Pki(os.path.join(c.tmp, "pki"))
        ca = pki.ca("kubesim-ca")
        os.makedirs(certs)
        shutil.copy(ca[0], os.path.join(certs, "ca.crt"))
        shutil.copy(ca[1], os.path.join(certs, "ca.key"))
        if server_cert:
            crt, key = server_cert(pki, ca)
            c.kubesim_args += ["--tls-cert-file=" + crt, "--tls-key-file=" + key]
        with c:
            # The test's own client does not verify (the certificate may be bad on purpose).
            c.api.ctx = ssl._create_unverified_context()
            cloud = c.fake_cloud(autoInstances={"zones": ["z"]})
            kubeconfig = os.path.join(c.tmp, "ccm.kubeconfig")
            ca_pem = read(ca[0]) if trusted_ca is True else trusted_ca
            ccm_kubeconfig(c, kubeconfig, "ccm", ca_pem=ca_pem)
            args = [a for a in c.ccm_args(cloud) if not a.startswith("--kubeconfig=")]
            from harness import Ccm
            p = Ccm(args + ["--kubeconfig=" + kubeconfig], os.path.join(c.tmp, "ccm.log"))
            c.processes.append(p)
            if not want:
                wait_for(lambda: all(is_initialized(n) for n in c.nodes()), "initialisation")
                return p.output()
            def matches(line):
                return line[:1] in "EW" and all(
                    any(alt in line for alt in (w if isinstance(w, tuple) else (w,)))
                    for w in want)
            wait_for(lambda: any(matches(l) for l in p.output().splitlines()),
                     "an error line with %s" % (want,), timeout=60)
            time.sleep(1)
            self.assertFalse(any(is_initialized(n) for n in c.nodes()),
                             "a node was initialised over a refused connection")
            line = next(l for l in p.output().splitlines() if matches(l))
            print(line[:300], flush=True)
            self.assertIn("127.0.0.1:%d" % c.port, line)  # it names the server
            self.assertEqual(p.stop(), 0)  # (regression: SIGTERM was ignored here)
            return p.output()

    def test_the_right_certificate_works(self):
        self.run_case(lambda pki, ca: pki.server("good", ca, "IP:127.0.0.1"))

    def test_a_certificate_from_another_ca_is_refused(self):
        other = Pki(tempfile.mkdtemp(prefix="ccm-other-ca-"))
        try:
            other_ca = other.ca("other-ca")
            self.run_case(trusted_ca=read(other_ca[0]),
                          want=("SSL certificate problem",
                                ("unable to get local issuer", "self-signed certificate")))
        finally:
            shutil.rmtree(other.dir)

    def test_verification_is_on_by_default(self):
        # No certificate-authority in the kubeconfig: the system trust store, which does not
        # know kubesim's CA.
        self.run_case(trusted_ca=None,
                      want=("SSL certificate problem",
                            ("unable to get local issuer", "self-signed certificate")))

    def test_a_certificate_for_another_host_is_refused(self):
        self.run_case(lambda pki, ca: pki.server("elsewhere", ca, "DNS:other.example"),
                      want=("no alternative certificate subject name matches target host name",))

    def test_an_expired_certificate_is_refused(self):
        self.run_case(lambda pki, ca: pki.server("expired", ca, "IP:127.0.0.1", days=10,
                                                 faked_time="-20d"),
                      want=("SSL certificate problem", "certificate has expired"))


def grant_cluster_admin(c, sa):
    ns, name = sa.split("/")
    c.api.post("/apis/rbac.authorization.k8s.io/v1/clusterrolebindings", {
        "metadata": {"name": "test-" + name},
        "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole",
                    "name": "cluster-admin"},
        "subjects": [{"kind": "ServiceAccount", "name": name, "namespace": ns}]})


def sa_kubeconfig(c, path, token_file):
    with open(path, "w") as f:
        f.write("""apiVersion: v1
kind: Config
current-context: c
clusters:
- name: k
  cluster: {server: "%s", certificate-authority: "%s"}
contexts:
- name: c
  context: {cluster: k, user: u}
users:
- name: u
  user: {tokenFile: "%s"}
""" % (c.url, c.ca_file, token_file))


class TokenRotationTest(unittest.TestCase):

    def test_a_rewritten_token_file_is_used_before_the_old_token_expires(self):
        # Without the API server's 60 s leeway past expiry, so the first token dies at once.
        with Cluster(nodes=1, kubesim_args=["--token-expiry-leeway=0s"]) as c:
            sa = "kube-system/rotating"
            token_file = os.path.join(c.tmp, "token")
            first = c.admin("POST", "/credentials", {"serviceAccount": sa,
                                                     "expirationSeconds": 12,
                                                     "tokenFile": token_file})["token"]
            expires = time.time() + 12
            grant_cluster_admin(c, sa)
            kubeconfig = os.path.join(c.tmp, "sa.kubeconfig")
            sa_kubeconfig(c, kubeconfig, token_file)
            cloud = c.fake_cloud(autoInstances={"zones": ["z"]})
            port = free_port()
            args = [a for a in c.ccm_args(cloud, secure_args(port))
                    if not a.startswith("--kubeconfig=")] + ["--kubeconfig=" + kubeconfig]
            from harness import Ccm
            p = Ccm(args, os.path.join(c.tmp, "ccm.log"))
            c.processes.append(p)
            wait_for(lambda: all(is_initialized(n) for n in c.nodes()), "initialisation")
            # The kubelet rewrites the projected token well before it expires.
            second = c.admin("POST", "/credentials", {"serviceAccount": sa,
                                                      "expirationSeconds": 3600,
                                                      "tokenFile": token_file})["token"]
            self.assertNotEqual(first, second)
            time.sleep(max(0.0, expires - time.time()) + 1)
            # The first token is dead now (else this test would prove nothing).
            old = https_get(c.url + "/api/v1/nodes", token=first, ca_pem=read(c.ca_file))
            self.assertEqual(old[0], 401)
            new = c.add_nodes(count=2)
            wait_for(lambda: all(is_initialized(c.node(n)) for n in new),
                     "nodes initialised with the rotated token")
            samples = Scraper(c, port).metrics()
            self.assertEqual(metric_sum(samples, "rest_client_requests_total", code="401"), 0,
                             "a request went out with the expired token")
            for secret in (first, second):
                self.assertNotIn(secret, p.output())
            self.assertEqual(p.stop(), 0)


class SecretsInLogsTest(unittest.TestCase):
    """Every secret the host was given or saw, searched in its whole log."""

    def full_run(self, c, sim, verbosity, kubeconfig, cloud_conf, secrets, name):
        port = free_port()
        args = [BINARY, "--cloud-provider=openstack",
                "--cloud-provider-plugin-dir=" + os.path.join(BUILD, "plugins"),
                "--cloud-config=" + cloud_conf, "--kubeconfig=" + kubeconfig,
                "--leader-elect=true", "--leader-elect-lease-duration=3s",
                "--leader-elect-renew-deadline=2s", "--leader-elect-retry-period=500ms",
                "--node-monitor-period=1s", "-v=%d" % verbosity] + secure_args(port)
        from harness import Ccm
        p = Ccm(args, os.path.join(c.tmp, name + ".log"))
        c.processes.append(p)
        # A node joins during each run (its server is added to Nova first).
        from e2e_test import server
        index = len(c.nodes()) + 1
        sim.control("add_server", server("node-%05d" % index, "10.0.0.%d" % (20 + index)))
        c.add_nodes(names=["node-%05d" % index])
        wait_for(lambda: len(c.nodes()) == index and all(is_initialized(n) for n in c.nodes()),
                 "initialisation", timeout=90)
        svc = "web-" + name
        c.api.post("/api/v1/namespaces/default/services", {
            "metadata": {"name": svc},
            "spec": {"type": "LoadBalancer", "ports": [{"port": 80, "protocol": "TCP"}]}})
        wait_for(lambda: (c.api.get("/api/v1/namespaces/default/services/" + svc)
                          .get("status", {}).get("loadBalancer", {}).get("ingress")),
                 "a load balancer", timeout=120)
        # The secure port: an approved scrape, a rejected token, a refused user.
        scraper = Scraper(c, port)
        scraper.metrics()
        bad = "bad-token-" + name + "-0123456789abcdef"
        secrets.append(bad)
        self.assertEqual(https_get(scraper.url("/metrics"), token=bad)[0], 401)
        nosy = c.user_token("nosy-" + name)
        secrets.append(nosy)
        self.assertEqual(https_get(scraper.url("/metrics"), token=nosy)[0], 403)
        c.api.delete("/api/v1/namespaces/default/services/" + svc)
        wait_for(lambda: not any(lb.get("name", "").endswith(svc) or svc in lb.get("name", "")
                                 for lb in sim.state()["loadbalancers"]),
                 "the load balancer deleted", timeout=120)
        self.assertEqual(p.stop(), 0)
        # Every Keystone token the provider used.
        for r in sim.call("GET", "/_sim/requests")["requests"]:
            t = (r.get("headers") or {}).get("x-auth-token")
            if t:
                secrets.append(t)
        return p.output()

    def scan(self, text, secrets, where):
        leaks = []
        for s in set(secrets):
            if len(s) >= 8 and s in text:
                leaks.append(s[:6] + "...")
        self.assertEqual(leaks, [], "secrets in the log of %s" % where)

    def test_no_secret_in_any_log_line_at_v0_and_v10(self):
        from e2e_test import OsSim, server
        servers = [server("node-00001", "10.0.0.21")]
        with Cluster(nodes=1) as c, OsSim(c.tmp, {"servers": servers}) as sim:
            # A client-certificate user that also has a bearer token (kubesim accepts both).
            cert_kubeconfig = os.path.join(c.tmp, "cert.kubeconfig")
            c.admin("POST", "/credentials", {"user": "ccm-cert", "groups": ["system:masters"],
                                             "type": "cert", "kubeconfig": cert_kubeconfig})
            import yaml  # python3-yaml comes with python3-kubernetes
            with open(cert_kubeconfig) as f:
                kc = yaml.safe_load(f)
            user = kc["users"][0]["user"]
            key_pem = base64.b64decode(user["client-key-data"]).decode()
            token = c.user_token("ccm-token", groups=["system:masters"])
            user["token"] = token
            kubeconfig = os.path.join(c.tmp, "secret.kubeconfig")
            with open(kubeconfig, "w") as f:
                yaml.safe_dump(kc, f)
            key_lines = [l for l in key_pem.splitlines() if l and not l.startswith("-----")]
            # A service-account token read from a file.
            sa = "kube-system/ccm-secrets"
            token_file = os.path.join(c.tmp, "sa-token")
            sa_token = c.admin("POST", "/credentials", {"serviceAccount": sa,
                                                        "tokenFile": token_file})["token"]
            grant_cluster_admin(c, sa)
            sa_config = os.path.join(c.tmp, "sa.kubeconfig")
            sa_kubeconfig(c, sa_config, token_file)
            password_conf = sim.cloud_conf(os.path.join(c.tmp, "password.conf"),
                                           "[LoadBalancer]\nfloating-network-id = net-public\n"
                                           "subnet-id = sub-private\n")
            appcred_conf = os.path.join(c.tmp, "appcred.conf")
            with open(appcred_conf, "w") as f:
                f.write("[Global]\nauth-url = %s/identity/v3\nregion = RegionOne\n"
                        "application-credential-id = ac-id\n"
                        "application-credential-secret = ac-secret-value\n"
                        "[LoadBalancer]\nfloating-network-id = net-public\n"
                        "subnet-id = sub-private\n" % sim.url)
            base = [token, sa_token, "demo-password", "ac-secret-value",
                    c.api.token] + key_lines
            runs = [(0, kubeconfig, password_conf), (10, sa_config, appcred_conf),
                    (10, kubeconfig, password_conf), (0, sa_config, appcred_conf)]
            for i, (v, kc_path, conf) in enumerate(runs):
                secrets = list(base)
                out = self.full_run(c, sim, v, kc_path, conf, secrets, "run%d-v%d" % (i, v))
                self.assertGreater(len(out.splitlines()), 20)
                self.scan(out, secrets, "run %d (-v=%d, %s, %s)" % (
                    i, v, os.path.basename(kc_path), os.path.basename(conf)))
            # A refused cloud.conf names the key at fault but never quotes the password.
            bad_conf = os.path.join(c.tmp, "bad.conf")
            with open(bad_conf, "w") as f:
                f.write("[Global]\nauth-url = ftp://keystone\nusername = demo\n"
                        "password = s3cr3t-never-logged\ntenant-id = p\n")
            for v in (0, 10):
                r = subprocess.run([BINARY, "--cloud-provider=openstack",
                                    "--cloud-provider-plugin-dir=" + os.path.join(BUILD, "plugins"),
                                    "--cloud-config=" + bad_conf, "--check-config", "-v=%d" % v],
                                   capture_output=True, text=True, timeout=60)
                self.assertEqual(r.returncode, 1)
                self.assertIn("auth-url", r.stdout + r.stderr)
                self.assertNotIn("s3cr3t-never-logged", r.stdout + r.stderr)


class PluginDirectoryTest(unittest.TestCase):

    def check_config(self, plugin_dir):
        return subprocess.run([BINARY, "--cloud-provider=fake-cloud",
                               "--cloud-provider-plugin-dir=" + plugin_dir, "--check-config"],
                              capture_output=True, text=True, timeout=60)

    def test_a_symlink_does_not_hide_a_directory_others_can_write(self):
        tmp = tempfile.mkdtemp(prefix="ccm-plugins-")
        try:
            real = os.path.join(tmp, "safe")
            os.makedirs(real)
            os.chmod(real, 0o755)
            shutil.copy(os.path.join(BUILD, "plugins", "fake-cloud.so"), real)
            os.chmod(os.path.join(real, "fake-cloud.so"), 0o755)
            self.assertEqual(self.check_config(real).returncode, 0)
            for mode, words in [(0o777, "writable by everyone"), (0o775, "writable by its group")]:
                shared = os.path.join(tmp, "shared-%o" % mode)
                os.makedirs(shared)
                os.chmod(shared, mode)
                os.symlink(os.path.join(real, "fake-cloud.so"),
                           os.path.join(shared, "fake-cloud.so"))
                r = self.check_config(shared)
                self.assertEqual(r.returncode, 1, r.stdout + r.stderr)
                self.assertIn(words, r.stderr)
                self.assertIn(shared, r.stderr)
            # A symlinked plugin directory is judged by the directory it resolves to too.
            open_dir = os.path.join(tmp, "open")
            os.makedirs(open_dir)
            os.chmod(open_dir, 0o777)
            shutil.copy(os.path.join(BUILD, "plugins", "fake-cloud.so"), open_dir)
            os.chmod(os.path.join(open_dir, "fake-cloud.so"), 0o755)
            link_dir = os.path.join(real, "link")
            os.symlink(open_dir, link_dir)
            r = self.check_config(link_dir)
            self.assertEqual(r.returncode, 1, r.stdout + r.stderr)
            self.assertIn("writable by everyone", r.stderr)
        finally:
            shutil.rmtree(tmp)


class SecurePortTest(unittest.TestCase):

    def test_only_tls_upstream_answers_and_details_only_for_the_authorised(self):
        with Cluster(nodes=1) as c:
            port = free_port()
            cloud = c.fake_cloud(autoInstances={"zones": ["z"]})
            p = c.start_ccm(cloud, secure_args(port) + ["--leader-elect=true"])
            wait_for(lambda: all(is_initialized(n) for n in c.nodes()), "initialisation")
            base = "https://127.0.0.1:%d" % port
            # Plain HTTP gets Go's 400 answer and nothing else, then the connection closes.
            s = socket.create_connection(("127.0.0.1", port), timeout=10)
            s.sendall(b"GET /metrics HTTP/1.1\r\nHost: x\r\n\r\n")
            data = b""
            while True:
                chunk = s.recv(4096)
                if not chunk:
                    break
                data += chunk
            s.close()
            self.assertEqual(data, b"HTTP/1.0 400 Bad Request\r\n\r\n"
                                   b"Client sent an HTTP request to an HTTPS server.\n")
            # Open: the summary health endpoints. Not open: per-check details and /metrics.
            self.assertEqual(https_get(base + "/healthz")[0], 200)
            for path in ("/healthz/leaderElection", "/livez/ping", "/readyz/ping", "/metrics",
                         "/debug/pprof/", "/configz"):
                status, _ = https_get(base + path)
                self.assertIn(status, (401, 403, 404), path)
                self.assertNotEqual(status, 200, path)
            status, _ = https_get(base + "/healthz/leaderElection", token=c.api.token)
            self.assertEqual(status, 200)
            # A bad bearer token is refused even on the open health paths (as upstream).
            for path in ("/healthz", "/livez", "/readyz"):
                self.assertEqual(https_get(base + path, token="not-a-real-token")[0], 401, path)
            # Any method on /healthz, as upstream's handler (POST -> 200).
            import urllib.request
            req = urllib.request.Request(base + "/healthz", data=b"{}", method="POST")
            try:
                with urllib.request.urlopen(req, context=ssl._create_unverified_context(),
                                            timeout=10) as r:
                    code = r.status
            except urllib.error.HTTPError as e:
                code = e.code
            self.assertEqual(code, 200)
            self.assertEqual(p.stop(), 0)


if __name__ == "__main__":
    unittest.main(verbosity=2)
