"""nzfs remote benchmark: a Zarr store in moto's S3 server on 127.0.0.1,
behind a proxy that adds --latency-ms (default 20) to every request, read by
nzfs through a real mount and by zarr-python 3 (obstore-backed ObjectStore)
and tensorstore (s3 kvstore) in the same run.

Usage:  python3 scripts/bench remote [--repeat 3] [--latency-ms 20]
(scripts/bench.sh --remote sets up the venv and builds nzfs first.)

Reported, each the median of --repeat runs:
- cold reads (fresh mount, empty caches): `cat` of every chunk file, and of
  data.bin; zarr-python and tensorstore reading the whole array;
- requests and the most requests in flight at once (counted by the proxy),
  and the CPU seconds moto spent serving them;
- nzfs's `data.bin` and chunk files against each peer, as ratios;
- a warm re-read of data.bin from nzfs's decoded cache (requests: 0);
- the time to mount a store of 1,000 arrays, consolidated and not (20
  groups of 50 arrays, each node its own zarr.json), and a plate-shaped
  store without consolidated metadata (8 rows of 12 wells, each a field of
  3 levels: 201 groups, 288 arrays), and their requests, next to
  zarr-python opening each and listing every array.

- what following the store's metadata costs (--metadata-ttl): the
  requests a mount makes per minute when idle and when busy (something
  stat'ed ten times a second), for the consolidated store (a look is its
  root's two documents) and the one of 20 groups (a look is a HEAD per
  document and a LIST per group); and the cold data.bin read of a mount
  that follows against one that never looks (--metadata-ttl never).

--openings-only skips the reads and reports only the openings;
--following-only reports only what following costs.
"""

import argparse
import http.client
import http.server
import os
import shutil
import socket
import statistics
import subprocess
import sys
import threading
import time

import numpy as np
import zarr
from zarr.codecs import ZstdCodec

from common import MIB, RELEASE, Mounted, cpu_seconds, log
from common import read_all as cat

NZFS = RELEASE
VENV_BIN = os.path.dirname(sys.executable)


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def wait_port(port, what):
    for _ in range(300):
        try:
            socket.create_connection(("127.0.0.1", port), timeout=1).close()
            return
        except OSError:
            time.sleep(0.1)
    raise SystemExit(f"{what} did not start")


class Proxy:
    """A threaded HTTP/1.1 proxy in front of 127.0.0.1:upstream that sleeps
    `latency` before forwarding each request, and counts requests and the
    most in flight at once."""

    def __init__(self, upstream, latency, upstream_pid):
        self.upstream_pid = upstream_pid  # whose CPU time timed() counts
        self.lock = threading.Lock()
        self.requests = self.in_flight = self.max_in_flight = 0
        proxy = self

        class Handler(http.server.BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, *args):
                pass

            def forward(self):
                with proxy.lock:
                    proxy.requests += 1
                    proxy.in_flight += 1
                    proxy.max_in_flight = max(proxy.max_in_flight, proxy.in_flight)
                try:
                    time.sleep(latency)
                    body = self.rfile.read(int(self.headers.get("Content-Length", 0) or 0))
                    conn = http.client.HTTPConnection("127.0.0.1", upstream, timeout=60)
                    headers = {k: v for k, v in self.headers.items() if k.lower() != "connection"}
                    conn.request(self.command, self.path, body=body, headers=headers)
                    r = conn.getresponse()
                    data = r.read()
                    self.send_response_only(r.status, r.reason)
                    for k, v in r.getheaders():
                        if k.lower() not in ("connection", "transfer-encoding", "content-length"):
                            self.send_header(k, v)
                    self.send_header("Content-Length", str(len(data)) if self.command != "HEAD"
                                     else r.getheader("Content-Length", "0"))
                    self.end_headers()
                    if self.command != "HEAD":
                        self.wfile.write(data)
                    conn.close()
                finally:
                    with proxy.lock:
                        proxy.in_flight -= 1

            do_GET = do_HEAD = do_PUT = do_POST = do_DELETE = forward

        self.port = free_port()
        self.server = http.server.ThreadingHTTPServer(("127.0.0.1", self.port), Handler)
        self.server.daemon_threads = True
        threading.Thread(target=self.server.serve_forever, daemon=True).start()

    def reset(self):
        with self.lock:
            self.requests = self.max_in_flight = 0

    def counts(self):
        with self.lock:
            return self.requests, self.max_in_flight

    def stop(self):
        self.server.shutdown()


def upload(s3, local, bucket, prefix):
    for dirpath, _, files in os.walk(local):
        for f in files:
            path = os.path.join(dirpath, f)
            key = prefix + "/" + os.path.relpath(path, local)
            s3.upload_file(path, bucket, key)


def build(workdir):
    """A 64 MiB float32 array in 256 chunks of 256 KiB (zstd), a
    consolidated group of 1,000 small arrays, and the same number of arrays
    in 20 groups with no consolidated metadata."""
    data = os.path.join(workdir, "data.zarr")
    g = zarr.open_group(data, mode="w", zarr_format=3)
    a = g.create_array("field", shape=(256, 256, 256), chunks=(1, 256, 256), dtype="float32",
                       compressors=[ZstdCodec(level=3)], dimension_names=["time", "y", "x"], fill_value=0)
    rng = np.random.default_rng(1)
    y, x = np.meshgrid(np.arange(256, dtype="float32"), np.arange(256, dtype="float32"), indexing="ij")
    base = 280 + 10 * np.sin(x / 37) * np.cos(y / 53)
    for t0 in range(0, 256, 32):
        a[t0:t0 + 32] = np.stack([base + rng.normal(0, 0.5, base.shape) for _ in range(32)]).astype("float32")
    zarr.consolidate_metadata(data)
    many = os.path.join(workdir, "many.zarr")
    g = zarr.open_group(many, mode="w", zarr_format=3)
    for i in range(1000):
        g.create_array(f"v{i:04d}", shape=(10,), chunks=(10,), dtype="float32", fill_value=0,
                       dimension_names=["x"])
    zarr.consolidate_metadata(many)
    loose = os.path.join(workdir, "loose.zarr")
    g = zarr.open_group(loose, mode="w", zarr_format=3)
    for j in range(20):
        sub = g.create_group(f"g{j:02d}")
        for i in range(50):
            sub.create_array(f"v{i:02d}", shape=(10,), chunks=(10,), dtype="float32", fill_value=0,
                             dimension_names=["x"])
    plate = os.path.join(workdir, "plate.zarr")
    g = zarr.open_group(plate, mode="w", zarr_format=3)
    for row in "ABCDEFGH":
        for col in range(1, 13):
            field = g.create_group(f"{row}/{col}/0")
            for level in range(3):
                field.create_array(str(level), shape=(64 >> level, 64 >> level), chunks=(32, 32), dtype="uint16",
                                   fill_value=0, dimension_names=["y", "x"])
    return data, many, loose, plate


def s3_options(port):
    """The store options of moto's bucket behind the proxy at `port`."""
    return {"aws_endpoint": f"http://127.0.0.1:{port}", "aws_region": "us-east-1",
            "aws_access_key_id": "test", "aws_secret_access_key": "test"}


# The live mounts, by mount point.
_live = {}


def mount(url, mp, port=None, **options):
    """Mount `url` at `mp` (behind the proxy at `port`, if any); the seconds
    the mount took."""
    if port is not None:
        options["store_options"] = s3_options(port)
    m = _live[mp] = Mounted(url, mp, NZFS, **options)
    return m.seconds


def following(proxy, mp, seconds, repeat):
    """Rows of what following the metadata costs: (what, requests per
    minute idle, requests per minute busy, requests per look) for each
    store with --metadata-ttl 2, and the cold data.bin seconds of a mount
    that follows (every 1 s) and of one that never looks."""
    rows = []
    for name in ("data.zarr", "loose.zarr"):
        mount(f"s3://bench/{name}", mp, proxy.port, metadata_ttl="2")
        try:
            proxy.reset()
            time.sleep(seconds)
            idle = proxy.counts()[0]
            # Busy: first a warm-up, whose looks include the first (which,
            # without consolidated metadata over object storage, also reads
            # the metadata again), then the counted window.
            def busy_for(t):
                end = time.perf_counter() + t
                while time.perf_counter() < end:
                    os.stat(os.path.join(mp, "header.cdl"))
                    time.sleep(0.1)
            busy_for(seconds)
            proxy.reset()
            busy_for(seconds)
            busy = proxy.counts()[0]
            # One look alone: once one is due, one stat starts it, and
            # nothing else pokes the mount until it is done.
            # (the last busy look ends, and the next falls due).
            time.sleep(10)
            proxy.reset()
            os.stat(os.path.join(mp, "header.cdl"))
            time.sleep(10)
            per_look = proxy.counts()[0]
        finally:
            unmount(mp)
        rows.append((name, idle * 60 / seconds, busy * 60 / seconds, per_look))
    reads = {}
    for _ in range(repeat):
        for label, ttl in (("follows (every 1 s)", "1"), ("never looks", "never")):
            mount("s3://bench/data.zarr", mp, proxy.port, metadata_ttl=ttl)
            try:
                proxy.reset()
                t = time.perf_counter()
                cat([os.path.join(mp, "field", "data.bin")])
                reads.setdefault(label, []).append(time.perf_counter() - t)
            finally:
                unmount(mp)
    return rows, {k: statistics.median(v) for k, v in reads.items()}


def unmount(mp):
    """Unmount what `mount` mounted at `mp`, if anything."""
    m = _live.pop(mp, None)
    if m:
        m.close()


def timed(proxy, fn):
    """Seconds, requests, most in flight, and the CPU seconds moto spent
    serving them (the server shares the two cores with the reader)."""
    proxy.reset()
    c = cpu_seconds(proxy.upstream_pid)
    t = time.perf_counter()
    fn()
    dt = time.perf_counter() - t
    return dt, *proxy.counts(), cpu_seconds(proxy.upstream_pid) - c


def median_row(runs):
    return tuple(statistics.median(r[i] for r in runs) for i in range(len(runs[0])))


def main(argv=None):
    global NZFS
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--latency-ms", type=float, default=20)
    ap.add_argument("--workdir", default="/tmp/nzfs-bench-remote")
    ap.add_argument("--nzfs", default=NZFS, help="the nzfs binary (default: the release build)")
    ap.add_argument("--openings-only", action="store_true", help="report only the openings, not the reads")
    ap.add_argument("--following-only", action="store_true", help="report only what following the metadata costs")
    ap.add_argument("--follow-seconds", type=float, default=20, help="how long each following row counts requests")
    args = ap.parse_args(argv)
    NZFS = args.nzfs
    import boto3

    shutil.rmtree(args.workdir, ignore_errors=True)
    os.makedirs(args.workdir)
    moto_port = free_port()
    moto = subprocess.Popen([os.path.join(VENV_BIN, "moto_server"), "-H", "127.0.0.1", "-p", str(moto_port)],
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    proxy = None
    mp = os.path.join(args.workdir, "mnt")
    try:
        wait_port(moto_port, "moto_server")
        log("building the datasets…")
        data, many, loose, plate = build(args.workdir)
        s3 = boto3.client("s3", endpoint_url=f"http://127.0.0.1:{moto_port}", region_name="us-east-1",
                          aws_access_key_id="test", aws_secret_access_key="test")
        s3.create_bucket(Bucket="bench")
        upload(s3, data, "bench", "data.zarr")
        upload(s3, many, "bench", "many.zarr")
        upload(s3, loose, "bench", "loose.zarr")
        upload(s3, plate, "bench", "plate.zarr")
        proxy = Proxy(moto_port, args.latency_ms / 1000, moto.pid)
        url = "s3://bench/data.zarr"
        size = 256 * 256 * 256 * 4
        follow_rows, follow_reads = following(proxy, mp, args.follow_seconds, args.repeat)
        print(f"\nFollowing the store's metadata (--metadata-ttl 2; requests counted by the proxy over "
              f"{args.follow_seconds:g} s each, scaled to a minute; busy: header.cdl stat'ed ten times a second).\n")
        print("| store | requests/min idle | requests/min busy | requests per look | per minute at the default 60 s |")
        print("|---|---|---|---|---|")
        for name, idle, busy, per_look in follow_rows:
            print(f"| {name} | {idle:.0f} | {busy:.0f} | {per_look:.0f} | {per_look:.0f} |")
        f, n = follow_reads["follows (every 1 s)"], follow_reads["never looks"]
        print(f"\ncold data.bin ({size // MIB} MiB): follows every 1 s {size / MIB / f:.1f} MiB/s, never looks "
              f"{size / MIB / n:.1f} MiB/s: {n / f:.2f}x (medians of {args.repeat}; 1.00x: following costs reads "
              f"nothing)")
        if args.following_only:
            return
        expected = zarr.open_array(data, path="field")[:]
        size = expected.nbytes
        rows = {}

        def nzfs_chunks():
            mount(url, mp, proxy.port)
            try:
                files = sorted(os.path.join(mp, "field", f) for f in os.listdir(os.path.join(mp, "field"))
                               if f.endswith(".bin") and f != "data.bin")
                return timed(proxy, lambda: cat(files))
            finally:
                unmount(mp)

        def nzfs_data():
            mount(url, mp, proxy.port)
            try:
                cold = timed(proxy, lambda: cat([os.path.join(mp, "field", "data.bin")]))
                got = np.fromfile(os.path.join(mp, "field", "data.bin"), dtype="<f4").reshape(expected.shape)
                assert np.array_equal(got, expected), "nzfs data.bin differs from zarr-python"
                warm = timed(proxy, lambda: cat([os.path.join(mp, "field", "data.bin")]))
                rows.setdefault("warm", []).append(warm)
                return cold
            finally:
                unmount(mp)

        def zarr_python():
            from obstore.store import S3Store
            store = S3Store("bench", prefix="data.zarr", endpoint=f"http://127.0.0.1:{proxy.port}",
                            region="us-east-1", access_key_id="test", secret_access_key="test",
                            client_options={"allow_http": True})
            zs = zarr.storage.ObjectStore(store, read_only=True)

            def read():
                got = zarr.open_array(zs, path="field", mode="r")[:]
                assert np.array_equal(got, expected)
            return timed(proxy, read)

        def tensorstore():
            import tensorstore as ts
            os.environ.update(AWS_ACCESS_KEY_ID="test", AWS_SECRET_ACCESS_KEY="test")
            spec = {"driver": "zarr3", "kvstore": {"driver": "s3", "bucket": "bench", "path": "data.zarr/field/",
                                                  "endpoint": f"http://127.0.0.1:{proxy.port}",
                                                  "aws_region": "us-east-1"},
                    "context": {"cache_pool": {"total_bytes_limit": 0}}}

            def read():
                got = ts.open(spec, read=True).result().read().result()
                assert np.array_equal(got, expected)
            return timed(proxy, read)

        contenders = [("nzfs: cat every chunk file", nzfs_chunks), ("nzfs: cat data.bin", nzfs_data),
                      ("zarr-python 3 + obstore: a[:]", zarr_python), ("tensorstore (s3): read()", tensorstore)]
        # Rounds interleave the contenders, so that a slow spell of the
        # machine or of moto falls on all of them alike.
        failed = set()
        for _ in range(0 if args.openings_only else args.repeat):
            for name, fn in contenders:
                if name in failed:
                    continue
                try:
                    rows.setdefault(name, []).append(fn())
                except Exception as e:  # a contender that cannot run is reported, not fatal
                    log(f"{name}: {type(e).__name__}: {e}")
                    failed.add(name)

        def nzfs_mount(name, expect=1000):
            def run():
                proxy.reset()
                dt = mount(f"s3://bench/{name}", mp, proxy.port)
                n = proxy.counts()[0]
                arrays = [d for d, _, files in os.walk(mp) if "header.cdl" in files and os.path.basename(d) != "mnt"]
                unmount(mp)
                assert len(arrays) >= expect, len(arrays)
                return dt, n, 0, 0
            return run

        def zarr_open(name, consolidated, expect=1000):
            def run():
                from obstore.store import S3Store
                store = S3Store("bench", prefix=name, endpoint=f"http://127.0.0.1:{proxy.port}",
                                region="us-east-1", access_key_id="test", secret_access_key="test",
                                client_options={"allow_http": True})
                zs = zarr.storage.ObjectStore(store, read_only=True)
                proxy.reset()
                t = time.perf_counter()
                g = zarr.open_group(zs, mode="r", use_consolidated=consolidated)
                n_arrays = sum(1 for _ in g.arrays()) if consolidated else \
                    sum(1 for _, m in g.members(max_depth=None) if isinstance(m, zarr.Array))
                dt = time.perf_counter() - t
                assert n_arrays == expect, n_arrays
                return dt, proxy.counts()[0], 0, 0
            return run

        openings = [("nzfs mount (1,000 arrays, consolidated)", nzfs_mount("many.zarr")),
                    ("zarr-python open_group (same store)", zarr_open("many.zarr", True)),
                    ("nzfs mount (1,000 arrays, 20 groups, not consolidated)", nzfs_mount("loose.zarr")),
                    ("zarr-python open_group + members() (same store)", zarr_open("loose.zarr", False)),
                    ("nzfs mount (plate: 201 groups, 288 arrays, not consolidated)", nzfs_mount("plate.zarr", 288)),
                    ("zarr-python open_group + members() (same plate)", zarr_open("plate.zarr", False, 288))]
        mounts = {name: [fn() for _ in range(args.repeat)] for name, fn in openings}

        print(f"\nRemote read of a {size // MIB} MiB float32 array (256 chunks of 256 KiB, zstd) from moto "
              f"on 127.0.0.1 behind a proxy adding {args.latency_ms:g} ms per request; medians of "
              f"{args.repeat} runs.\n")
        print(f"| {'contender':40} | {'seconds':>8} | {'MiB/s':>7} | {'requests':>8} | {'max in flight':>13} "
              f"| {'moto CPU s':>10} |")
        print(f"|{'-' * 42}|{'-' * 10}|{'-' * 9}|{'-' * 10}|{'-' * 15}|{'-' * 12}|")
        for name, runs in rows.items():
            if name == "warm":
                continue
            dt, req, inflight, moto_cpu = median_row(runs)
            print(f"| {name:40} | {dt:8.2f} | {size / MIB / dt:7.1f} | {req:8.0f} | {inflight:13.0f} "
                  f"| {moto_cpu:10.2f} |")
        if "warm" in rows:
            dt, req, inflight, moto_cpu = median_row(rows["warm"])
            print(f"| {'nzfs: warm re-read of data.bin':40} | {dt:8.2f} | {size / MIB / dt:7.1f} | {req:8.0f} "
                  f"| {inflight:13.0f} | {moto_cpu:10.2f} |")
        print("\n| nzfs figure | vs | ratio | target |")
        print("|---|---|---|---|")
        for mine, label in (("nzfs: cat data.bin", "data.bin"), ("nzfs: cat every chunk file", "chunk files")):
            for peer in ("zarr-python 3 + obstore: a[:]", "tensorstore (s3): read()"):
                if mine in rows and peer in rows:
                    ratio = median_row(rows[peer])[0] / median_row(rows[mine])[0]
                    print(f"| {label} | {peer.split(':')[0]} | {ratio:.2f}x | >= 1.3x: "
                          f"{'met' if ratio >= 1.3 else 'NOT met'} |")
        print("(ratio: the peer's seconds over nzfs's; above 1, nzfs is faster)")
        print(f"\n| {'opening':54} | {'seconds':>8} | {'requests':>8} |")
        print(f"|{'-' * 56}|{'-' * 10}|{'-' * 10}|")
        for name, runs in mounts.items():
            dt, req, _, _ = median_row(runs)
            print(f"| {name:54} | {dt:8.2f} | {req:8.0f} |")
        for mine, peer in openings[0:2], openings[2:4], openings[4:6]:
            ratio = median_row(mounts[peer[0]])[0] / median_row(mounts[mine[0]])[0]
            print(f"{mine[0]}: {ratio:.2f}x zarr-python's time (above 1, nzfs is faster)")
    finally:
        unmount(mp)
        if proxy:
            proxy.stop()
        moto.kill()
        moto.wait()

