! Read one record of a data.bin the way legacy Fortran does: direct access,
! unformatted, one record per time step.
! Usage: read_record FILE NX NY REC I J
! Prints the value at (I, J) of record REC (1-based, Fortran order: I runs
! along the last, fastest C dimension) as its IEEE bit pattern and as a float.
program read_record
  implicit none
  character(len=4096) :: path, arg
  integer :: nx, ny, rec, i, j, bits
  real(4), allocatable :: field(:, :)
  call get_command_argument(1, path)
  call get_command_argument(2, arg); read (arg, *) nx
  call get_command_argument(3, arg); read (arg, *) ny
  call get_command_argument(4, arg); read (arg, *) rec
  call get_command_argument(5, arg); read (arg, *) i
  call get_command_argument(6, arg); read (arg, *) j
  allocate (field(nx, ny))
  ! gfortran counts recl in bytes.
  open (10, file=trim(path), access='direct', form='unformatted', recl=4*nx*ny, &
        status='old', action='read')
  read (10, rec=rec) field
  close (10)
  bits = transfer(field(i, j), bits)
  print '(I0, 1X, ES16.8)', bits, field(i, j)
end program read_record
