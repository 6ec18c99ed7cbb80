! colfile_c - what the Fortran modules colfile and colfile_mpi share: the
! C interfaces of libcolfile (include/colfile.h) through iso_c_binding, the
! handle types, the string conversions at the boundary (blank padded <->
! NUL terminated) and the error reporting of the optional stat/errmsg
! arguments.  Programs use module colfile (and colfile_mpi), not this one.
module colfile_c
  use, intrinsic :: iso_c_binding
  use, intrinsic :: iso_fortran_env, only: error_unit
  implicit none
  private

  ! A File (a directory) opened by colfile_open, colfile_create or
  ! colfile_mpi_open.
  type, public :: colfile_file
    type(c_ptr) :: ptr = c_null_ptr
  end type colfile_file

  ! A column (or the attributes of a group or of the File: name "." or
  ! "group/.") opened or created on a colfile_file.
  type, public :: colfile_column
    type(c_ptr) :: ptr = c_null_ptr
  end type colfile_column

  ! include/colfile.h: struct cf_error.
  type, bind(c), public :: cf_error_t
    integer(c_int) :: code = 0
    integer(c_int) :: source_line = 0
    type(c_ptr) :: source_file = c_null_ptr
    character(kind=c_char) :: message(1024) = c_null_char
  end type cf_error_t

  ! Error codes (include/colfile_errors.h): the values of stat.
  include 'colfile_c_const.inc'

  public :: f_c_string, c_f_string, c_f_names, cf_finish, cf_finish_names, cf_fail, cf_no_error, cf_is_open, cf_opt
  public :: cf_column_dtype, cf_column_nmemb, cf_column_nfile
  public :: int_dtype, int_dtype_for, str_dtype, rw_layout, strings_to_c, strings_from_c
  public :: rw_begin, rw_refused, rw_end, i64toa

  ! One read or write of a Fortran array, between rw_begin (the buffer
  ! dtype, the rows and strides the array's shape gives, S values made C
  ! strings) and rw_end (S values made Fortran strings, the outcome).  The
  ! C call in between is the caller's: serial or collective.
  type, public :: rw_call
    character(kind=c_char, len=:), allocatable :: dtype  ! NUL terminated
    integer(c_int64_t) :: count = 0, row_stride = 0, width = 0, nelem = 0
    type(c_ptr) :: buf = c_null_ptr, data = c_null_ptr
    logical :: ok = .false., is_str = .false., reading = .false.
    integer :: lstat = 0
    character(len=512) :: lmsg = ''
    character(kind=c_char), allocatable :: copy(:)
  end type rw_call

  ! v if present, else the default: a 64-bit count, or a flags argument
  ! (default integer) as the C int it goes to C as.
  interface cf_opt
    module procedure cf_opt_i64, cf_opt_flags
  end interface cf_opt

  include 'colfile_c_bind.inc'

contains

  ! `s` without trailing blanks, NUL terminated.
  function f_c_string(s) result(r)
    character(len=*), intent(in) :: s
    character(kind=c_char, len=:), allocatable :: r
    r = trim(s) // c_null_char
  end function f_c_string

  ! A copy of the C string at p ('' for NULL).
  function c_f_string(p) result(r)
    type(c_ptr), intent(in) :: p
    character(len=:), allocatable :: r
    character(kind=c_char), pointer :: chars(:)
    integer :: n, i
    if (.not. c_associated(p)) then
      r = ''
      return
    end if
    n = int(c_strlen(p))
    call c_f_pointer(p, chars, [n])
    allocate(character(len=n) :: r)
    do i = 1, n
      r(i:i) = chars(i)
    end do
  end function c_f_string

  ! The `count` C strings of a list from libcolfile as a Fortran array
  ! (each blank padded to the longest), and the list freed.
  subroutine c_f_names(list, count, names)
    type(c_ptr), intent(in) :: list
    integer(c_int64_t), intent(in) :: count
    character(len=:), allocatable, intent(out) :: names(:)
    type(c_ptr), pointer :: ptrs(:)
    integer :: width, i
    width = 0
    if (count > 0) then
      call c_f_pointer(list, ptrs, [count])
      do i = 1, int(count)
        width = max(width, int(c_strlen(ptrs(i))))
      end do
    end if
    allocate(character(len=width) :: names(count))
    do i = 1, int(count)
      names(i) = c_f_string(ptrs(i))
    end do
    call cf_names_free(list, count)
  end subroutine c_f_names

  ! Report the outcome of a C call: stat gets rc, errmsg the message on
  ! failure; without stat a failure stops the program with the message.
  subroutine cf_finish(rc, err, stat, errmsg)
    integer(c_int), intent(in) :: rc
    type(cf_error_t), intent(in) :: err
    integer, intent(out), optional :: stat
    character(len=*), intent(inout), optional :: errmsg
    character(len=:), allocatable :: msg
    integer :: i, n
    if (rc == 0) then
      if (present(stat)) stat = 0
      return
    end if
    n = 0
    do i = 1, size(err%message)
      if (err%message(i) == c_null_char) exit
      n = i
    end do
    allocate(character(len=n) :: msg)
    do i = 1, n
      msg(i:i) = err%message(i)
    end do
    if (n == 0) msg = 'colfile error ' // itoa(int(rc))
    call cf_fail(int(rc), msg, stat, errmsg)
  end subroutine cf_finish

  ! A failure found on the Fortran side (or passed on from cf_finish).
  subroutine cf_fail(code, msg, stat, errmsg)
    integer, intent(in) :: code
    character(len=*), intent(in) :: msg
    integer, intent(out), optional :: stat
    character(len=*), intent(inout), optional :: errmsg
    if (present(errmsg)) errmsg = msg
    if (present(stat)) then
      stat = code
    else
      write(error_unit, '(a)') 'colfile: ' // msg
      error stop 1
    end if
  end subroutine cf_fail

  ! The outcome of a C call that lists names: names gets the `count`
  ! names at `list` (freed) or, on failure, none.
  subroutine cf_finish_names(rc, list, count, err, names, stat, errmsg)
    integer(c_int), intent(in) :: rc
    type(c_ptr), intent(in) :: list
    integer(c_int64_t), intent(in) :: count
    type(cf_error_t), intent(in) :: err
    character(len=:), allocatable, intent(out) :: names(:)
    integer, intent(out), optional :: stat
    character(len=*), intent(inout), optional :: errmsg
    if (rc == 0) then
      call c_f_names(list, count, names)
    else
      allocate(character(len=0) :: names(0))
    end if
    call cf_finish(rc, err, stat, errmsg)
  end subroutine cf_finish_names

  ! Whether handle p is open; if not, the failure `msg` (COLFILE_EARG).
  logical function cf_is_open(p, msg, stat, errmsg)
    type(c_ptr), intent(in) :: p
    character(len=*), intent(in) :: msg
    integer, intent(out), optional :: stat
    character(len=*), intent(inout), optional :: errmsg
    cf_is_open = c_associated(p)
    if (.not. cf_is_open) call cf_fail(COLFILE_EARG, msg, stat, errmsg)
  end function cf_is_open

  ! Success of a procedure that calls no C function that can fail.
  subroutine cf_no_error(stat)
    integer, intent(out), optional :: stat
    if (present(stat)) stat = 0
  end subroutine cf_no_error

  integer(c_int64_t) function cf_opt_i64(v, default)
    integer(c_int64_t), intent(in), optional :: v
    integer(c_int64_t), intent(in) :: default
    cf_opt_i64 = default
    if (present(v)) cf_opt_i64 = v
  end function cf_opt_i64

  integer(c_int) function cf_opt_flags(v, default)
    integer, intent(in), optional :: v
    integer, intent(in) :: default
    cf_opt_flags = int(default, c_int)
    if (present(v)) cf_opt_flags = int(v, c_int)
  end function cf_opt_flags

  ! A 64-bit integer as text, for messages (trim the result).
  function i64toa(i) result(r)
    integer(c_int64_t), intent(in) :: i
    character(len=24) :: r
    write(r, '(i0)') i
  end function i64toa

  function itoa(i) result(r)
    integer, intent(in) :: i
    character(len=:), allocatable :: r
    character(len=24) :: buf
    write(buf, '(i0)') i
    r = trim(buf)
  end function itoa

  ! The buffer dtype for Fortran integers of `width` bytes: unsigned when
  ! the column holds unsigned integers of that width, so that their bits
  ! pass unchanged (a u8 above 2**63-1 reads as a negative integer(8)).
  function int_dtype(c, width) result(r)
    type(colfile_column), intent(in) :: c
    integer, intent(in) :: width
    character(len=:), allocatable :: r
    if (c_associated(c%ptr)) then
      r = int_dtype_for(c_f_string(cf_column_dtype(c%ptr)), width)
    else
      r = 'i' // itoa(width)
    end if
  end function int_dtype

  ! The same for data of dtype `col` (a stream's).
  function int_dtype_for(col, width) result(r)
    character(len=*), intent(in) :: col
    integer, intent(in) :: width
    character(len=:), allocatable :: r
    r = 'i' // itoa(width)
    if (len_trim(col) >= 3) then
      if (col(2:2) == 'u' .and. trim(col(3:)) == itoa(width)) r = 'u' // itoa(width)
    end if
  end function int_dtype_for

  function str_dtype(n) result(r)
    integer, intent(in) :: n
    character(len=:), allocatable :: r
    r = 'S' // itoa(n)
  end function str_dtype

  ! Rows and strides of a Fortran array given to a read or write of column
  ! c: a rank-2 array is (nmemb, rows), a rank-1 array rows*nmemb elements
  ! (rows for a scalar column).  ok is false (and stat/errmsg set) if the
  ! shape does not fit.
  subroutine rw_layout(c, rank, nelem, dim1, width, count, row_stride, ok, stat, errmsg)
    type(colfile_column), intent(in) :: c
    integer, intent(in) :: rank
    integer(c_int64_t), intent(in) :: nelem, dim1, width
    integer(c_int64_t), intent(out) :: count, row_stride
    logical, intent(out) :: ok
    integer, intent(out), optional :: stat
    character(len=*), intent(inout), optional :: errmsg
    integer(c_int64_t) :: nmemb
    ok = .false.
    count = 0
    row_stride = 0
    if (.not. c_associated(c%ptr)) then
      call cf_fail(COLFILE_EARG, 'the column is not open', stat, errmsg)
      return
    end if
    nmemb = max(cf_column_nmemb(c%ptr), 1_c_int64_t)
    if (rank == 2 .and. dim1 /= nmemb) then
      call cf_fail(COLFILE_EARG, c_f_string(cf_column_dtype(c%ptr)) // ' column of ' // &
        itoa(int(nmemb)) // ' elements per row: the array''s first dimension is ' // &
        itoa(int(dim1)), stat, errmsg)
      return
    end if
    if (mod(nelem, nmemb) /= 0) then
      call cf_fail(COLFILE_EARG, 'an array of ' // itoa(int(nelem)) // &
        ' elements does not hold whole rows of ' // itoa(int(nmemb)) // ' elements', stat, errmsg)
      return
    end if
    count = nelem / nmemb
    row_stride = nmemb * width
    ok = .true.
  end subroutine rw_layout

  ! Prepare call r for `nelem` elements at p (rank, first dimension dim1)
  ! of Fortran type `dtype` (S values: 'S', `width` their length) for
  ! column c.  When the shape does not fit, r%ok is false with the message
  ! kept, and r%count is -1: a collective call then goes ahead so that the
  ! C layer refuses it on every rank rather than leave the others waiting.
  subroutine rw_begin(r, c, rank, nelem, dim1, p, dtype, width, is_str, reading)
    type(rw_call), intent(out), target :: r
    type(colfile_column), intent(in) :: c
    integer, intent(in) :: rank, width
    integer(c_int64_t), intent(in) :: nelem, dim1
    type(c_ptr), intent(in) :: p
    character(len=*), intent(in) :: dtype
    logical, intent(in) :: is_str, reading
    r%width = width
    r%nelem = nelem
    r%data = p
    r%buf = p
    r%is_str = is_str
    r%reading = reading
    if (is_str) then
      r%dtype = f_c_string(str_dtype(width))
    else
      r%dtype = f_c_string(dtype)
    end if
    call rw_layout(c, rank, nelem, dim1, r%width, r%count, r%row_stride, r%ok, r%lstat, r%lmsg)
    if (.not. r%ok) then
      r%count = -1
      r%row_stride = r%width
    else if (is_str .and. .not. reading) then
      call strings_to_c(p, nelem, r%width, r%copy)
      r%buf = c_loc(r%copy)
    end if
  end subroutine rw_begin

  ! For a call no other rank waits on: true (and stat/errmsg set) if the
  ! shape did not fit, so that the caller returns without calling C.
  logical function rw_refused(r, stat, errmsg)
    type(rw_call), intent(in) :: r
    integer, intent(out), optional :: stat
    character(len=*), intent(inout), optional :: errmsg
    rw_refused = .not. r%ok
    if (rw_refused) call cf_fail(r%lstat, trim(r%lmsg), stat, errmsg)
  end function rw_refused

  ! The outcome rc of the C call made for r: S values read become blank
  ! padded; a rank whose array did not fit reports its own message.
  subroutine rw_end(r, rc, err, stat, errmsg)
    type(rw_call), intent(in) :: r
    integer(c_int), intent(in) :: rc
    type(cf_error_t), intent(in) :: err
    integer, intent(out), optional :: stat
    character(len=*), intent(inout), optional :: errmsg
    if (rc == 0 .and. r%is_str .and. r%reading) call strings_from_c(r%data, r%nelem * r%width)
    if (r%ok .or. rc == 0) then
      call cf_finish(rc, err, stat, errmsg)
    else
      call cf_fail(int(rc), trim(r%lmsg), stat, errmsg)
    end if
  end subroutine rw_end

  ! A copy of `n` blank-padded strings of `width` bytes at p with the
  ! trailing blanks of each made NULs (numpy's padding of S values).
  subroutine strings_to_c(p, n, width, out)
    type(c_ptr), intent(in) :: p
    integer(c_int64_t), intent(in) :: n, width
    character(kind=c_char), allocatable, target, intent(out) :: out(:)
    character(kind=c_char), pointer :: bytes(:)
    integer(c_int64_t) :: i, j
    allocate(out(max(n * width, 1_c_int64_t)))
    if (n * width == 0) return
    call c_f_pointer(p, bytes, [n * width])
    out(1:n * width) = bytes
    do i = 0, n - 1
      do j = width, 1, -1
        if (out(i * width + j) /= ' ') exit
        out(i * width + j) = c_null_char
      end do
    end do
  end subroutine strings_to_c

  ! Read S values: NUL padding becomes blank padding.
  subroutine strings_from_c(p, nbytes)
    type(c_ptr), intent(in) :: p
    integer(c_int64_t), intent(in) :: nbytes
    character(kind=c_char), pointer :: bytes(:)
    if (nbytes == 0) return
    call c_f_pointer(p, bytes, [nbytes])
    where (bytes == c_null_char) bytes = ' '
  end subroutine strings_from_c

end module colfile_c
