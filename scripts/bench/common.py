"""What every benchmark shares: the one mount helper (the wheel's own
`nzfs.mount`, run from this source tree on a chosen binary), the daemon's
CPU time and memory, page-cache control, timing, and the table.

Invariant: every mount a benchmark makes is a `Mounted`, so every row
mounts the way a Python user does, and a row's binary is the one it names
(`NZFS_BINARY` is set for the mount and for its unmount).
"""

import os
import statistics
import subprocess
import sys
import time

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
# The wheel's Python API, from the source tree (no wheel needs installing).
sys.path.insert(0, os.path.join(ROOT, "src", "python"))
import nzfs as api  # noqa: E402

MIB = 1 << 20
# The release build scripts/bench.sh makes.
RELEASE = os.path.join(ROOT, "target", "release", "nzfs")


def log(msg):
    print(msg, file=sys.stderr, flush=True)


class Mounted:
    """A fresh mount of `store` at `mp` by the binary `nzfs`, through
    `nzfs.mount(store, mp, **options)` (`cache_size="256MiB"`,
    `passthrough="always"`, `mount_options=["max_read=65536"]`,
    `store_options={...}`, `metadata_ttl="2"`...). Its log is `mp + ".log"`
    unless `log_file` says otherwise. `seconds` is how long the mount took;
    `pid` the daemon's. A context manager: leaving the block unmounts."""

    def __init__(self, store, mp, nzfs=RELEASE, log_file=None, **options):
        os.makedirs(mp, exist_ok=True)
        # A path of a binary is made absolute: the daemon changes directory.
        nzfs = os.path.abspath(nzfs) if os.sep in nzfs else nzfs
        self.binary, self.mp = nzfs, mp
        self.log_file = log_file or mp + ".log"
        if os.path.exists(self.log_file):
            os.remove(self.log_file)
        os.environ["NZFS_BINARY"] = nzfs
        t0 = time.perf_counter()
        self.mount = api.mount(store, mp, log_file=self.log_file, **options)
        self.seconds = time.perf_counter() - t0
        self.pid = self.status()["pid"]

    def status(self):
        """The `nzfs status --json` document."""
        os.environ["NZFS_BINARY"] = self.binary
        return self.mount.status()

    def passthrough_on(self):
        return bool(self.status().get("passthrough", {}).get("on"))

    def cpu_seconds(self):
        return cpu_seconds(self.pid)

    def memory(self, field="VmHWM"):
        """`field` of /proc/PID/status (VmHWM, VmRSS), in bytes."""
        with open(f"/proc/{self.pid}/status") as f:
            for line in f:
                if line.startswith(field + ":"):
                    return int(line.split()[1]) * 1024
        return 0

    def close(self):
        """Unmount, and wait (3 s at most) for the daemon to exit."""
        os.environ["NZFS_BINARY"] = self.binary
        self.mount.unmount()
        for _ in range(300):
            if not os.path.exists(f"/proc/{self.pid}"):
                return
            time.sleep(0.01)

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()


def cpu_seconds(pid):
    """User + system CPU seconds of process `pid` so far, all threads."""
    with open(f"/proc/{pid}/stat") as f:
        fields = f.read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def median_time(fn, repeat):
    """The median wall seconds of `repeat` calls of `fn`."""
    times = []
    for _ in range(repeat):
        t0 = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t0)
    return statistics.median(times)


def cat(files):
    """`cat` the files (one process, output discarded)."""
    subprocess.run(["cat", *files], check=True, stdout=subprocess.DEVNULL)


def cat_parallel(groups):
    """One `cat` per group of files, all at once."""
    procs = [subprocess.Popen(["cat", *g], stdout=subprocess.DEVNULL) for g in groups if g]
    for p in procs:
        assert p.wait() == 0


def read_all(paths):
    """Bytes read from `paths`, 1 MiB at a time, in this process."""
    n = 0
    for p in paths:
        with open(p, "rb") as f:
            while chunk := f.read(MIB):
                n += len(chunk)
    return n


def warm_page_cache(files):
    read_all(files)


def drop_page_cache():
    """Empty the kernel page cache (root only): the next read of the store
    comes off the disk, as a user's data does the first time. False where
    it cannot (not root)."""
    subprocess.run(["sync"], check=True)
    try:
        with open("/proc/sys/vm/drop_caches", "w") as f:
            f.write("3\n")
        return True
    except OSError:
        return False


def chunk_objects(store, array):
    """The stored chunk objects of a Zarr v3 array (default key encoding)."""
    out = []
    for root, _, files in os.walk(os.path.join(store, array, "c")):
        out.extend(os.path.join(root, f) for f in files)
    return sorted(out)


def chunk_files(root, array="field"):
    """The chunk files of `array` in the mount at `root` (data.bin aside)."""
    d = os.path.join(root, array)
    return sorted(os.path.join(d, f) for f in os.listdir(d) if f != "data.bin" and f.endswith(".bin"))


def main_store_args(ap):
    """The options of the benchmarks of the main store (`local`, `disk`)."""
    ap.add_argument("--size-mib", type=int, default=512)
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--workdir", default="/tmp/nzfs-bench")
    ap.add_argument("--nzfs", default=RELEASE)
    ap.add_argument("--cache-size", default="256MiB")
    ap.add_argument("--passthrough", default="never", choices=["auto", "always", "never"],
                    help="the path for every nzfs row")


def parse_size(text):
    units = {"KiB": 1 << 10, "MiB": 1 << 20, "GiB": 1 << 30}
    for u, f in units.items():
        if text.endswith(u):
            return int(float(text[:-len(u)]) * f)
    return int(text)


def print_table(rows, last="path"):
    """Rows of (figure, nzfs, peer, ratio, target, met, path) as Markdown."""
    print(f"| figure | nzfs | peer | ratio | target | {last} |")
    print("|---|---|---|---|---|---|")
    for name, mine, peer, ratio, target, ok, path in rows:
        verdict = ("met" if ok else "NOT met") if target else ""
        print(f"| {name} | {mine} | {peer} | {ratio} | {target} {verdict} | {path} |")


def decode_files(files):
    """Decoded bytes of zstd objects, decoded in this process."""
    import zstandard
    d = zstandard.ZstdDecompressor()
    n = 0
    for f in files:
        with open(f, "rb") as fh:
            n += len(d.decompress(fh.read()))
    return n


class Usage:
    """How busy the cores and the store's disk were over a stretch of time,
    from /proc/stat and /proc/diskstats (the disk's io_ticks: time with at
    least one request in flight), and how many bytes the disk read."""

    def __init__(self, path):
        dev = os.stat(path).st_dev
        self.dev = (os.major(dev), os.minor(dev))

    def snapshot(self):
        with open("/proc/stat") as f:
            cpu = [int(x) for x in f.readline().split()[1:]]
        busy = sum(cpu) - cpu[3] - cpu[4]  # all but idle and iowait
        disk = (0, 0)
        with open("/proc/diskstats") as f:
            for line in f:
                x = line.split()
                if (int(x[0]), int(x[1])) == self.dev:
                    disk = (int(x[5]) * 512, int(x[12]))
        return time.perf_counter(), busy / os.sysconf("SC_CLK_TCK"), disk

    @staticmethod
    def between(a, b):
        """(seconds, cores busy on average, disk busy fraction, bytes read)."""
        dt = b[0] - a[0]
        return dt, (b[1] - a[1]) / dt, (b[2][1] - a[2][1]) / 1000 / dt, b[2][0] - a[2][0]
