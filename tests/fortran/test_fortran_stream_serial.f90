! A stream written serially from Fortran for 3 tasks (4, 0, 7 rows,
! appended in turns with a flush between), reopened to give task 1 two
! rows; read back per task and as the global view.  Argument: a scratch
! directory, left for tests/python/test_fortran_stream.py.  Row k of task
! t: pos = t*1000 + k + j/4 (j = 1..3), id = t*100000 + k, tag = 't<t>r<k>'
! (as test_fortran_stream_mpi.f90).
program test_fortran_stream_serial
  use, intrinsic :: iso_c_binding
  use colfile
  use colfile_test_stream_rows
  use colfile_test_check
  implicit none
  character(len=4096) :: dir
  type(colfile_file) :: f
  integer(c_int64_t), parameter :: first(0:2) = [4_c_int64_t, 0_c_int64_t, 7_c_int64_t]
  integer(c_int64_t), parameter :: final(0:2) = [4_c_int64_t, 2_c_int64_t, 7_c_int64_t]

  call get_command_argument(1, dir)
  call colfile_open(f, dir, COLFILE_OPEN_WRITE + COLFILE_OPEN_CREATE + COLFILE_OPEN_TRUNCATE)
  call write_first()
  call read_back(first)
  call reopen_task1()
  call read_back(final)
  call refused()
  call colfile_close(f)
  print '(a)', 'test_fortran_stream_serial: ok'

contains

  subroutine make_rows(t, k0, n, pos, id, tag)
    integer(c_int64_t), intent(in) :: t, k0, n
    real(c_double), allocatable, intent(out) :: pos(:, :)
    integer(c_int64_t), allocatable, intent(out) :: id(:)
    character(len=6), allocatable, intent(out) :: tag(:)
    integer(c_int64_t) :: k
    call make_pos_tag(t, k0, n, pos, tag)
    id = [(t * 100000 + k, k = k0, k0 + n - 1)]
  end subroutine make_rows

  subroutine append(sp, si, st, t, k0, n)
    type(colfile_stream), intent(inout) :: sp, si, st
    integer(c_int64_t), intent(in) :: t, k0, n
    real(c_double), allocatable :: pos(:, :)
    integer(c_int64_t), allocatable :: id(:)
    character(len=6), allocatable :: tag(:)
    call make_rows(t, k0, n, pos, id, tag)
    call colfile_stream_append(sp, pos)
    call colfile_stream_append(si, id)
    call colfile_stream_append(st, tag)
  end subroutine append

  subroutine write_first()
    type(colfile_stream_writer) :: wp, wi, wt
    type(colfile_stream) :: sp(0:2), si(0:2), st(0:2)
    integer(c_int64_t) :: t
    call colfile_stream_create(wp, f, 'pos', 'f8', nmemb=3_c_int64_t, tasks=3_c_int64_t, chunk=4096_c_int64_t)
    call colfile_stream_create(wi, f, 'id', 'i8', tasks=3_c_int64_t, files=2_c_int64_t)
    call colfile_stream_create(wt, f, 'tag', 'S6', tasks=3_c_int64_t)
    do t = 0, 2
      call colfile_stream_task(sp(t), wp, t)
      call colfile_stream_task(si(t), wi, t)
      call colfile_stream_task(st(t), wt, t)
    end do
    ! in turns: the first half of every task, a checkpoint, the rest
    do t = 0, 2
      call append(sp(t), si(t), st(t), t, 0_c_int64_t, first(t) / 2)
    end do
    call colfile_stream_flush(wp)
    call colfile_stream_flush(wi)
    call colfile_stream_flush(wt)
    do t = 2, 0, -1
      call append(sp(t), si(t), st(t), t, first(t) / 2, first(t) - first(t) / 2)
    end do
    call check(colfile_stream_rows(sp(2)) == 7 .and. colfile_stream_rows(st(1)) == 0, 'rows appended')
    call colfile_stream_close(wp)
    call colfile_stream_close(wi)
    call colfile_stream_close(wt)
  end subroutine write_first

  subroutine reopen_task1()
    type(colfile_stream_writer) :: wp, wi, wt
    type(colfile_stream) :: sp, si, st
    call colfile_stream_reopen(wp, f, 'pos')
    call colfile_stream_reopen(wi, f, 'id')
    call colfile_stream_reopen(wt, f, 'tag')
    call check(wp%ntasks == 3 .and. wp%nmemb == 3 .and. trim(wi%dtype) == '<i8', 'reopened layout')
    call colfile_stream_task(sp, wp, 1_c_int64_t)
    call colfile_stream_task(si, wi, 1_c_int64_t)
    call colfile_stream_task(st, wt, 1_c_int64_t)
    call append(sp, si, st, 1_c_int64_t, 0_c_int64_t, 2_c_int64_t)
    call colfile_stream_close(wp)
    call colfile_stream_close(wi)
    call colfile_stream_close(wt)
  end subroutine reopen_task1

  subroutine read_back(counts)
    integer(c_int64_t), intent(in) :: counts(0:2)
    type(colfile_stream_reader) :: rp, ri, rt
    real(c_double), allocatable :: pos(:, :), want_pos(:, :), gpos(:, :)
    integer(c_int64_t), allocatable :: id(:), want_id(:), gid(:)
    character(len=6), allocatable :: tag(:), want_tag(:), gtag(:)
    integer(c_int64_t) :: t, n, at
    call colfile_stream_open(rp, f, 'pos')
    call colfile_stream_open(ri, f, 'id')
    call colfile_stream_open(rt, f, 'tag')
    call check(colfile_stream_size(rp) == sum(counts) .and. colfile_stream_ntasks(ri) == 3, 'sizes')
    allocate(gpos(3, sum(counts)), gid(sum(counts)), gtag(sum(counts)))
    call colfile_stream_read(rp, 0_c_int64_t, gpos)
    call colfile_stream_read(ri, 0_c_int64_t, gid)
    call colfile_stream_read(rt, 0_c_int64_t, gtag)
    at = 0
    do t = 0, 2
      n = counts(t)
      call check(colfile_stream_task_size(rt, t) == n .and. colfile_stream_task_start(rp, t) == at, 'task rows')
      call make_rows(t, 0_c_int64_t, n, want_pos, want_id, want_tag)
      allocate(pos(3, n), id(n), tag(n))
      call colfile_stream_read_task(rp, t, 0_c_int64_t, pos)
      call colfile_stream_read_task(ri, t, 0_c_int64_t, id)
      call colfile_stream_read_task(rt, t, 0_c_int64_t, tag)
      call check(all(pos == want_pos) .and. all(id == want_id) .and. all(tag == want_tag), 'rows of a task')
      call check(all(gpos(:, at + 1:at + n) == want_pos) .and. all(gid(at + 1:at + n) == want_id) .and. &
        all(gtag(at + 1:at + n) == want_tag), 'rows in the global view')
      deallocate(pos, id, tag)
      at = at + n
    end do
    call colfile_stream_close(rp)
    call colfile_stream_close(ri)
    call colfile_stream_close(rt)
  end subroutine read_back

  subroutine refused()
    type(colfile_stream_writer) :: w
    type(colfile_stream) :: s, s2
    type(colfile_stream_reader) :: r
    integer :: st
    character(len=512) :: msg
    call colfile_stream_reopen(w, f, 'pos')
    call colfile_stream_task(s, w, 3_c_int64_t, stat=st, errmsg=msg)
    call check(st == COLFILE_EARG, 'no task 3: ' // trim(msg))
    call colfile_stream_task(s, w, 0_c_int64_t)
    call colfile_stream_task(s2, w, 0_c_int64_t, stat=st, errmsg=msg)
    call check(st == COLFILE_EBUSY, 'a task opened twice: ' // trim(msg))
    ! a discarded writer leaves the stream at its last commit
    call colfile_stream_append(s, [1.0d0, 2.0d0, 3.0d0])
    call colfile_stream_discard(w)
    call colfile_stream_open(r, f, 'pos')
    call check(colfile_stream_task_size(r, 0_c_int64_t) == 4, 'nothing committed by a discarded writer')
    call colfile_stream_close(r)
    call colfile_stream_create(w, f, 'bad', 'q9', stat=st, errmsg=msg)
    call check(st == COLFILE_EDTYPE, 'a bad dtype: ' // trim(msg))
  end subroutine refused

end program test_fortran_stream_serial
