#!/usr/bin/env bash
# Install what nzfs needs to build (a C compiler, libclang), to mount (fuse3) and to test (netcdf-bin for
# ncgen/ncdump/nccopy, gdal-bin and cdo for the reader checks, bindfs for the
# dead-store tests, systemd and man-db for the system tests, gfortran,
# libnetcdf-dev and nco for the legacy-tool programs, chromium for the
# index.html screenshot).
# Debian/Ubuntu; uses sudo when not root. Idempotent. --demo: what
# scripts/demo.sh needs (no libclang); --test: everything the tests need.
set -euo pipefail
need=()
command -v fusermount3 >/dev/null || need+=(fuse3)
# Building: a C compiler (blosc, zfp) and libclang for zfp's bindings
# (feature zfp, default; without it: --no-default-features --features
# remote,icechunk).
command -v cc >/dev/null || need+=(build-essential)
# (The demo builds without zfp: no libclang.)
if [ "${1:-}" != "--demo" ]; then
  # libclang itself: libclang-cpp (which other packages pull in) is not it.
  compgen -G "/usr/lib/llvm-*/lib/libclang.so*" >/dev/null || compgen -G "/usr/lib/*/libclang-[0-9]*.so*" >/dev/null || need+=(libclang-dev)
fi
if [ "${1:-}" = "--test" ]; then
  command -v ncgen >/dev/null || need+=(netcdf-bin)
  command -v ncdump >/dev/null || need+=(netcdf-bin)
  command -v gdallocationinfo >/dev/null || need+=(gdal-bin)
  # CDO reads the virtual .nc of a Zarr v2 (xarray) store: times must show.
  command -v cdo >/dev/null || need+=(cdo)
  # An HTTP server with range requests for the remote-store tests.
  [ -x /usr/sbin/nginx ] || need+=(nginx-light)
  # A store that stops answering, for the dead-store tests (tests/security.rs).
  command -v bindfs >/dev/null || need+=(bindfs)
  # mount(8), fstab and docs/install.md's systemd unit (tests/system.rs): the
  # unit is checked with systemd-analyze; man pages are read with man.
  command -v systemd-analyze >/dev/null || need+=(systemd)
  command -v man >/dev/null || need+=(man-db)
  # The legacy programs (tests/legacy/run.py): Fortran, C with netCDF-C, NCO.
  command -v gfortran >/dev/null || need+=(gfortran)
  command -v nc-config >/dev/null || need+=(libnetcdf-dev)
  command -v ncks >/dev/null || need+=(nco)
  # ImageJ 1.x opens data.tif (tests/legacy/run.py), in batch mode under a
  # virtual X display.
  [ -e /usr/share/java/ij.jar ] || need+=(imagej)
  command -v xvfb-run >/dev/null || need+=(xvfb xauth)
  # libtiff's tiffinfo reads every data.tif (scripts/corpus.py).
  command -v tiffinfo >/dev/null || need+=(libtiff-tools)
  # Headless Chromium opens index.html from a mount (scripts/check_previews.py).
  command -v chromium >/dev/null || need+=(chromium)
fi
if [ ${#need[@]} -gt 0 ]; then
  SUDO=""; [ "$(id -u)" -eq 0 ] || SUDO="sudo"
  echo "setup: these Debian packages are missing: ${need[*]}" >&2
  $SUDO apt-get update -qq
  # What apt would do for them, said before it is done: the packages it
  # installs (theirs and their dependencies) and those it upgrades
  # (--no-upgrade: a named package already there is left as it is; a
  # dependency is upgraded only where a new package needs its newer version).
  plan=$(apt-get install -s -y --no-upgrade "${need[@]}" 2>/dev/null | grep '^Inst ' || true)
  installs=$(printf '%s\n' "$plan" | grep -c '^Inst [^ ]* (' || true)
  upgrades=$(printf '%s\n' "$plan" | grep '^Inst [^ ]* \[' | awk '{print $2}' | tr '\n' ' ' || true)
  echo "setup: apt-get would install $installs packages (${#need[@]} named, the rest what they need)${upgrades:+ and upgrade ${upgrades% }}" >&2
  # Asked on a terminal; CI (CI set) and pipes go ahead.
  if [ -t 0 ] && [ -z "${CI:-}" ]; then
    read -r -p "setup: install them now? [Y/n] " answer
    case "$answer" in
      [nN]*) echo "setup: not installed; install them yourself, then run this again" >&2; exit 1 ;;
    esac
  fi
  echo "setup: installing (about 3 minutes on a fresh machine; apt shows each package)" >&2
  # -q, not -qq: one line per package unpacked and set up, so a long
  # install shows that it is moving.
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -q --no-upgrade "${need[@]}" \
    > >(grep --line-buffered -E '^(Unpacking|Setting up) ' >&2 || true)
fi
[ -e /dev/fuse ] || { echo "setup: /dev/fuse is missing: this machine cannot mount FUSE filesystems" >&2; exit 1; }
if [ "${1:-}" = "--test" ]; then
  # moto's S3 server for the remote-store tests (tests/remote.rs), in the
  # test venv (the same one scripts/check_fixtures.sh uses).
  venv=${NZFS_VENV:-.venv}
  [ -x "$venv/bin/python" ] || { echo "setup: making the test venv $venv (moto, grpcio, schema checkers)" >&2; python3 -m venv "$venv"; }
  # moto's S3 server, and grpcio for the CSI tests' second gRPC client.
  { [ -x "$venv/bin/moto_server" ] && "$venv/bin/python" -c "import grpc_tools" 2>/dev/null; } || {
    echo "setup: pip: scripts/servers-requirements.txt (moto's S3 server, grpcio; about 2 minutes)" >&2
    "$venv/bin/pip" install -q -r scripts/servers-requirements.txt
  }
  # The offline schema checks of the Kubernetes manifests and the release
  # workflow (scripts/check_deploy.py).
  { [ -x "$venv/bin/kubernetes-validate" ] && [ -x "$venv/bin/check-jsonschema" ]; } || {
    echo "setup: pip: scripts/deploy-requirements.txt (the manifests' schema checkers)" >&2
    "$venv/bin/pip" install -q -r scripts/deploy-requirements.txt
  }
fi
