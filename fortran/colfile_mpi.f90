! colfile_mpi - the collective layer (include/colfile_mpi.h) for Fortran.
! Every procedure is collective over `comm`, a Fortran MPI communicator
! handle (MPI_COMM_WORLD of `use mpi` or mpif.h, or any other integer
! handle); the C side converts it with MPI_Comm_f2c, so this module needs
! no MPI Fortran bindings itself.  Every rank gets the same stat; the
! message names the failing rank.  Close Files with colfile_close (module
! colfile) on each rank.
module colfile_mpi
  use, intrinsic :: iso_c_binding
  use colfile_c
  use colfile_streams, only: colfile_stream, c_dtype_string
  implicit none
  private

  public :: colfile_mpi_open, colfile_mpi_list, colfile_mpi_column_create, colfile_mpi_column_open, &
    colfile_mpi_column_close, colfile_mpi_grow, colfile_mpi_write, colfile_mpi_read, colfile_mpi_attr_set
  public :: colfile_mpi_column_create_many, colfile_mpi_write_add, colfile_mpi_write_many, &
    colfile_mpi_column_close_many
  public :: colfile_mpi_stream_create, colfile_mpi_stream_reopen, colfile_mpi_stream_flush, &
    colfile_mpi_stream_close, colfile_mpi_stream_discard

  ! How collective writes are planned (include/colfile_mpi.h,
  ! struct cf_mpi_options; zero: the default).
  type, bind(c), public :: colfile_mpi_options
    integer(c_int) :: mode = 0
    integer(c_int64_t) :: concurrency = 0
    integer(c_int64_t) :: nfile = 0
    integer(c_int64_t) :: blob_bytes = 0
    integer(c_int) :: align_blobs_to_ranks = 0
    integer(c_int64_t) :: group_bytes = 0
    integer(c_int64_t) :: small_bytes = 0
    integer(c_int64_t) :: chunk_rows = 0
  end type colfile_mpi_options

  ! Values of colfile_mpi_options%mode (enum cf_io_mode).
  include 'colfile_mpi_const.inc'

  ! A snapshot's writes, collected by colfile_mpi_write_add and made by
  ! colfile_mpi_write_many in one collective.
  type, public :: colfile_mpi_writes
    private
    type(write_entry), allocatable :: e(:)
    integer :: n = 0
  end type colfile_mpi_writes

  type :: write_entry
    type(c_ptr) :: column = c_null_ptr, data = c_null_ptr
    integer(c_int64_t) :: start = 0, count = 0, row_stride = 0, elem_stride = 0
    character(kind=c_char) :: dtype(16) = c_null_char
    logical :: ok = .true.
    character(len=512) :: lmsg = ''
    character(kind=c_char), allocatable :: copy(:)  ! S values, NUL padded
  end type write_entry

  ! include/colfile_mpi.h: cf_mpi_column_spec and cf_mpi_write_spec.
  type, bind(c) :: column_spec_t
    type(c_ptr) :: name = c_null_ptr, dtype = c_null_ptr
    integer(c_int64_t) :: nmemb = 0, local_rows = 0
    type(c_ptr) :: column = c_null_ptr
    integer(c_int64_t) :: first_row = 0
  end type column_spec_t
  type, bind(c) :: write_spec_t
    type(c_ptr) :: column = c_null_ptr
    integer(c_int64_t) :: start = 0, count = 0
    type(c_ptr) :: buf = c_null_ptr, buf_dtype = c_null_ptr
    integer(c_int64_t) :: row_stride = 0, elem_stride = 0
  end type write_spec_t

  interface colfile_mpi_column_create_many
    module procedure create_many_rows, create_many_same_rows
  end interface colfile_mpi_column_create_many

  include 'colfile_mpi_rw_generic.inc'
  include 'colfile_mpi_many_generic.inc'

  include 'colfile_mpi_attr_generic.inc'

  include 'colfile_mpi_bind.inc'

contains

  function opt_ptr(options) result(p)
    type(colfile_mpi_options), intent(in), optional, target :: options
    type(c_ptr) :: p
    p = c_null_ptr
    if (present(options)) p = c_loc(options)
  end function opt_ptr

  ! Open (flags: those of colfile_open) the File on every rank of comm.
  subroutine colfile_mpi_open(f, comm, path, flags, stat, errmsg)
    type(colfile_file), intent(out) :: f
    integer, intent(in) :: comm
    character(len=*), intent(in) :: path
    integer, intent(in), optional :: flags
    integer, intent(out), optional :: stat
    character(len=*), intent(inout), optional :: errmsg
    type(cf_error_t) :: err
    call cf_finish(cf_f_mpi_file_open(f%ptr, int(comm, c_int), f_c_string(path), cf_opt(flags, 0), err), &
      err, stat, errmsg)
  end subroutine colfile_mpi_open

  ! Create column `name` with local_rows rows from this rank (the size is
  ! their sum); first_row gets this rank's first row.
  subroutine colfile_mpi_column_create(c, f, comm, name, dtype, local_rows, nmemb, first_row, options, &
      stat, errmsg)
    type(colfile_column), intent(out) :: c
    type(colfile_file), intent(in) :: f
    integer, intent(in) :: comm
    character(len=*), intent(in) :: name, dtype
    integer(c_int64_t), intent(in) :: local_rows
    integer(c_int64_t), intent(in), optional :: nmemb
    integer(c_int64_t), intent(out), optional :: first_row
    type(colfile_mpi_options), intent(in), optional, target :: options
    integer, intent(out), optional :: stat
    character(len=*), intent(inout), optional :: errmsg
    type(cf_error_t) :: err
    integer(c_int64_t) :: first
    first = 0
    call cf_finish(cf_f_mpi_column_create(c%ptr, f%ptr, int(comm, c_int), f_c_string(name), f_c_string(dtype), &
      cf_opt(nmemb, 1_c_int64_t), local_rows, opt_ptr(options), first, err), err, stat, errmsg)
    if (present(first_row)) first_row = first
  end subroutine colfile_mpi_column_create

  ! Merge every rank's writes and commit once; the handles are released.
  subroutine colfile_mpi_column_close(c, comm, stat, errmsg)
    type(colfile_column), intent(inout) :: c
    integer, intent(in) :: comm
    integer, intent(out), optional :: stat
    character(len=*), intent(inout), optional :: errmsg
    type(cf_error_t) :: err
    integer(c_int) :: rc
    rc = cf_f_mpi_column_close(c%ptr, int(comm, c_int), err)
    c%ptr = c_null_ptr
    call cf_finish(rc, err, stat, errmsg)
  end subroutine colfile_mpi_column_close

  ! Append local_rows rows from each rank; first_row: this rank's first.
  subroutine colfile_mpi_grow(c, f, comm, local_rows, first_row, options, stat, errmsg)
    type(colfile_column), intent(inout) :: c
    type(colfile_file), intent(in) :: f
    integer, intent(in) :: comm
    integer(c_int64_t), intent(in) :: local_rows
    integer(c_int64_t), intent(out), optional :: first_row
    type(colfile_mpi_options), intent(in), optional, target :: options
    integer, intent(out), optional :: stat
    character(len=*), intent(inout), optional :: errmsg
    type(cf_error_t) :: err
    integer(c_int64_t) :: first
    first = 0
    call cf_finish(cf_f_mpi_column_grow(c%ptr, f%ptr, int(comm, c_int), local_rows, opt_ptr(options), first, err), &
      err, stat, errmsg)
    if (present(first_row)) first_row = first
  end subroutine colfile_mpi_grow

  ! Rows start.. of column c from (reading) or to the array, collectively.
  subroutine mpi_rw(c, comm, start, reading, rank, nelem, dim1, p, dtype, width, is_str, options, stat, errmsg)
    type(colfile_column), intent(inout) :: c
    integer, intent(in) :: comm, rank, width
    integer(c_int64_t), intent(in) :: start, nelem, dim1
    logical, intent(in) :: reading, is_str
    type(c_ptr), intent(in) :: p
    character(len=*), intent(in) :: dtype
    type(colfile_mpi_options), intent(in), optional, target :: options
    integer, intent(out), optional :: stat
    character(len=*), intent(inout), optional :: errmsg
    type(cf_error_t) :: err
    type(rw_call), target :: r
    integer(c_int) :: rc
    ! A shape error on one rank goes ahead with count -1 (rw_begin).
    call rw_begin(r, c, rank, nelem, dim1, p, dtype, width, is_str, reading)
    if (reading) then
      rc = cf_f_mpi_column_read(c%ptr, int(comm, c_int), start, r%count, r%buf, r%dtype, r%row_stride, r%width, &
        opt_ptr(options), err)
    else
      rc = cf_f_mpi_column_write(c%ptr, int(comm, c_int), start, r%count, r%buf, r%dtype, r%row_stride, r%width, &
        opt_ptr(options), err)
    end if
    call rw_end(r, rc, err, stat, errmsg)
  end subroutine mpi_rw

  ! ------------------------------------------------------------ Snapshots

  ! colfile_mpi_column_create of every column of a snapshot in one
  ! collective: names(i), dtypes(i), nmemb(i) (default 1) the same on every
  ! rank, local_rows(i) (or one local_rows for all) this rank's rows;
  ! cols(i) gets the handle, first_rows(i) this rank's first row.  On
  ! failure no column is created.
  subroutine create_many_rows(cols, f, comm, names, dtypes, local_rows, nmemb, first_rows, options, stat, errmsg)
    type(colfile_column), intent(inout) :: cols(:)
    type(colfile_file), intent(in) :: f
    integer, intent(in) :: comm
    character(len=*), intent(in) :: names(:), dtypes(:)
    integer(c_int64_t), intent(in) :: local_rows(:)
    integer(c_int64_t), intent(in), optional :: nmemb(:)
    integer(c_int64_t), intent(out), optional :: first_rows(:)
    type(colfile_mpi_options), intent(in), optional, target :: options
    integer, intent(out), optional :: stat
    character(len=*), intent(inout), optional :: errmsg
    type(cf_error_t) :: err
    type(column_spec_t), allocatable, target :: specs(:)
    character(kind=c_char), allocatable, target :: nbuf(:, :), dbuf(:, :)
    integer(c_int64_t) :: n, pass
    integer(c_int) :: rc
    integer :: i
    logical :: fits
    n = size(names, kind=c_int64_t)
    fits = size(dtypes) == n .and. size(local_rows) == n .and. size(cols) == n
    if (present(nmemb)) fits = fits .and. size(nmemb) == n
    if (present(first_rows)) fits = fits .and. size(first_rows) == n
    allocate(specs(max(n, 1_c_int64_t)), nbuf(len(names) + 1, max(n, 1_c_int64_t)), &
      dbuf(len(dtypes) + 1, max(size(dtypes), 1)))
    pass = -1  ! lists of different lengths: every rank fails ("bad list")
    if (fits) then
      pass = n
      do i = 1, int(n)
        call c_chars(names(i), nbuf(:, i))
        call c_chars(dtypes(i), dbuf(:, i))
        specs(i)%name = c_loc(nbuf(1, i))
        specs(i)%dtype = c_loc(dbuf(1, i))
        specs(i)%nmemb = 1
        if (present(nmemb)) specs(i)%nmemb = nmemb(i)
        specs(i)%local_rows = local_rows(i)
      end do
    end if
    rc = cf_f_mpi_column_create_many(f%ptr, int(comm, c_int), c_loc(specs), pass, opt_ptr(options), err)
    if (fits) then
      do i = 1, int(n)
        cols(i)%ptr = specs(i)%column
        if (present(first_rows)) first_rows(i) = specs(i)%first_row
      end do
    end if
    if (rc /= 0 .and. .not. fits) then
      call cf_fail(int(rc), 'colfile_mpi_column_create_many: names, dtypes, local_rows, nmemb, first_rows ' // &
        'and cols differ in length', stat, errmsg)
    else
      call cf_finish(rc, err, stat, errmsg)
    end if
  end subroutine create_many_rows

  subroutine create_many_same_rows(cols, f, comm, names, dtypes, local_rows, nmemb, first_rows, options, &
      stat, errmsg)
    type(colfile_column), intent(inout) :: cols(:)
    type(colfile_file), intent(in) :: f
    integer, intent(in) :: comm
    character(len=*), intent(in) :: names(:), dtypes(:)
    integer(c_int64_t), intent(in) :: local_rows
    integer(c_int64_t), intent(in), optional :: nmemb(:)
    integer(c_int64_t), intent(out), optional :: first_rows(:)
    type(colfile_mpi_options), intent(in), optional, target :: options
    integer, intent(out), optional :: stat
    character(len=*), intent(inout), optional :: errmsg
    integer(c_int64_t) :: rows(size(names))
    rows = local_rows
    call create_many_rows(cols, f, comm, names, dtypes, rows, nmemb, first_rows, options, stat, errmsg)
  end subroutine create_many_same_rows

  ! s without trailing blanks and NUL terminated into out.
  subroutine c_chars(s, out)
    character(len=*), intent(in) :: s
    character(kind=c_char), intent(out) :: out(:)
    integer :: i
    out = c_null_char
    do i = 1, len_trim(s)
      out(i) = s(i:i)
    end do
  end subroutine c_chars

  ! Add the write of `nelem` elements (rank, first dimension dim1) of
  ! Fortran type dtype to the list: p(1) is the first element, p(2) the
  ! next along the first dimension, p(3) the first of the next column
  ! (c_null_ptr when there is none), so that any section is described by
  ! its strides and never copied (S values are, to be NUL padded).  A
  ! shape that does not fit the column is kept to fail the collective
  ! write on every rank.
  subroutine writes_add(w, c, start, rank, nelem, dim1, p, dtype, width, is_str)
    type(colfile_mpi_writes), intent(inout) :: w
    type(colfile_column), intent(in) :: c
    integer(c_int64_t), intent(in) :: start, nelem, dim1
    integer, intent(in) :: rank, width
    type(c_ptr), intent(in) :: p(3)
    character(len=*), intent(in) :: dtype
    logical, intent(in) :: is_str
    type(write_entry), allocatable :: grown(:)
    type(write_entry) :: e
    character(kind=c_char), allocatable, target :: gathered(:)
    character(kind=c_char), pointer :: chars(:)
    integer(c_int64_t) :: wb, rs, es, k, addr, d1
    integer :: lstat
    wb = width
    e%column = c%ptr
    e%start = start
    if (is_str) then
      call c_chars(str_dtype(width), e%dtype)
    else
      call c_chars(dtype, e%dtype)
    end if
    call rw_layout(c, rank, nelem, dim1, wb, e%count, rs, e%ok, lstat, e%lmsg)
    if (.not. e%ok) then
      e%count = -1
      e%row_stride = wb
      e%elem_stride = wb
    else
      ! rw_layout's row_stride is nmemb elements of width wb
      es = wb
      if (c_associated(p(2))) es = address(p(2)) - address(p(1))
      if (rank == 2 .and. c_associated(p(3))) then
        rs = address(p(3)) - address(p(1))
      else
        rs = (rs / wb) * es
      end if
      e%data = p(1)
      e%elem_stride = es
      e%row_stride = rs
      if (is_str .and. nelem > 0) then
        ! gather the strings in array element order, then NUL pad them
        allocate(gathered(nelem * wb))
        d1 = dim1
        if (rank == 1) d1 = nelem
        do k = 0, nelem - 1
          addr = address(p(1)) + mod(k, d1) * es
          if (rank == 2) addr = addr + (k / d1) * rs
          call c_f_pointer(transfer(addr, c_null_ptr), chars, [wb])
          gathered(k * wb + 1:(k + 1) * wb) = chars
        end do
        call strings_to_c(c_loc(gathered), nelem, wb, e%copy)
        e%elem_stride = wb
        e%row_stride = (nelem / max(e%count, 1_c_int64_t)) * wb
      end if
    end if
    if (.not. allocated(w%e)) allocate(w%e(4))
    if (w%n == size(w%e)) then
      allocate(grown(2 * w%n))
      grown(1:w%n) = w%e(1:w%n)
      call move_alloc(grown, w%e)
    end if
    w%n = w%n + 1
    w%e(w%n) = e
  end subroutine writes_add

  integer(c_int64_t) function address(p)
    type(c_ptr), intent(in) :: p
    address = transfer(p, 0_c_int64_t)
  end function address

  ! Write everything added to w in one collective (throttled: each rank
  ! all its columns in its turn; options%concurrency ranks at once), then
  ! empty w.  The arrays must still hold what was added.  Every rank must
  ! have added the same columns in the same order.
  subroutine colfile_mpi_write_many(w, comm, options, stat, errmsg)
    type(colfile_mpi_writes), intent(inout), target :: w
    integer, intent(in) :: comm
    type(colfile_mpi_options), intent(in), optional, target :: options
    integer, intent(out), optional :: stat
    character(len=*), intent(inout), optional :: errmsg
    type(cf_error_t) :: err
    type(write_spec_t), allocatable, target :: specs(:)
    integer(c_int) :: rc
    integer :: i, bad
    allocate(specs(max(w%n, 1)))
    bad = 0
    do i = 1, w%n
      associate (e => w%e(i))
        specs(i)%column = e%column
        specs(i)%start = e%start
        specs(i)%count = e%count
        specs(i)%buf = e%data
        if (allocated(e%copy)) specs(i)%buf = c_loc(e%copy)
        specs(i)%buf_dtype = c_loc(e%dtype)
        specs(i)%row_stride = e%row_stride
        specs(i)%elem_stride = e%elem_stride
        if (.not. e%ok .and. bad == 0) bad = i
      end associate
    end do
    rc = cf_f_mpi_column_write_many(c_loc(specs), int(w%n, c_int64_t), int(comm, c_int), opt_ptr(options), err)
    if (bad > 0 .and. rc /= 0) then
      call cf_fail(int(rc), trim(w%e(bad)%lmsg), stat, errmsg)
    else
      call cf_finish(rc, err, stat, errmsg)
    end if
    if (allocated(w%e)) deallocate(w%e)
    w%n = 0
  end subroutine colfile_mpi_write_many

  ! colfile_mpi_column_close of every column in one collective (the same
  ! columns in the same order on every rank); every handle is released.
  subroutine colfile_mpi_column_close_many(cols, comm, stat, errmsg)
    type(colfile_column), intent(inout), target :: cols(:)
    integer, intent(in) :: comm
    integer, intent(out), optional :: stat
    character(len=*), intent(inout), optional :: errmsg
    type(cf_error_t) :: err
    type(c_ptr), allocatable, target :: ptrs(:)
    integer(c_int) :: rc
    integer :: i
    allocate(ptrs(max(size(cols), 1)))
    do i = 1, size(cols)
      ptrs(i) = cols(i)%ptr
      cols(i)%ptr = c_null_ptr
    end do
    rc = cf_f_mpi_column_close_many(c_loc(ptrs), size(cols, kind=c_int64_t), int(comm, c_int), err)
    call cf_finish(rc, err, stat, errmsg)
  end subroutine colfile_mpi_column_close_many

  ! ------------------------------------------------------------ Streams

  ! Create stream `name` (docs/streams.md) with one task per rank: rows of
  ! `dtype` with nmemb elements (default 1), or dtype "raw" for bytes;
  ! files (default: one per node, one per task on a local disk), chunk and align (bytes; default 1 MiB and
  ! the File's block size) lay it out.  Each rank then appends to its task
  ! with colfile_stream_append, with no communication.
  subroutine colfile_mpi_stream_create(s, f, comm, name, dtype, nmemb, files, chunk, align, stat, errmsg)
    type(colfile_stream), intent(out) :: s
    type(colfile_file), intent(in) :: f
    integer, intent(in) :: comm
    character(len=*), intent(in) :: name, dtype
    integer(c_int64_t), intent(in), optional :: nmemb, files, chunk, align
    integer, intent(out), optional :: stat
    character(len=*), intent(inout), optional :: errmsg
    type(cf_error_t) :: err
    character(kind=c_char) :: dt(16)
    integer(c_int) :: rc
    s%nmemb = cf_opt(nmemb, 1_c_int64_t)
    rc = cf_f_mpi_stream_create(s%mpi, s%task, dt, f%ptr, int(comm, c_int), f_c_string(name), f_c_string(dtype), &
      s%nmemb, cf_opt(files, 0_c_int64_t), cf_opt(chunk, 0_c_int64_t), cf_opt(align, 0_c_int64_t), err)
    call stream_made(s, rc, dt, name)
    call cf_finish(rc, err, stat, errmsg)
  end subroutine colfile_mpi_stream_create

  ! Reopen the committed stream `name` to append more (a job restarting
  ! from a checkpoint): each rank continues its task after its committed
  ! rows.  The stream must have one task per rank.
  subroutine colfile_mpi_stream_reopen(s, f, comm, name, stat, errmsg)
    type(colfile_stream), intent(out) :: s
    type(colfile_file), intent(in) :: f
    integer, intent(in) :: comm
    character(len=*), intent(in) :: name
    integer, intent(out), optional :: stat
    character(len=*), intent(inout), optional :: errmsg
    type(cf_error_t) :: err
    character(kind=c_char) :: dt(16)
    integer(c_int) :: rc
    rc = cf_f_mpi_stream_reopen(s%mpi, s%task, dt, s%nmemb, f%ptr, int(comm, c_int), f_c_string(name), err)
    call stream_made(s, rc, dt, name)
    call cf_finish(rc, err, stat, errmsg)
  end subroutine colfile_mpi_stream_reopen

  subroutine stream_made(s, rc, dt, name)
    type(colfile_stream), intent(inout) :: s
    integer(c_int), intent(in) :: rc
    character(kind=c_char), intent(in) :: dt(16)
    character(len=*), intent(in) :: name
    s%name = trim(name)
    if (rc == 0) then
      s%dtype = c_dtype_string(dt)
    else
      s%mpi = c_null_ptr
      s%task = c_null_ptr
    end if
  end subroutine stream_made

  ! Commit as colfile_mpi_stream_flush, then release the stream (also on
  ! failure).
  subroutine colfile_mpi_stream_close(s, stat, errmsg)
    type(colfile_stream), intent(inout) :: s
    integer, intent(out), optional :: stat
    character(len=*), intent(inout), optional :: errmsg
    type(cf_error_t) :: err
    integer(c_int) :: rc
    if (.not. cf_is_open(s%mpi, 'the stream is not open for writing', stat, errmsg)) return
    rc = cf_mpi_stream_close(s%mpi, err)
    s%mpi = c_null_ptr
    s%task = c_null_ptr
    call cf_finish(rc, err, stat, errmsg)
  end subroutine colfile_mpi_stream_close

  include 'colfile_mpi_rw.inc'
  include 'colfile_mpi_many.inc'

  include 'colfile_mpi_attr.inc'

  subroutine mpi_attr_set_str(c, comm, name, value, stat, errmsg)
    type(colfile_column), intent(inout) :: c
    integer, intent(in) :: comm
    character(len=*), intent(in) :: name, value
    integer, intent(out), optional :: stat
    character(len=*), intent(inout), optional :: errmsg
    type(cf_error_t) :: err
    character(kind=c_char), allocatable, target :: bytes(:)
    integer :: i, n
    n = len_trim(value)
    allocate(bytes(max(n, 1)))
    bytes = c_null_char
    do i = 1, n
      bytes(i) = value(i:i)
    end do
    call cf_finish(cf_f_mpi_column_attr_set(c%ptr, int(comm, c_int), f_c_string(name), f_c_string('a1'), &
      int(max(n, 1), c_int64_t), c_loc(bytes), err), err, stat, errmsg)
  end subroutine mpi_attr_set_str

  ! Accessors, releases and lists of names (fortran/gen_wrap.py).
  include 'colfile_mpi_wrap.inc'

end module colfile_mpi
