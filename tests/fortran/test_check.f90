! colfile_test_check - the check of the serial Fortran tests: a condition
! that fails stops the program, naming what was checked.
module colfile_test_check
  implicit none
  private
  public :: check

contains

  subroutine check(cond, what)
    logical, intent(in) :: cond
    character(len=*), intent(in) :: what
    if (.not. cond) then
      print '(a)', 'FAILED: ' // what
      error stop 1
    end if
  end subroutine check

end module colfile_test_check
