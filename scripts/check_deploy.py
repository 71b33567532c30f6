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

And the release workflow (.github/workflows/release.yml), which only
GitHub's runners can run: against GitHub's workflow schema
(check-jsonschema's vendored copy, offline; a broken copy of the workflow
must fail it, so the check is known to bite), every `run` step through
`bash -n`, every script it runs present, its Rust toolchain the crate's
rust-version, and each artifact path the one its script writes.

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


WORKFLOW = os.path.join(ROOT, ".github", "workflows", "release.yml")


def schema_errors(path):
    """check-jsonschema's verdict on `path` against GitHub's workflow schema."""
    checker = os.path.join(os.path.dirname(sys.executable), "check-jsonschema")
    r = subprocess.run([checker, "--builtin-schema", "vendor.github-workflows", path],
                       capture_output=True, text=True)
    return None if r.returncode == 0 else (r.stdout + r.stderr).strip()


def check_release():
    with open(WORKFLOW) as f:
        text = f.read()
    errors = schema_errors(WORKFLOW)
    if errors:
        fail(f"{WORKFLOW} is not a valid GitHub workflow:\n{errors}")
    doc = yaml.safe_load(text)
    broken = dict(doc, jobs=dict(doc["jobs"], wheel={k: v for k, v in doc["jobs"]["wheel"].items() if k != "runs-on"}))
    with tempfile.NamedTemporaryFile("w", suffix=".yml") as f:
        yaml.safe_dump(broken, f)
        f.flush()
        if schema_errors(f.name) is None:
            fail("the workflow schema check passed a job without runs-on: it checks nothing")
    with open(os.path.join(ROOT, "Cargo.toml")) as f:
        rust_version = next(line.split('"')[1] for line in f if line.startswith("rust-version"))
    artifacts = {"wheel.sh": "target/wheels/", "package.sh": "target/debian/", "static.sh": "target/static/"}
    runs = 0
    for name, job in doc["jobs"].items():
        built = None
        for step in job["steps"]:
            uses = step.get("uses", "")
            if uses.startswith("dtolnay/rust-toolchain") and step["with"]["toolchain"] != rust_version:
                fail(f"job {name} builds with Rust {step['with']['toolchain']}, Cargo.toml needs {rust_version}")
            if uses.startswith("actions/upload-artifact") and built:
                want = artifacts[built]
                if not step["with"]["path"].startswith(want):
                    fail(f"job {name} uploads {step['with']['path']}, but scripts/{built} writes {want}")
                with open(os.path.join(ROOT, "scripts", built)) as f:
                    if want not in f.read():
                        fail(f"scripts/{built} does not write {want}")
            if "run" not in step:
                continue
            runs += 1
            script = step["run"].replace("${{", "$(").replace("}}", ")")
            r = subprocess.run(["bash", "-n"], input=script, text=True, capture_output=True)
            if r.returncode != 0:
                fail(f"job {name}, step {step.get('name')}: bash -n: {r.stderr.strip()}")
            for word in script.split():
                if word.startswith("scripts/"):
                    if not os.path.isfile(os.path.join(ROOT, word)):
                        fail(f"job {name} runs {word}, which does not exist")
                    built = os.path.basename(word) if os.path.basename(word) in artifacts else built
    print(f"check_deploy: {os.path.relpath(WORKFLOW, ROOT)} valid against GitHub's workflow schema (which "
          f"refuses a broken copy); {runs} run steps pass bash -n; Rust {rust_version}; artifacts where the "
          f"scripts write them")


if __name__ == "__main__":
    main()
    check_release()
