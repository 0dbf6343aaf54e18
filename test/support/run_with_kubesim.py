#!/usr/bin/env python3
"""Starts kubesim (TLS, admin token and client-certificate kubeconfigs), runs a test program
against it, and stops it.

usage: run_with_kubesim.py KUBESIM PROGRAM [--kubesim-arg=ARG ...] [--server-version=V]
                           [-- PROGRAM ARGS...]

--server-version=V is short for --kubesim-arg=--server-version=V (the Kubernetes version
kubesim emulates; default its newest). CCM_KUBESIM_ARGS (shell words) is added too, as
test/support/harness.py does.

The program gets KUBESIM_URL, KUBESIM_PORT, KUBESIM_KUBECONFIG (bearer token),
KUBESIM_CERT_KUBECONFIG (client certificate), KUBESIM_CERT_DIR and KUBESIM_DIR (a scratch
directory) in its environment. Exit status: the program's.
"""
import json
import os
import shlex
import shutil
import signal
import subprocess
import sys
import tempfile
import time


def main():
    if len(sys.argv) < 3:
        print(__doc__, file=sys.stderr)
        return 2
    kubesim, program = sys.argv[1], sys.argv[2]
    rest = sys.argv[3:]
    own = rest[:rest.index("--")] if "--" in rest else rest
    extra = [a[len("--kubesim-arg="):] for a in own if a.startswith("--kubesim-arg=")]
    extra += [a for a in own if a.startswith("--server-version=")]
    extra += shlex.split(os.environ.get("CCM_KUBESIM_ARGS", ""))
    prog_args = rest[rest.index("--") + 1:] if "--" in rest else []
    work = tempfile.mkdtemp(prefix="ccm-kubesim-")
    ready = os.path.join(work, "ready.json")
    log_path = os.path.join(work, "kubesim.log")
    cmd = [kubesim, "--port=0", "--ready-file=" + ready,
           "--kubeconfig-out=" + os.path.join(work, "admin.kubeconfig"),
           "--cert-kubeconfig-out=" + os.path.join(work, "admin-cert.kubeconfig"),
           "--cert-dir=" + os.path.join(work, "certs")] + extra
    with open(log_path, "w") as log:
        sim = subprocess.Popen(cmd, stdout=log, stderr=subprocess.STDOUT)
    try:
        deadline = time.monotonic() + 120
        while not os.path.exists(ready):
            if sim.poll() is not None:
                print("kubesim exited early:\n" + open(log_path).read(), file=sys.stderr)
                return 1
            if time.monotonic() > deadline:
                print("kubesim did not become ready", file=sys.stderr)
                return 1
            time.sleep(0.05)
        info = json.load(open(ready))
        env = dict(os.environ)
        env.update({
            "KUBESIM_URL": info["url"],
            "KUBESIM_PORT": str(info["port"]),
            "KUBESIM_KUBECONFIG": info["kubeconfig"],
            "KUBESIM_CERT_KUBECONFIG": info["certKubeconfig"],
            "KUBESIM_CERT_DIR": info["certDir"],
            "KUBESIM_DIR": work,
        })
        rc = subprocess.call([program] + prog_args, env=env)
        if rc != 0:
            print("---- kubesim log (last 60 lines) ----", file=sys.stderr)
            print("".join(open(log_path).readlines()[-60:]), file=sys.stderr)
        return rc
    finally:
        if sim.poll() is None:
            sim.send_signal(signal.SIGTERM)
            try:
                sim.wait(timeout=10)
            except subprocess.TimeoutExpired:
                sim.kill()
                sim.wait()
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main())
