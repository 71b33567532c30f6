/* Read one value of a variable of a netCDF file with netCDF-C, the way a
 * legacy C program does: nc_open, nc_inq_varid, nc_get_vara_float.
 * Usage: nc_read FILE VAR I0 I1 I2
 * Prints the float's IEEE bit pattern and the float. */
#include <netcdf.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <stdint.h>

static void check(int status, const char *what) {
    if (status != NC_NOERR) {
        fprintf(stderr, "nc_read: %s: %s\n", what, nc_strerror(status));
        exit(1);
    }
}

int main(int argc, char **argv) {
    if (argc != 6) {
        fprintf(stderr, "usage: nc_read FILE VAR I0 I1 I2\n");
        return 2;
    }
    int ncid, varid, ndims;
    check(nc_open(argv[1], NC_NOWRITE, &ncid), "nc_open");
    check(nc_inq_varid(ncid, argv[2], &varid), "nc_inq_varid");
    check(nc_inq_varndims(ncid, varid, &ndims), "nc_inq_varndims");
    if (ndims != 3) {
        fprintf(stderr, "nc_read: %s has %d dimensions, not 3\n", argv[2], ndims);
        return 1;
    }
    size_t start[3], count[3] = {1, 1, 1};
    for (int d = 0; d < 3; d++) start[d] = strtoul(argv[3 + d], NULL, 10);
    float value;
    check(nc_get_vara_float(ncid, varid, start, count, &value), "nc_get_vara_float");
    check(nc_close(ncid), "nc_close");
    int32_t bits;
    memcpy(&bits, &value, sizeof bits);
    printf("%d %.8e\n", bits, value);
    return 0;
}
