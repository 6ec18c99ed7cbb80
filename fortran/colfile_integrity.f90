! colfile_integrity - what a column knows about its data (include/colfile.h:
! per-chunk statistics, checksums): the statistics of each chunk of rows,
! whether the recorded values apply (ext state), verifying a blob or a
! whole column against them, recomputing them, and repair; the same for
! the chunks of a stream.  Module colfile passes on everything here.
module colfile_integrity
  use, intrinsic :: iso_c_binding
  use colfile_c
  use colfile_streams, only: colfile_stream_reader
  implicit none
  private

  public :: colfile_chunk_rows, colfile_chunk_count, colfile_chunk_stats, colfile_set_chunk_rows, &
    colfile_set_statistics, colfile_set_verify, colfile_ext_state, colfile_verify_blob, colfile_verify, &
    colfile_index_blob, colfile_repair, colfile_stream_chunk_stats, colfile_stream_check_chunk

  ! include/colfile.h: cf_chunk_stats.  valid is 1 when the statistics
  ! apply (0: unknown or stale: never trust the other numbers then),
  ! ordered 1 when min and max exist (not complex, not S).
  type, bind(c), public :: colfile_stats
    integer(c_int64_t) :: blob = 0, first_row = 0, rows = 0
    integer(c_int) :: valid = 0, ordered = 0
    integer(c_int64_t) :: count = 0, nan_count = 0
    real(c_double) :: min = 0, max = 0, sum = 0
  end type colfile_stats

  ! Bits of colfile_verify_blob's status (enum cf_blob_status), values of
  ! colfile_ext_state (enum cf_ext_state) and bits of what colfile_repair
  ! fixed (enum cf_repair_bits).
  include 'colfile_integrity_const.inc'

  include 'colfile_integrity_bind.inc'

contains

  ! Statistics of chunk k (0 .. colfile_chunk_count - 1) for vector
  ! component `component` (0 .. nmemb - 1; default 0).
  subroutine colfile_chunk_stats(c, k, st, component, stat, errmsg)
    type(colfile_column), intent(in) :: c
    integer(c_int64_t), intent(in) :: k
    type(colfile_stats), intent(out) :: st
    integer(c_int64_t), intent(in), optional :: component
    integer, intent(out), optional :: stat
    character(len=*), intent(inout), optional :: errmsg
    type(cf_error_t) :: err
    if (.not. cf_is_open(c%ptr, 'the column is not open', stat, errmsg)) return
    call cf_finish(cf_column_chunk_stats(c%ptr, k, cf_opt(component, 0_c_int64_t), st, err), err, stat, errmsg)
  end subroutine colfile_chunk_stats

  ! Statistics computed by this handle's writes (on by default).
  subroutine colfile_set_statistics(c, on)
    type(colfile_column), intent(inout) :: c
    logical, intent(in) :: on
    if (c_associated(c%ptr)) call cf_column_set_statistics(c%ptr, merge(1_c_int, 0_c_int, on))
  end subroutine colfile_set_statistics

  ! Check the CRC32C of what this handle's reads cover whole (on with
  ! COLFILE_OPEN_VERIFY); a mismatch fails the read with COLFILE_ECHECKSUM.
  subroutine colfile_set_verify(c, on)
    type(colfile_column), intent(inout) :: c
    logical, intent(in) :: on
    if (c_associated(c%ptr)) call cf_column_set_verify(c%ptr, merge(1_c_int, 0_c_int, on))
  end subroutine colfile_set_verify

  ! Whether the checksums and statistics recorded apply to the data: a
  ! COLFILE_EXT_* value (only CURRENT lets reads and checks use them).
  subroutine colfile_ext_state(c, state, stat, errmsg)
    type(colfile_column), intent(in) :: c
    integer, intent(out) :: state
    integer, intent(out), optional :: stat
    character(len=*), intent(inout), optional :: errmsg
    type(cf_error_t) :: err
    integer(c_int) :: s
    state = -1
    if (.not. cf_is_open(c%ptr, 'the column is not open', stat, errmsg)) return
    s = -1
    call cf_finish(cf_column_ext_state(c%ptr, s, err), err, stat, errmsg)
    state = int(s)
  end subroutine colfile_ext_state

  ! Read blob i (0 .. nfile - 1) whole and compare it with the metadata:
  ! status gets COLFILE_BLOB_* bits (COLFILE_BLOB_OK: none).  stat is for
  ! failures of the check itself, not for a damaged blob.
  subroutine colfile_verify_blob(c, i, status, stat, errmsg)
    type(colfile_column), intent(in) :: c
    integer(c_int64_t), intent(in) :: i
    integer, intent(out) :: status
    integer, intent(out), optional :: stat
    character(len=*), intent(inout), optional :: errmsg
    type(cf_error_t) :: err
    integer(c_int) :: s
    status = 0
    if (.not. cf_is_open(c%ptr, 'the column is not open', stat, errmsg)) return
    s = 0
    call cf_finish(cf_column_verify_blob(c%ptr, i, s, err), err, stat, errmsg)
    status = int(s)
  end subroutine colfile_verify_blob

  ! Every blob of the column: status gets the COLFILE_BLOB_* bits of all
  ! of them together, first_bad the first blob with any (-1: none).
  subroutine colfile_verify(c, status, first_bad, stat, errmsg)
    type(colfile_column), intent(in) :: c
    integer, intent(out) :: status
    integer(c_int64_t), intent(out), optional :: first_bad
    integer, intent(out), optional :: stat
    character(len=*), intent(inout), optional :: errmsg
    integer(c_int64_t) :: i, bad
    integer :: s
    status = 0
    bad = -1
    if (present(first_bad)) first_bad = -1
    if (.not. cf_is_open(c%ptr, 'the column is not open', stat, errmsg)) return
    do i = 0, cf_column_nfile(c%ptr) - 1
      ! without stat a failure stops there
      call colfile_verify_blob(c, i, s, stat, errmsg)
      if (present(stat)) then
        if (stat /= 0) return
      end if
      if (s /= 0 .and. bad < 0) bad = i
      status = ior(status, s)
    end do
    if (present(first_bad)) first_bad = bad
  end subroutine colfile_verify

  ! Make the column consistent with the data its blobs hold and commit
  ! (byte sums, CRC32C and statistics recomputed, bytes past the rows cut,
  ! stray blobs removed, the torn mark cleared); fixed gets the
  ! COLFILE_REPAIR_* bits of what changed.  The rows are not changed.
  subroutine colfile_repair(c, fixed, stat, errmsg)
    type(colfile_column), intent(inout) :: c
    integer, intent(out), optional :: fixed
    integer, intent(out), optional :: stat
    character(len=*), intent(inout), optional :: errmsg
    type(cf_error_t) :: err
    integer(c_int) :: bits
    bits = 0
    if (present(fixed)) fixed = 0
    if (.not. cf_is_open(c%ptr, 'the column is not open', stat, errmsg)) return
    call cf_finish(cf_column_repair(c%ptr, bits, err), err, stat, errmsg)
    if (present(fixed)) fixed = int(bits)
  end subroutine colfile_repair

  ! Statistics of chunk `block` of task `task` of a stream, component
  ! `component` (default 0); valid is 0 for a stream that records none.
  subroutine colfile_stream_chunk_stats(r, task, block, st, component, stat, errmsg)
    type(colfile_stream_reader), intent(in) :: r
    integer(c_int64_t), intent(in) :: task, block
    type(colfile_stats), intent(out) :: st
    integer(c_int64_t), intent(in), optional :: component
    integer, intent(out), optional :: stat
    character(len=*), intent(inout), optional :: errmsg
    type(cf_error_t) :: err
    if (.not. cf_is_open(r%ptr, 'the stream is not open', stat, errmsg)) return
    call cf_finish(cf_stream_chunk_stats(r%ptr, task, block, cf_opt(component, 0_c_int64_t), st, err), &
      err, stat, errmsg)
  end subroutine colfile_stream_chunk_stats

  ! Accessors, releases and lists of names (fortran/gen_wrap.py).
  include 'colfile_integrity_wrap.inc'

end module colfile_integrity
