! Streams from Fortran under mpiexec: one task per rank, each appending a
! different number of rows (rank 1 none) in several pieces with a flush
! between, of an f8 x 3 stream, an i8 stream appended from integer(4)
! arrays (converted) and an S6 stream; read back per task and as the
! global view on every rank, then reopened and appended to.
!   test_fortran_stream_mpi write DIR   writes and checks (CTest), leaves
!                                       the File for tests/python/test_fortran_stream.py
!   test_fortran_stream_mpi read DIR    checks a File Python wrote (streams
!                                       pos, id, tag of 3 tasks, the rows below)
! Row k of task t: pos = t*1000 + k + j/4 (j = 1..3), id = t*100000 + k,
! tag = 't<t>r<k>'.
program test_fortran_stream_mpi
  use, intrinsic :: iso_c_binding
  use colfile
  use colfile_test_stream_rows
  use colfile_mpi
  use colfile_test_mpi, only: test_mpi_start, mpi_finalize_, check
  implicit none
  character(len=4096) :: dir
  character(len=8) :: mode
  integer :: comm, rank, nranks
  type(colfile_file) :: f
  ! Which rows the File holds (rows_of).
  integer, parameter :: FIRST = 1, TOTAL = 2, PYTHON = 3

  call test_mpi_start(comm, rank, nranks)
  call get_command_argument(1, mode)
  call get_command_argument(2, dir)
  if (mode == 'write') then
    call colfile_mpi_open(f, comm, dir, COLFILE_OPEN_WRITE + COLFILE_OPEN_CREATE + COLFILE_OPEN_TRUNCATE)
    call write_streams()
    call read_all(nranks, FIRST)
    call reopen_and_append()
    call read_all(nranks, TOTAL)
    call refused()
    call colfile_close(f)
  else
    call colfile_open(f, dir)
    call read_all(3, PYTHON)
    call colfile_close(f)
  end if
  if (rank == 0) print '(a)', 'test_fortran_stream_mpi: ok'
  call mpi_finalize_()

contains

  ! Rows task t appends first: uneven, none on task 1.
  integer(c_int64_t) function rows_first(t)
    integer(c_int64_t), intent(in) :: t
    rows_first = 3 * t + 2
    if (t == 1) rows_first = 0
  end function rows_first

  ! After the reopen: t + 1 more rows each.
  integer(c_int64_t) function rows_total(t)
    integer(c_int64_t), intent(in) :: t
    rows_total = rows_first(t) + t + 1
  end function rows_total

  ! Rows of task t: after the first writes, after the reopen, or what
  ! tests/python/test_fortran_stream.py writes (4, 0, 7 rows).
  integer(c_int64_t) function rows_of(which, t)
    integer, intent(in) :: which
    integer(c_int64_t), intent(in) :: t
    integer(c_int64_t), parameter :: n(0:2) = [4_c_int64_t, 0_c_int64_t, 7_c_int64_t]
    select case (which)
    case (FIRST)
      rows_of = rows_first(t)
    case (TOTAL)
      rows_of = rows_total(t)
    case default
      rows_of = n(t)
    end select
  end function rows_of

  subroutine make_rows(t, k0, n, pos, id, tag)
    integer(c_int64_t), intent(in) :: t, k0, n
    real(c_double), allocatable, intent(out) :: pos(:, :)
    integer(c_int32_t), allocatable, intent(out) :: id(:)
    character(len=6), allocatable, intent(out) :: tag(:)
    integer(c_int64_t) :: k
    call make_pos_tag(t, k0, n, pos, tag)
    id = [(int(t * 100000 + k, c_int32_t), k = k0, k0 + n - 1)]
  end subroutine make_rows

  ! Append rows k0 .. k0+n-1 of this rank's task, in two pieces.
  subroutine append_rows(sp, si, st, k0, n)
    type(colfile_stream), intent(inout) :: sp, si, st
    integer(c_int64_t), intent(in) :: k0, n
    real(c_double), allocatable :: pos(:, :)
    integer(c_int32_t), allocatable :: id(:)
    character(len=6), allocatable :: tag(:)
    integer(c_int64_t) :: h
    call make_rows(int(rank, c_int64_t), k0, n, pos, id, tag)
    h = n / 2
    call colfile_stream_append(sp, pos(:, 1:h))
    call colfile_stream_append(sp, pos(:, h + 1:))
    call colfile_stream_append(si, id(1:h))
    call colfile_stream_append(si, id(h + 1:))
    call colfile_stream_append(st, tag)
  end subroutine append_rows

  subroutine write_streams()
    type(colfile_stream) :: sp, si, st
    integer(c_int64_t) :: n
    ! Small chunks, so that the tasks' rows span several.
    call colfile_mpi_stream_create(sp, f, comm, 'pos', 'f8', nmemb=3_c_int64_t, chunk=4096_c_int64_t)
    call colfile_mpi_stream_create(si, f, comm, 'id', 'i8')
    call colfile_mpi_stream_create(st, f, comm, 'tag', 'S6', files=1_c_int64_t)
    n = rows_first(int(rank, c_int64_t))
    call append_rows(sp, si, st, 0_c_int64_t, n / 2)
    call colfile_mpi_stream_flush(sp)
    call append_rows(sp, si, st, n / 2, n - n / 2)
    call check(colfile_stream_rows(sp) == n .and. colfile_stream_rows(st) == n, 'rows appended')
    call colfile_mpi_stream_close(sp)
    call colfile_mpi_stream_close(si)
    call colfile_mpi_stream_close(st)
    call check(.not. c_associated(sp%mpi), 'closed')
  end subroutine write_streams

  subroutine reopen_and_append()
    type(colfile_stream) :: sp, si, st
    integer(c_int64_t) :: t
    t = int(rank, c_int64_t)
    call colfile_mpi_stream_reopen(sp, f, comm, 'pos')
    call colfile_mpi_stream_reopen(si, f, comm, 'id')
    call colfile_mpi_stream_reopen(st, f, comm, 'tag')
    call check(sp%nmemb == 3 .and. trim(sp%dtype) == '<f8' .and. trim(st%dtype) == '<S6', &
      'reopened row type: ' // trim(sp%dtype) // ' ' // trim(st%dtype))
    call append_rows(sp, si, st, rows_first(t), t + 1)
    call colfile_mpi_stream_close(sp)
    call colfile_mpi_stream_close(si)
    call colfile_mpi_stream_close(st)
  end subroutine reopen_and_append

  ! Every rank reads every task's rows, then the global view.
  subroutine read_all(ntasks, which)
    integer, intent(in) :: ntasks, which
    type(colfile_stream_reader) :: rp, ri, rt
    real(c_double), allocatable :: pos(:, :), want_pos(:, :), gpos(:, :)
    integer(c_int32_t), allocatable :: want_id(:)
    integer(c_int64_t), allocatable :: id(:), gid(:)
    character(len=6), allocatable :: tag(:), want_tag(:), gtag(:)
    character(len=:), allocatable :: names(:)
    real(c_float), allocatable :: gpos4(:, :)
    character(len=8), allocatable :: gtag8(:)
    integer(c_int64_t) :: t, n, first, total
    call colfile_stream_list(f, names)
    call check(size(names) == 3, 'three streams listed')
    call check(names(1) == 'id' .and. names(2) == 'pos' .and. names(3) == 'tag', 'streams sorted')
    call colfile_stream_open(rp, f, 'pos')
    call colfile_stream_open(ri, f, 'id')
    call colfile_stream_open(rt, f, 'tag')
    call check(colfile_stream_ntasks(rp) == ntasks, 'one task per rank')
    call check(colfile_stream_nmemb(rp) == 3 .and. colfile_stream_dtype(ri) == '<i8', 'row type')
    total = 0
    do t = 0, ntasks - 1
      total = total + rows_of(which, t)
    end do
    call check(colfile_stream_size(rp) == total .and. colfile_stream_size(rt) == total, 'global size')
    allocate(gpos(3, total), gid(total), gtag(total))
    call colfile_stream_read(rp, 0_c_int64_t, gpos)
    call colfile_stream_read(ri, 0_c_int64_t, gid)
    call colfile_stream_read(rt, 0_c_int64_t, gtag)
    ! converted as they are read: f8 to real(4), S6 to character(len=8)
    allocate(gpos4(3, total), gtag8(total))
    call colfile_stream_read(rp, 0_c_int64_t, gpos4)
    call colfile_stream_read(rt, 0_c_int64_t, gtag8)
    call check(all(gpos4 == real(gpos, c_float)), 'pos read as real(4)')
    call check(all(gtag8 == gtag), 'tag read as character(len=8)')
    first = 0
    do t = 0, ntasks - 1
      n = rows_of(which, t)
      call check(colfile_stream_task_size(rp, t) == n, 'task size')
      call check(colfile_stream_task_start(ri, t) == first, 'task start')
      call make_rows(t, 0_c_int64_t, n, want_pos, want_id, want_tag)
      allocate(pos(3, n), id(n), tag(n))
      call colfile_stream_read_task(rp, t, 0_c_int64_t, pos)
      call colfile_stream_read_task(ri, t, 0_c_int64_t, id)
      call colfile_stream_read_task(rt, t, 0_c_int64_t, tag)
      call check(all(pos == want_pos), 'pos rows of a task')
      call check(all(id == want_id), 'id rows of a task')
      call check(all(tag == want_tag), 'tag rows of a task')
      call check(all(gpos(:, first + 1:first + n) == want_pos), 'pos rows in the global view')
      call check(all(gid(first + 1:first + n) == want_id), 'id rows in the global view')
      call check(all(gtag(first + 1:first + n) == want_tag), 'tag rows in the global view')
      deallocate(pos, id, tag)
      first = first + n
    end do
    call colfile_stream_close(rp)
    call colfile_stream_close(ri)
    call colfile_stream_close(rt)
  end subroutine read_all

  ! Arrays that do not fit, and reads beyond a task's rows, are errors.
  subroutine refused()
    type(colfile_stream) :: sp
    type(colfile_stream_reader) :: rp
    real(c_double) :: two(2, 1), three(3, 1), one(1)
    character(len=512) :: msg
    integer :: st
    call colfile_mpi_stream_reopen(sp, f, comm, 'pos')
    two = 0
    call colfile_stream_append(sp, two, stat=st, errmsg=msg)
    call check(st == COLFILE_EARG .and. index(msg, 'first dimension is 2') > 0, 'wrong shape: ' // trim(msg))
    call colfile_mpi_stream_discard(sp)
    call colfile_stream_open(rp, f, 'pos')
    call colfile_stream_read(rp, 0_c_int64_t, one, stat=st, errmsg=msg)
    call check(st == COLFILE_EARG, 'a partial row: ' // trim(msg))
    call colfile_stream_read_task(rp, 1_c_int64_t, colfile_stream_task_size(rp, 1_c_int64_t), three, stat=st, &
      errmsg=msg)
    call check(st == COLFILE_ERANGE, 'beyond the task''s rows: ' // trim(msg))
    call colfile_stream_close(rp)
    call colfile_stream_open(rp, f, 'nothing', stat=st)
    call check(st == COLFILE_ENOENT, 'no such stream')
  end subroutine refused

end program test_fortran_stream_mpi
