"""nzfs's benchmarks: `python3 scripts/bench WHAT [options]` (`--help`
after WHAT for its options). scripts/bench.sh builds the release binary and
sets up the venv first.

  local      nzfs through a real mount beside zarr-python and tensorstore,
             the same store in memory, in the same run (the main table)
  disk       the same with the store on disk, the page cache dropped before
             every pass (root)
  hierarchy  the mount of 1,000,000 nodes, `ls -la` of 100,000 entries
  cores      GB/s on many cores, each a ratio to tensorstore (numpy and
             tensorstore only: what the many-core device machine has)
  remote     moto's S3 server behind a latency proxy: nzfs beside
             zarr-python and tensorstore, openings, what following costs
  refs       a kerchunk reference set: nzfs beside xarray through fsspec
  probe      two or more nzfs builds against each other, interleaved
  write      a 1 GiB netCDF file written through a writable mount of an
             Icechunk repository beside xarray's open_dataset().to_zarr()
  commit     a one-value edit's commit and an append seen by a live mount,
             in 20 and in 2,000 arrays, beside zarr-python's edit

The modules beside this one: common.py (the one mount helper, on the
wheel's own `nzfs.mount`; timing; page cache; the table), datasets.py (the
local stores), and one module per benchmark above.
"""

import importlib
import os
import sys

WHAT = ["local", "disk", "hierarchy", "cores", "remote", "refs", "probe", "write", "commit"]


def main():
    if len(sys.argv) < 2 or sys.argv[1] not in WHAT:
        print(__doc__, file=sys.stderr)
        sys.exit(f"bench: say which benchmark: {', '.join(WHAT)}" if len(sys.argv) > 1 and
                 sys.argv[1] not in ("-h", "--help") else 0)
    sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
    importlib.import_module(sys.argv[1]).main(sys.argv[2:])


main()
