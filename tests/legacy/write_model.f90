! A model's output, as a Fortran program writes it: netCDF-C called
! through ISO_C_BINDING (netCDF-Fortran's nf90_* are thin wrappers of
! these), a CDF-1 file with two dimensions, one float field, a record
! variable and text attributes; with `netcdf4` after the path, the same
! as netCDF-4 (NC_NETCDF4, as nf90_create(..., NF90_NETCDF4, ...) makes).
! Usage: write_model PATH [netcdf4]
program write_model
  use iso_c_binding
  implicit none
  interface
    integer(c_int) function nc_create(path, cmode, ncidp) bind(c, name="nc_create")
      import :: c_int, c_char
      character(kind=c_char), dimension(*) :: path
      integer(c_int), value :: cmode
      integer(c_int) :: ncidp
    end function
    integer(c_int) function nc_def_dim(ncid, name, len, idp) bind(c, name="nc_def_dim")
      import :: c_int, c_char, c_size_t
      integer(c_int), value :: ncid
      character(kind=c_char), dimension(*) :: name
      integer(c_size_t), value :: len
      integer(c_int) :: idp
    end function
    integer(c_int) function nc_def_var(ncid, name, xtype, ndims, dimidsp, varidp) bind(c, name="nc_def_var")
      import :: c_int, c_char
      integer(c_int), value :: ncid, xtype, ndims
      character(kind=c_char), dimension(*) :: name
      integer(c_int), dimension(*) :: dimidsp
      integer(c_int) :: varidp
    end function
    integer(c_int) function nc_put_att_text(ncid, varid, name, len, op) bind(c, name="nc_put_att_text")
      import :: c_int, c_char, c_size_t
      integer(c_int), value :: ncid, varid
      character(kind=c_char), dimension(*) :: name, op
      integer(c_size_t), value :: len
    end function
    integer(c_int) function nc_enddef(ncid) bind(c, name="nc_enddef")
      import :: c_int
      integer(c_int), value :: ncid
    end function
    integer(c_int) function nc_put_var_float(ncid, varid, op) bind(c, name="nc_put_var_float")
      import :: c_int, c_float
      integer(c_int), value :: ncid, varid
      real(c_float), dimension(*) :: op
    end function
    integer(c_int) function nc_put_vara_double(ncid, varid, startp, countp, op) bind(c, name="nc_put_vara_double")
      import :: c_int, c_size_t, c_double
      integer(c_int), value :: ncid, varid
      integer(c_size_t), dimension(*) :: startp, countp
      real(c_double), dimension(*) :: op
    end function
    integer(c_int) function nc_close(ncid) bind(c, name="nc_close")
      import :: c_int
      integer(c_int), value :: ncid
    end function
  end interface
  integer(c_int), parameter :: NC_CLOBBER = 0, NC_NETCDF4 = 4096, NC_FLOAT = 5, NC_DOUBLE = 6, NC_GLOBAL = -1
  character(len=4096) :: path
  character(len=16) :: kind
  integer(c_int) :: cmode
  integer(c_int) :: ncid, xdim, ydim, tdim, field, time, dims(2)
  real(c_float) :: values(4, 3)
  real(c_double) :: t(1)
  integer(c_size_t) :: start(1), count(1)
  integer :: i, j, step

  call get_command_argument(1, path)
  call get_command_argument(2, kind)
  cmode = NC_CLOBBER
  if (trim(kind) == "netcdf4") cmode = NC_CLOBBER + NC_NETCDF4
  call check(nc_create(trim(path)//c_null_char, cmode, ncid))
  call check(nc_def_dim(ncid, "x"//c_null_char, 4_c_size_t, xdim))
  call check(nc_def_dim(ncid, "y"//c_null_char, 3_c_size_t, ydim))
  call check(nc_def_dim(ncid, "time"//c_null_char, 0_c_size_t, tdim))
  ! C order: the slowest dimension first, so field(x, y) in Fortran is
  ! field(y, x) in the file.
  dims = [ydim, xdim]
  call check(nc_def_var(ncid, "field"//c_null_char, NC_FLOAT, 2, dims, field))
  call check(nc_def_var(ncid, "time"//c_null_char, NC_DOUBLE, 1, [tdim], time))
  call check(nc_put_att_text(ncid, field, "units"//c_null_char, 1_c_size_t, "m"))
  call check(nc_put_att_text(ncid, time, "units"//c_null_char, 19_c_size_t, "hours since 2026-01"))
  call check(nc_put_att_text(ncid, NC_GLOBAL, "title"//c_null_char, 13_c_size_t, "fortran model"))
  call check(nc_enddef(ncid))
  do j = 1, 3
    do i = 1, 4
      values(i, j) = real(10 * j + i, c_float) / 4.0
    end do
  end do
  call check(nc_put_var_float(ncid, field, values))
  do step = 1, 5
    start(1) = step - 1
    count(1) = 1
    t(1) = 6.0d0 * step
    call check(nc_put_vara_double(ncid, time, start, count, t))
  end do
  call check(nc_close(ncid))

contains

  subroutine check(status)
    integer(c_int), intent(in) :: status
    if (status /= 0) then
      print *, "netCDF error", status
      stop 1
    end if
  end subroutine
end program
