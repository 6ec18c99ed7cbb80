! colfile - the Fortran 2008 interface of libcolfile (docs/fortran.md).
! Files, columns of every dtype (vector columns as arrays (nmemb, rows),
! passed to C without a copy), row ranges (row numbers start at 0, as in
! the format and the C and Python APIs), attributes and listing.  Every subroutine
! takes optional stat and errmsg: stat gets 0 or a negative
! COLFILE_E* code, errmsg the message; without stat a failure stops the
! program with the message.
module colfile
  use, intrinsic :: iso_c_binding
  use colfile_c
  use colfile_streams
  use colfile_integrity
  implicit none
  private

  ! Statistics, verification and repair (module colfile_integrity).
  public :: colfile_stats, colfile_chunk_rows, colfile_chunk_count, colfile_chunk_stats, colfile_set_chunk_rows, &
    colfile_set_statistics, colfile_set_verify, colfile_ext_state, colfile_verify_blob, colfile_verify, &
    colfile_index_blob, colfile_repair, colfile_stream_chunk_stats, colfile_stream_check_chunk
  public :: COLFILE_BLOB_OK, COLFILE_BLOB_MISSING, COLFILE_BLOB_SHORT, COLFILE_BLOB_LONG, COLFILE_BLOB_SUM_MISMATCH, &
    COLFILE_BLOB_CRC_MISMATCH, COLFILE_BLOB_CRC_UNKNOWN, COLFILE_BLOB_STATS_MISMATCH, COLFILE_BLOB_STATS_DAMAGED, &
    COLFILE_EXT_CURRENT, COLFILE_EXT_ABSENT, COLFILE_EXT_UNBOUND, COLFILE_EXT_STALE, COLFILE_EXT_DAMAGED, &
    COLFILE_EXT_UPDATING, COLFILE_EXT_TORN, COLFILE_REPAIR_SUMS, COLFILE_REPAIR_CRC, COLFILE_REPAIR_TRUNCATED, &
    COLFILE_REPAIR_STRAY, COLFILE_REPAIR_TORN

  ! Streams (module colfile_streams; under MPI colfile_mpi creates, flushes and closes them).
  public :: colfile_stream_writer, colfile_stream_create, colfile_stream_reopen, colfile_stream_task, &
    colfile_stream_flush, colfile_stream_discard
  public :: colfile_stream, colfile_stream_reader, colfile_stream_open, colfile_stream_close, &
    colfile_stream_list, colfile_stream_size, colfile_stream_ntasks, colfile_stream_task_size, &
    colfile_stream_task_start, colfile_stream_dtype, colfile_stream_nmemb, colfile_stream_rows, &
    colfile_stream_is_open, colfile_stream_append, colfile_stream_read, colfile_stream_read_task

  public :: colfile_file, colfile_column
  public :: COLFILE_OK, COLFILE_EIO, COLFILE_ENOENT, COLFILE_EEXIST, COLFILE_ENAME, &
    COLFILE_EDTYPE, COLFILE_ECAST, COLFILE_EFORMAT, COLFILE_ERANGE, COLFILE_ENOMEM, &
    COLFILE_EARG, COLFILE_ECHECKSUM, COLFILE_EREADONLY, COLFILE_ESHORT, COLFILE_ENOTFILE, &
    COLFILE_EKIND, COLFILE_ETORN, COLFILE_EBUSY, COLFILE_EREPLACED
  public :: colfile_open, colfile_create, colfile_close, colfile_list, colfile_remove, &
    colfile_path, colfile_is_open
  public :: colfile_column_create, colfile_column_open, colfile_column_close, &
    colfile_column_flush, colfile_size, colfile_nmemb, colfile_nfile, colfile_dtype, &
    colfile_name, colfile_column_is_open
  public :: colfile_write, colfile_read, colfile_read_rows, colfile_read_step
  public :: colfile_attr_set, colfile_attr_get, colfile_attr_names, colfile_attr_delete, &
    colfile_attr_count

  ! Flags of colfile_open (include/colfile.h, enum cf_open_flags): READ or
  ! WRITE, combined with iany([...]) or +.
  include 'colfile_const.inc'

  ! What rw_rows does (the procedures of colfile_rw.inc name it).
  integer, parameter :: RW_WRITE = 0, RW_READ = 1, RW_LISTED = 2, RW_STEP = 3

  include 'colfile_rw_generic.inc'

  include 'colfile_attr_generic.inc'

  include 'colfile_bind.inc'

contains

  ! ---------------------------------------------------------------- Files

  ! Open the File at `path`; flags: COLFILE_OPEN_READ (the default),
  ! COLFILE_OPEN_WRITE, with COLFILE_OPEN_CREATE, COLFILE_OPEN_EXCL, ... as in C.
  subroutine colfile_open(f, path, flags, stat, errmsg)
    type(colfile_file), intent(out) :: f
    character(len=*), intent(in) :: path
    integer, intent(in), optional :: flags
    integer, intent(out), optional :: stat
    character(len=*), intent(inout), optional :: errmsg
    type(cf_error_t) :: err
    call cf_finish(cf_file_open(f%ptr, f_c_string(path), cf_opt(flags, COLFILE_OPEN_READ), err), err, stat, errmsg)
  end subroutine colfile_open

  ! Open the File at `path` for writing, making it (mkdir -p) if absent.
  subroutine colfile_create(f, path, stat, errmsg)
    type(colfile_file), intent(out) :: f
    character(len=*), intent(in) :: path
    integer, intent(out), optional :: stat
    character(len=*), intent(inout), optional :: errmsg
    call colfile_open(f, path, ior(COLFILE_OPEN_WRITE, COLFILE_OPEN_CREATE), stat, errmsg)
  end subroutine colfile_create

  ! -------------------------------------------------------------- Columns

  ! Create (or replace) column `name` ("group/name" makes the groups) of
  ! dtype ("f8", "i4", "S8", ...) with `size` rows of `nmemb` elements
  ! (default 1) in `nfile` blobs (default 1), open for writing.
  subroutine colfile_column_create(c, f, name, dtype, size, nmemb, nfile, stat, errmsg)
    type(colfile_column), intent(out) :: c
    type(colfile_file), intent(in) :: f
    character(len=*), intent(in) :: name, dtype
    integer(c_int64_t), intent(in) :: size
    integer(c_int64_t), intent(in), optional :: nmemb, nfile
    integer, intent(out), optional :: stat
    character(len=*), intent(inout), optional :: errmsg
    type(cf_error_t) :: err
    call cf_finish(cf_column_create(c%ptr, f%ptr, f_c_string(name), f_c_string(dtype), cf_opt(nmemb, 1_c_int64_t), &
      size, cf_opt(nfile, 1_c_int64_t), err), err, stat, errmsg)
  end subroutine colfile_column_create

  ! ----------------------------------------------------------- Row ranges

  ! One transfer between column c and the array: how = RW_WRITE or RW_READ
  ! (rows a.. of the column), RW_LISTED (the `a` rows listed at rows_p) or
  ! RW_STEP (rows a, a+b, ...), as many rows as the array holds.
  subroutine rw_rows(c, how, rows_p, a, b, rank, nelem, dim1, p, dtype, width, is_str, stat, errmsg)
    type(colfile_column), intent(inout) :: c
    integer, intent(in) :: how, rank, width
    type(c_ptr), intent(in) :: rows_p, p
    integer(c_int64_t), intent(in) :: a, b, nelem, dim1
    logical, intent(in) :: is_str
    character(len=*), intent(in) :: dtype
    integer, intent(out), optional :: stat
    character(len=*), intent(inout), optional :: errmsg
    type(cf_error_t) :: err
    type(rw_call), target :: r
    integer(c_int) :: rc
    call rw_begin(r, c, rank, nelem, dim1, p, dtype, width, is_str, how /= RW_WRITE)
    if (rw_refused(r, stat, errmsg)) return
    select case (how)
    case (RW_WRITE)
      rc = cf_column_rw(c%ptr, a, r%count, r%buf, r%dtype, r%row_stride, r%width, err)
    case (RW_READ)
      rc = cf_column_read(c%ptr, a, r%count, r%buf, r%dtype, r%row_stride, r%width, err)
    case (RW_LISTED)
      if (r%count /= a) then
        call cf_fail(COLFILE_EARG, colfile_name(c) // ': ' // trim(i64toa(a)) // ' rows listed for an array of ' &
          // trim(i64toa(r%count)) // ' rows', stat, errmsg)
        return
      end if
      rc = cf_column_read_rows(c%ptr, rows_p, r%count, r%buf, r%dtype, r%row_stride, r%width, err)
    case default
      rc = cf_column_read_step(c%ptr, a, b, r%count, r%buf, r%dtype, r%row_stride, r%width, err)
    end select
    call rw_end(r, rc, err, stat, errmsg)
  end subroutine rw_rows

  include 'colfile_rw.inc'

  ! ----------------------------------------------------------- Attributes

  ! Elements of attribute `name` (0 with stat /= 0 if absent).
  integer(c_int64_t) function colfile_attr_count(c, name, stat, errmsg)
    type(colfile_column), intent(inout) :: c
    character(len=*), intent(in) :: name
    integer, intent(out), optional :: stat
    character(len=*), intent(inout), optional :: errmsg
    call attr_len(c, name, colfile_attr_count, stat, errmsg)
    colfile_attr_count = max(colfile_attr_count, 0_c_int64_t)
  end function colfile_attr_count

  include 'colfile_attr.inc'

  ! The element count of attribute `name` into n, or -1 (and stat/errmsg
  ! set) if it cannot be read.
  subroutine attr_len(c, name, n, stat, errmsg)
    type(colfile_column), intent(inout) :: c
    character(len=*), intent(in) :: name
    integer(c_int64_t), intent(out) :: n
    integer, intent(out), optional :: stat
    character(len=*), intent(inout), optional :: errmsg
    type(cf_error_t) :: err
    type(c_ptr) :: dtype, data
    integer(c_int) :: rc
    rc = cf_column_attr_get(c%ptr, f_c_string(name), dtype, n, data, err)
    if (rc /= 0) n = -1
    call cf_finish(rc, err, stat, errmsg)
  end subroutine attr_len

  ! A string attribute, allocated to its length.
  subroutine attr_get_str(c, name, value, stat, errmsg)
    type(colfile_column), intent(inout) :: c
    character(len=*), intent(in) :: name
    character(len=:), allocatable, intent(out) :: value
    integer, intent(out), optional :: stat
    character(len=*), intent(inout), optional :: errmsg
    type(cf_error_t) :: err
    type(c_ptr) :: p
    integer(c_size_t) :: n
    integer(c_int) :: rc
    rc = cf_column_attr_get_string(c%ptr, f_c_string(name), p, n, err)
    if (rc == 0) then
      value = c_f_string(p)
      call cf_free(p)
    else
      value = ''
    end if
    call cf_finish(rc, err, stat, errmsg)
  end subroutine attr_get_str

  ! Accessors, releases and lists of names (fortran/gen_wrap.py).
  include 'colfile_wrap.inc'

end module colfile
