! colfile_test_stream_rows - the rows the Fortran stream tests write and
! check (serial and MPI, and tests/python/test_fortran_stream.py): row k
! of task t has pos = t*1000 + k + j/4 (j = 1..3), tag = 't<t>r<k>' and
! id = t*100000 + k (in the kind each test appends).
module colfile_test_stream_rows
  use, intrinsic :: iso_c_binding
  implicit none
  private
  public :: make_pos_tag

contains

  ! pos and tag of rows k0 .. k0+n-1 of task t.
  subroutine make_pos_tag(t, k0, n, pos, tag)
    integer(c_int64_t), intent(in) :: t, k0, n
    real(c_double), allocatable, intent(out) :: pos(:, :)
    character(len=6), allocatable, intent(out) :: tag(:)
    integer(c_int64_t) :: k
    integer :: j
    allocate(pos(3, n), tag(n))
    do k = k0, k0 + n - 1
      do j = 1, 3
        pos(j, k - k0 + 1) = t * 1000.0d0 + k + j / 4.0d0
      end do
      write(tag(k - k0 + 1), '(a, i0, a, i0)') 't', t, 'r', k
    end do
  end subroutine make_pos_tag

end module colfile_test_stream_rows
