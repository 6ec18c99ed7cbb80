! Without stat, a failure stops the program with the message (CTest
! expects the failure and the message).
program test_fortran_stop
  use colfile
  implicit none
  character(len=4096) :: dir
  type(colfile_file) :: f
  call get_command_argument(1, dir)
  call colfile_open(f, trim(dir) // '/no-such-file')
  print '(a)', 'not reached'
end program test_fortran_stop
