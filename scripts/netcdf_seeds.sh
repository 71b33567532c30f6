#!/usr/bin/env bash
# The fuzz seeds of the netcdf target (tests/fuzz/seeds/netcdf/): one
# netCDF-4 file with a nested group, an unlimited dimension, text, int64
# and a fill value, written by netCDF-C's ncgen; the same deflated and
# shuffled by nccopy; and a classic file without what CDF-1 lacks.
# Usage: bash scripts/netcdf_seeds.sh   (needs netcdf-bin)
set -euo pipefail
cd "$(dirname "$0")/.."
out=tests/fuzz/seeds/netcdf
mkdir -p "$out"
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
cat > "$work/seed.cdl" <<'CDL'
netcdf seed {
dimensions:
	time = UNLIMITED ;
	n = 3 ;
	len = 4 ;
variables:
	double time(time) ;
		time:units = "days since 2000-01-01" ;
	float v(time, n) ;
		v:_FillValue = -1.f ;
	char name(n, len) ;
	int64 big(n) ;
// global attributes:
		:title = "seed" ;
data:
 time = 0, 1 ;
 v = 1.5, _, 3, 4, 5, 6.25 ;
 name = "ab", "cde", "f" ;
 big = 1, 2, 3 ;
group: g {
variables:
	ushort u(n) ;
data:
 u = 1, 2, 3 ;
}
}
CDL
ncgen -k nc4 -o "$out/nc4.nc" "$work/seed.cdl"
nccopy -k nc4 -d 1 -s "$out/nc4.nc" "$out/nc4-deflate.nc"
sed -e '/^group: g {/,/^}$/d' -e 's/int64 big(n) ;/int big(n) ;/' "$work/seed.cdl" > "$work/classic.cdl"
ncgen -k classic -o "$out/classic.nc" "$work/classic.cdl"
