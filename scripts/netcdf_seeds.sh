#!/usr/bin/env bash
# The fuzz seeds of the netcdf target (tests/fuzz/seeds/netcdf/): one
# netCDF-4 file with a nested group, an unlimited dimension, text, int64
# and a fill value, written by netCDF-C's ncgen; the same deflated and
# shuffled by nccopy; one of netCDF-4's user-defined types and strings (an
# enum, a padded compound, one nested in another, a string variable); and
# a classic file without what CDF-1 lacks.
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
cat > "$work/types.cdl" <<'CDL'
netcdf types {
types:
  ubyte enum cloud_t {Clear = 0, Cumulonimbus = 1, Missing = 255} ;
  compound obs_t {
    double lat ;
    float temp ;
    short flags ;
    int64 id ;
  } ;
  compound nest_t {
    obs_t o ;
    int64 n ;
  } ;
dimensions:
  x = 2 ;
variables:
  cloud_t cloud(x) ;
    cloud:_FillValue = Missing ;
  obs_t obs(x) ;
  nest_t nest(x) ;
  string name(x) ;
data:
  cloud = Clear, _ ;
  obs = {1.5, 2.25, 3, 7}, {4, 5, 6, 9} ;
  nest = {{1, 2, 3, 4}, 5}, {{6, 7, 8, 9}, 10} ;
  name = "a", "two\nlines" ;
}
CDL
ncgen -k nc4 -o "$out/nc4-types.nc" "$work/types.cdl"
