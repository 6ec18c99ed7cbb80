! colfile_test_mpi - what the Fortran MPI tests share: MPI through bind(c)
! (mpi_support.c: the MPICH from PyPI has no Fortran bindings), the start
! of a test (MPI up, the world communicator, this rank, the ranks), the
! check that aborts every rank, naming this one, when a condition fails,
! and the uneven rows each rank writes.
module colfile_test_mpi
  use, intrinsic :: iso_c_binding
  implicit none
  private
  public :: test_mpi_start, mpi_finalize_, barrier, check, rows_of, total_rows

  interface
    subroutine mpi_init_() bind(c, name='colfile_test_mpi_init')
    end subroutine mpi_init_
    subroutine mpi_finalize_() bind(c, name='colfile_test_mpi_finalize')
    end subroutine mpi_finalize_
    integer(c_int) function comm_world() bind(c, name='colfile_test_mpi_comm_world')
      import :: c_int
    end function comm_world
    integer(c_int) function comm_rank(comm) bind(c, name='colfile_test_mpi_rank')
      import :: c_int
      integer(c_int), value :: comm
    end function comm_rank
    integer(c_int) function comm_size(comm) bind(c, name='colfile_test_mpi_size')
      import :: c_int
      integer(c_int), value :: comm
    end function comm_size
    subroutine barrier(comm) bind(c, name='colfile_test_mpi_barrier')
      import :: c_int
      integer(c_int), value :: comm
    end subroutine barrier
    subroutine mpi_abort_(code) bind(c, name='colfile_test_mpi_abort')
      import :: c_int
      integer(c_int), value :: code
    end subroutine mpi_abort_
  end interface

  integer :: my_rank = -1, my_nranks = 0
  ! rows_of(r) is rows_step * r + 3, or none for rank 1.
  integer(c_int64_t), public :: rows_step = 2

contains

  ! MPI_Init; comm gets MPI_COMM_WORLD (a Fortran handle), rank and nranks
  ! this rank and the number of ranks.
  subroutine test_mpi_start(comm, rank, nranks)
    integer, intent(out) :: comm, rank, nranks
    call mpi_init_()
    comm = comm_world()
    rank = comm_rank(comm)
    nranks = comm_size(comm)
    my_rank = rank
    my_nranks = nranks
  end subroutine test_mpi_start

  ! Rows of rank r: uneven, and none on rank 1.
  integer(c_int64_t) function rows_of(r)
    integer, intent(in) :: r
    rows_of = rows_step * r + 3
    if (r == 1) rows_of = 0
  end function rows_of

  ! Rows of every rank.
  integer(c_int64_t) function total_rows()
    integer :: r
    total_rows = sum([(rows_of(r), r = 0, my_nranks - 1)])
  end function total_rows

  subroutine check(cond, what)
    logical, intent(in) :: cond
    character(len=*), intent(in) :: what
    if (.not. cond) then
      print '(a, i0, a)', 'FAILED on rank ', my_rank, ': ' // what
      call mpi_abort_(1_c_int)
    end if
  end subroutine check

end module colfile_test_mpi
