! A model that updates a field in place on disk: Fortran stream I/O opened
! readwrite on an existing flat binary file (an nzfs data.bin), two int32
! values written at byte 5 (elements 1 and 2, counting from 0), nothing
! else touched. Used by scripts/check_writable.py.
program patch_stream
  use iso_fortran_env, only: int32
  implicit none
  character(len=4096) :: path
  integer :: u
  integer(int32) :: v(2)
  call get_command_argument(1, path)
  v = [int(-5, int32), int(77, int32)]
  open(newunit=u, file=trim(path), access='stream', form='unformatted', &
       action='readwrite', status='old')
  write(u, pos=5) v
  close(u)
end program patch_stream
