! colfile_test_mpi - what the Fortran MPI tests share: MPI through bind(c)
! (mpi_support.c: the MPICH from PyPI has no Fortran bindings), the start
! of a test (MPI up, the world communicator, this rank, the ranks) and the
! check that aborts every rank, naming this one, when a condition fails.
module colfile_test_mpi
  use, intrinsic :: iso_c_binding
  implicit none
  private
  public :: test_mpi_start, mpi_finalize_, barrier, check

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

  integer :: my_rank = -1

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
  end subroutine test_mpi_start

  subroutine check(cond, what)
    logical, intent(in) :: cond
    character(len=*), intent(in) :: what
    if (.not. cond) then
      print '(a, i0, a)', 'FAILED on rank ', my_rank, ': ' // what
      call mpi_abort_(1_c_int)
    end if
  end subroutine check

end module colfile_test_mpi
