! colfile_streams - task-local streams (include/colfile_stream.h,
! docs/streams.md) for Fortran: appending arrays to a task's stream
! (independent, no communication), a serial writer of several tasks (under
! MPI the stream is created, flushed and closed collectively by module
! colfile_mpi, one task per rank), and reading one task's rows or the
! global view.  Arrays are converted between their Fortran type and the
! stream's dtype as column reads and writes convert.  Module colfile
! passes on everything here; programs use colfile.
module colfile_streams
  use, intrinsic :: iso_c_binding
  use colfile_c
  implicit none
  private

  public :: colfile_stream_create, colfile_stream_reopen, colfile_stream_task, colfile_stream_flush, &
    colfile_stream_discard
  public :: colfile_stream_open, colfile_stream_close, colfile_stream_list, colfile_stream_size, &
    colfile_stream_ntasks, colfile_stream_task_size, colfile_stream_task_start, colfile_stream_dtype, &
    colfile_stream_nmemb, colfile_stream_rows, colfile_stream_is_open
  public :: colfile_stream_append, colfile_stream_read, colfile_stream_read_task

  ! A task of a stream being written (colfile_stream_task of a serial
  ! writer, or this rank's from colfile_mpi_stream_create or
  ! colfile_mpi_stream_reopen).
  type, public :: colfile_stream
    type(c_ptr) :: mpi = c_null_ptr   ! the collective stream (cf_mpi_stream)
    type(c_ptr) :: task = c_null_ptr  ! this rank's task (cf_stream_task)
    character(len=16) :: dtype = ''   ! normalised, or "raw"
    integer(c_int64_t) :: nmemb = 0
    character(len=:), allocatable :: name
  end type colfile_stream

  ! A stream written serially (colfile_stream_create or
  ! colfile_stream_reopen): its tasks are written through colfile_stream_task.
  type, public :: colfile_stream_writer
    type(c_ptr) :: ptr = c_null_ptr
    character(len=16) :: dtype = ''
    integer(c_int64_t) :: nmemb = 0, ntasks = 0
    character(len=:), allocatable :: name
  end type colfile_stream_writer

  ! A committed stream opened for reading.
  type, public :: colfile_stream_reader
    type(c_ptr) :: ptr = c_null_ptr
    character(len=16) :: dtype = ''
    integer(c_int64_t) :: nmemb = 0, ntasks = 0
    character(len=:), allocatable :: name
  end type colfile_stream_reader

  ! include/colfile_stream.h: cf_stream_layout.
  type, bind(c), public :: cf_stream_layout_t
    integer(c_int64_t) :: tasks = 0, files = 0, chunk = 0, align = 0
  end type cf_stream_layout_t

  public :: c_dtype_string

  interface colfile_stream_close
    module procedure reader_close, writer_close
  end interface colfile_stream_close

  include 'colfile_stream_generic.inc'

  include 'colfile_streams_bind.inc'

contains

  ! A dtype of CF_DTYPE_MAX bytes from C as a Fortran string.
  function c_dtype_string(chars) result(r)
    character(kind=c_char), intent(in) :: chars(16)
    character(len=16) :: r
    integer :: i
    r = ''
    do i = 1, 16
      if (chars(i) == c_null_char) exit
      r(i:i) = chars(i)
    end do
  end function c_dtype_string

  ! ------------------------------------------------------------ Writing

  ! Create stream `name` in File f (open for writing) for `tasks` tasks
  ! (default 1): rows of `dtype` with nmemb elements (default 1), or "raw"
  ! bytes; files (default 1), chunk and align (bytes; default 1 MiB and the
  ! File's block size) lay it out.  Nothing is visible at `name` until the
  ! first flush, which replaces a stream there.
  subroutine colfile_stream_create(w, f, name, dtype, nmemb, tasks, files, chunk, align, stat, errmsg)
    type(colfile_stream_writer), intent(out) :: w
    type(colfile_file), intent(in) :: f
    character(len=*), intent(in) :: name, dtype
    integer(c_int64_t), intent(in), optional :: nmemb, tasks, files, chunk, align
    integer, intent(out), optional :: stat
    character(len=*), intent(inout), optional :: errmsg
    type(cf_error_t) :: err
    type(cf_stream_layout_t) :: layout
    integer(c_int) :: rc
    rc = cf_stream_layout_choose(layout, f%ptr, cf_opt(tasks, 1_c_int64_t), cf_opt(files, 0_c_int64_t), &
      cf_opt(chunk, 0_c_int64_t), cf_opt(align, 0_c_int64_t), err)
    if (rc == 0) rc = cf_stream_create(w%ptr, f%ptr, f_c_string(name), f_c_string(dtype), cf_opt(nmemb, 1_c_int64_t), &
      layout, err)
    call writer_made(w, rc, name)
    call cf_finish(rc, err, stat, errmsg)
  end subroutine colfile_stream_create

  ! Reopen the committed stream `name` to append more: each task continues
  ! after its committed rows; the layout and row type are the stream's.
  subroutine colfile_stream_reopen(w, f, name, stat, errmsg)
    type(colfile_stream_writer), intent(out) :: w
    type(colfile_file), intent(in) :: f
    character(len=*), intent(in) :: name
    integer, intent(out), optional :: stat
    character(len=*), intent(inout), optional :: errmsg
    type(cf_error_t) :: err
    integer(c_int) :: rc
    rc = cf_stream_reopen(w%ptr, f%ptr, f_c_string(name), err)
    call writer_made(w, rc, name)
    call cf_finish(rc, err, stat, errmsg)
  end subroutine colfile_stream_reopen

  subroutine writer_made(w, rc, name)
    type(colfile_stream_writer), intent(inout) :: w
    integer(c_int), intent(in) :: rc
    character(len=*), intent(in) :: name
    type(cf_stream_layout_t) :: layout
    character(kind=c_char) :: dt(16)
    w%name = trim(name)
    if (rc /= 0) then
      w%ptr = c_null_ptr
      return
    end if
    call cf_stream_writer_info(w%ptr, layout, dt, w%nmemb)
    w%dtype = c_dtype_string(dt)
    w%ntasks = layout%tasks
  end subroutine writer_made

  ! s gets task `task` (0 .. tasks-1) of w, to append to; it belongs to w
  ! and goes with it at colfile_stream_close or colfile_stream_discard.
  subroutine colfile_stream_task(s, w, task, stat, errmsg)
    type(colfile_stream), intent(out) :: s
    type(colfile_stream_writer), intent(inout) :: w
    integer(c_int64_t), intent(in) :: task
    integer, intent(out), optional :: stat
    character(len=*), intent(inout), optional :: errmsg
    type(cf_error_t) :: err
    integer(c_int) :: rc
    if (.not. cf_is_open(w%ptr, 'the stream is not open for writing', stat, errmsg)) return
    rc = cf_stream_task_open(s%task, w%ptr, task, err)
    if (rc /= 0) s%task = c_null_ptr
    s%dtype = w%dtype
    s%nmemb = w%nmemb
    s%name = w%name
    call cf_finish(rc, err, stat, errmsg)
  end subroutine colfile_stream_task

  ! ------------------------------------------------------------ Reading

  ! Open the committed stream `name` of File f for reading.
  subroutine colfile_stream_open(r, f, name, stat, errmsg)
    type(colfile_stream_reader), intent(out) :: r
    type(colfile_file), intent(in) :: f
    character(len=*), intent(in) :: name
    integer, intent(out), optional :: stat
    character(len=*), intent(inout), optional :: errmsg
    type(cf_error_t) :: err
    type(cf_stream_layout_t) :: layout
    character(kind=c_char) :: dt(16)
    integer(c_int64_t) :: commit
    integer(c_int) :: rc
    rc = cf_stream_open(r%ptr, f%ptr, f_c_string(name), err)
    if (rc == 0) then
      call cf_stream_info(r%ptr, layout, dt, r%nmemb, commit)
      r%dtype = c_dtype_string(dt)
      r%ntasks = layout%tasks
      r%name = trim(name)
    end if
    call cf_finish(rc, err, stat, errmsg)
  end subroutine colfile_stream_open

  ! The stream's dtype ("<f8", or "raw") and elements per row.
  function colfile_stream_dtype(r) result(d)
    type(colfile_stream_reader), intent(in) :: r
    character(len=:), allocatable :: d
    d = trim(r%dtype)
  end function colfile_stream_dtype

  ! ---------------------------------------------------------- Transfers

  ! The rows an array of nelem elements (rank, first dimension dim1, width
  ! bytes each) holds for a stream of `sdtype` with nmemb elements a row,
  ! and the bytes of those rows in the stream's dtype.  A raw stream takes
  ! the array's bytes as they are.
  subroutine stream_shape(name, sdtype, nmemb, rank, nelem, dim1, width, rows, bytes, ok, stat, errmsg)
    character(len=*), intent(in) :: name, sdtype
    integer(c_int64_t), intent(in) :: nmemb, nelem, dim1, width
    integer, intent(in) :: rank
    integer(c_int64_t), intent(out) :: rows, bytes
    logical, intent(out) :: ok
    integer, intent(out), optional :: stat
    character(len=*), intent(inout), optional :: errmsg
    type(cf_error_t) :: err
    integer(c_int64_t) :: item
    integer(c_int) :: rc
    ok = .false.
    rows = 0
    bytes = 0
    if (trim(sdtype) == 'raw') then
      rows = nelem * width
      bytes = rows
      ok = .true.
      return
    end if
    if (rank == 2 .and. dim1 /= nmemb) then
      call cf_fail(COLFILE_EARG, name // ': a stream of ' // trim(i64toa(nmemb)) // &
        ' elements per row: the array''s first dimension is ' // trim(i64toa(dim1)), stat, errmsg)
      return
    end if
    if (mod(nelem, nmemb) /= 0) then
      call cf_fail(COLFILE_EARG, name // ': an array of ' // trim(i64toa(nelem)) // &
        ' elements does not hold whole rows of ' // trim(i64toa(nmemb)) // ' elements', stat, errmsg)
      return
    end if
    rc = cf_dtype_itemsize(f_c_string(sdtype), item, err)
    if (rc /= 0) then
      call cf_finish(rc, err, stat, errmsg)
      return
    end if
    rows = nelem / nmemb
    bytes = nelem * item
    ok = .true.
  end subroutine stream_shape

  ! Whether the array's dtype (S values: 'S', width their length) is the
  ! stream's, byte for byte; cdt gets it normalised and NUL terminated.
  logical function same_dtype(sdtype, dtype, width, is_str, cdt)
    character(len=*), intent(in) :: sdtype, dtype
    integer, intent(in) :: width
    logical, intent(in) :: is_str
    character(kind=c_char, len=:), allocatable, intent(out) :: cdt
    type(cf_error_t) :: err
    character(kind=c_char) :: norm(16)
    if (is_str) then
      cdt = f_c_string(str_dtype(width))
    else
      cdt = f_c_string(dtype)
    end if
    same_dtype = trim(sdtype) == 'raw'
    if (same_dtype) return
    if (cf_dtype_normalize(cdt, norm, err) /= 0) return
    same_dtype = trim(c_dtype_string(norm)) == trim(sdtype)
  end function same_dtype

  ! Append the array (nelem elements at p) to the task's stream.
  subroutine stream_append(s, rank, nelem, dim1, p, dtype, width, is_str, stat, errmsg)
    type(colfile_stream), intent(inout) :: s
    integer, intent(in) :: rank, width
    integer(c_int64_t), intent(in) :: nelem, dim1
    type(c_ptr), intent(in) :: p
    character(len=*), intent(in) :: dtype
    logical, intent(in) :: is_str
    integer, intent(out), optional :: stat
    character(len=*), intent(inout), optional :: errmsg
    type(cf_error_t) :: err
    character(kind=c_char, len=:), allocatable :: cdt
    character(kind=c_char), allocatable, target :: copy(:), conv(:)
    integer(c_int64_t) :: rows, bytes, w
    type(c_ptr) :: src
    integer(c_int) :: rc
    logical :: ok
    if (.not. cf_is_open(s%task, 'the stream is not open for writing', stat, errmsg)) return
    w = width
    call stream_shape(s%name, s%dtype, s%nmemb, rank, nelem, dim1, w, rows, bytes, ok, stat, errmsg)
    if (.not. ok) return
    src = p
    ! S values go with NUL padding, as numpy pads them.
    if (is_str .and. trim(s%dtype) /= 'raw') then
      call strings_to_c(p, nelem, w, copy)
      src = c_loc(copy)
    end if
    if (same_dtype(s%dtype, dtype, width, is_str, cdt)) then
      rc = cf_stream_append(s%task, src, rows, err)
    else
      allocate(conv(max(bytes, 1_c_int64_t)))
      rc = cf_dtype_convert(c_loc(conv), bytes / max(nelem, 1_c_int64_t), f_c_string(s%dtype), src, w, cdt, &
        nelem, err)
      if (rc == 0) rc = cf_stream_append(s%task, c_loc(conv), rows, err)
    end if
    call cf_finish(rc, err, stat, errmsg)
  end subroutine stream_append

  ! Read rows from `start` of task `task` (-1: of the global view) into
  ! the array (nelem elements at p).
  subroutine stream_read(r, task, start, rank, nelem, dim1, p, dtype, width, is_str, stat, errmsg)
    type(colfile_stream_reader), intent(inout) :: r
    integer(c_int64_t), intent(in) :: task, start, nelem, dim1
    integer, intent(in) :: rank, width
    type(c_ptr), intent(in) :: p
    character(len=*), intent(in) :: dtype
    logical, intent(in) :: is_str
    integer, intent(out), optional :: stat
    character(len=*), intent(inout), optional :: errmsg
    type(cf_error_t) :: err
    character(kind=c_char, len=:), allocatable :: cdt
    character(kind=c_char), allocatable, target :: conv(:)
    integer(c_int64_t) :: rows, bytes, w
    type(c_ptr) :: dst
    integer(c_int) :: rc
    logical :: ok, same
    if (.not. cf_is_open(r%ptr, 'the stream is not open', stat, errmsg)) return
    w = width
    call stream_shape(r%name, r%dtype, r%nmemb, rank, nelem, dim1, w, rows, bytes, ok, stat, errmsg)
    if (.not. ok) return
    same = same_dtype(r%dtype, dtype, width, is_str, cdt)
    dst = p
    if (.not. same) then
      allocate(conv(max(bytes, 1_c_int64_t)))
      dst = c_loc(conv)
    end if
    if (task < 0) then
      rc = cf_stream_read(r%ptr, start, rows, dst, err)
    else
      rc = cf_stream_read_task(r%ptr, task, start, rows, dst, err)
    end if
    if (rc == 0 .and. .not. same) &
      rc = cf_dtype_convert(p, w, cdt, dst, bytes / max(nelem, 1_c_int64_t), f_c_string(r%dtype), nelem, err)
    if (rc == 0 .and. is_str .and. trim(r%dtype) /= 'raw') call strings_from_c(p, nelem * w)
    call cf_finish(rc, err, stat, errmsg)
  end subroutine stream_read

  include 'colfile_stream_rw.inc'

  ! Accessors, releases and lists of names (fortran/gen_wrap.py).
  include 'colfile_streams_wrap.inc'

end module colfile_streams
