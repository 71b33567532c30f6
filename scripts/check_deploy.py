#!/usr/bin/env python3
"""Check deploy/kubernetes/ offline (issue #36): every manifest against the
Kubernetes API schemas (kubernetes-validate --strict, which bundles them:
no cluster, no network), and against nzfs itself:

- the DaemonSet's plugin arguments start `nzfs csi` (paths moved into a
  temporary directory), which then answers on its socket;
- the registrar's registration path is the plugin's socket on the host,
  under the driver's name, which the CSIDriver and every PersistentVolume
  use too;
- every volume attribute of the example PersistentVolumes is `store` or a
  long option of `nzfs mount --help`.

Usage: python scripts/check_deploy.py NZFS_BINARY   (the venv of
scripts/setup.sh --test, which installs scripts/deploy-requirements.txt)
"""
import glob
import os
import socket
import subprocess
import sys
import tempfile
import time

import yaml

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), ".."))
DEPLOY = os.path.join(ROOT, "deploy", "kubernetes")


def fail(msg):
    print(f"check_deploy: {msg}", file=sys.stderr)
    sys.exit(1)


def main():
    nzfs = os.path.abspath(sys.argv[1])
    files = sorted(glob.glob(os.path.join(DEPLOY, "*.yaml")) + glob.glob(os.path.join(DEPLOY, "example", "*.yaml")))
    validator = os.path.join(os.path.dirname(sys.executable), "kubernetes-validate")
    r = subprocess.run([validator, "--strict", "--quiet", *files])
    if r.returncode != 0:
        fail("a manifest does not match the Kubernetes schemas (above)")
    docs = [d for f in files for d in yaml.safe_load_all(open(f)) if d]
    by_kind = {}
    for d in docs:
        by_kind.setdefault(d["kind"], []).append(d)
    driver = by_kind["CSIDriver"][0]["metadata"]["name"]
    ds = by_kind["DaemonSet"][0]["spec"]["template"]["spec"]
    containers = {c["name"]: c for c in ds["containers"]}
    plugin, registrar = containers["nzfs"], containers["node-driver-registrar"]
    reg = [a for a in registrar["args"] if a.startswith("--kubelet-registration-path=")][0].split("=", 1)[1]
    plugin_dir = [v for v in ds["volumes"] if v["name"] == "plugin-dir"][0]["hostPath"]["path"]
    if reg != f"{plugin_dir}/csi.sock" or f"/{driver}/" not in reg:
        fail(f"registration path {reg} is not {plugin_dir}/csi.sock under {driver}")
    for pv in by_kind["PersistentVolume"]:
        if pv["spec"]["csi"]["driver"] != driver:
            fail(f"PersistentVolume {pv['metadata']['name']} names driver {pv['spec']['csi']['driver']}")
    help_text = subprocess.run([nzfs, "mount", "--help"], capture_output=True, text=True, check=True).stdout
    for pv in by_kind["PersistentVolume"]:
        for key in pv["spec"]["csi"]["volumeAttributes"]:
            if key != "store" and f"--{key}" not in help_text:
                fail(f"PersistentVolume {pv['metadata']['name']}: {key} is not an nzfs mount option")
    # The plugin starts with the DaemonSet's arguments.
    with tempfile.TemporaryDirectory() as tmp:
        args = []
        for a in plugin["args"]:
            a = a.replace("unix:///csi/", f"unix://{tmp}/csi/").replace("$(NODE_NAME)", "node-1")
            a = a.replace("/host/sys/fs/cgroup/", f"{tmp}/cgroup/").replace("/var/log/nzfs-csi", f"{tmp}/log")
            args.append(a)
        if args[0] != "csi":
            fail(f"the plugin's first argument is {args[0]}, not csi")
        p = subprocess.Popen([nzfs, *args], stderr=subprocess.PIPE, text=True)
        sock = os.path.join(tmp, "csi", "csi.sock")
        try:
            for _ in range(200):
                if p.poll() is not None:
                    fail(f"nzfs {' '.join(args)} exited: {p.stderr.read()}")
                try:
                    s = socket.socket(socket.AF_UNIX)
                    s.connect(sock)
                    s.close()
                    break
                except OSError:
                    time.sleep(0.05)
            else:
                fail("the plugin never listened")
        finally:
            p.terminate()
            p.wait(10)
    print(f"check_deploy: {len(files)} manifests, {len(docs)} objects valid; the DaemonSet's plugin arguments "
          f"start nzfs csi; driver {driver} named consistently; every volume attribute is an nzfs option")


if __name__ == "__main__":
    main()
