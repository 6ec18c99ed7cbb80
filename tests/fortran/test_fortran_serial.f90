! The serial module colfile: every dtype through the matching Fortran
! type, vector columns as (nmemb, rows) arrays, row ranges, attributes of
! the File, a group and a column, listing, and stat/errmsg on failures.
! Argument: a scratch directory (emptied first).
program test_fortran_serial
  use, intrinsic :: iso_c_binding
  use colfile
  use colfile_test_check
  implicit none
  character(len=4096) :: dir
  type(colfile_file) :: f
  type(colfile_column) :: c
  integer :: st, i
  character(len=256) :: msg
  integer(c_int64_t), parameter :: n = 7

  call get_command_argument(1, dir)
  call colfile_open(f, dir, COLFILE_OPEN_WRITE + COLFILE_OPEN_CREATE + COLFILE_OPEN_TRUNCATE)

  call scalar_dtypes()
  call vector_column()
  call strings_and_bools()
  call attributes()
  call listing()
  call errors()
  call colfile_close(f)
  print '(a)', 'test_fortran_serial: ok'

contains

  subroutine scalar_dtypes()
    integer(c_int8_t) :: a1(n), b1(n)
    integer(c_int16_t) :: a2(n)
    integer(c_int32_t) :: a4(n), b4(n)
    integer(c_int64_t) :: a8(n), b8(n)
    real(c_float) :: r4(n), s4(n)
    real(c_double) :: r8(n), s8(n)
    complex(c_float_complex) :: z4(n)
    complex(c_double_complex) :: z8(n)
    do i = 1, int(n)
      a1(i) = int(i - 4, c_int8_t)
      a2(i) = int(-300 * i, c_int16_t)
      a4(i) = int(100000 * i, c_int32_t)
      a8(i) = huge(0_c_int64_t) - i
      r4(i) = 1.5 * i
      r8(i) = 1.0d0 / i
      z4(i) = cmplx(i, -i, c_float_complex)
      z8(i) = cmplx(0.25d0 * i, 3.0d0, c_double_complex)
    end do
    call put_column(f, 'i1', 'i1', a1)
    call colfile_column_open(c, f, 'i1')
    b1 = 0
    call colfile_read(c, 0_c_int64_t, b1)
    call check(all(a1 == b1), 'i1')
    call check(colfile_dtype(c) == '<i1' .and. colfile_size(c) == n, 'i1 dtype and size')
    call colfile_column_close(c)

    call put_column(f, 'i2', 'i2', a2)
    call colfile_column_create(c, f, 'i4', 'i4', n, nfile=3_c_int64_t)
    ! Two ranges, across blobs.
    call colfile_write(c, 0_c_int64_t, a4(1:3))
    call colfile_write(c, 3_c_int64_t, a4(4:))
    call colfile_column_close(c)
    call put_column(f, 'i8', '>i8', a8)
    call put_column(f, 'f4', 'f4', r4)
    call put_column(f, 'f8', 'f8', r8)
    call put_column(f, 'c8', 'c8', z4)
    call put_column(f, 'c16', 'c16', z8)
    ! u8 keeps its bits through integer(8); f2 through real(4).
    call put_column(f, 'u8', 'u8', [-1_c_int64_t, 5_c_int64_t])
    call put_column(f, 'f2', 'f2', [0.5_c_float, -2.0_c_float])

    call check_column(f, 'i2', a2, 'i2')
    call colfile_column_open(c, f, 'i4')
    call check(colfile_nfile(c) == 3, 'i4 nfile')
    b4 = 0
    call colfile_read(c, 2_c_int64_t, b4(3:5))
    call check(all(a4(3:5) == b4(3:5)) .and. b4(1) == 0, 'i4 middle range')
    call colfile_column_close(c)
    call colfile_column_open(c, f, 'i8')
    call check(colfile_dtype(c) == '>i8', 'big endian dtype kept')
    call colfile_read(c, 0_c_int64_t, b8)
    call check(all(a8 == b8), 'i8 (big endian)')
    call colfile_column_close(c)
    call colfile_column_open(c, f, 'f4')
    call colfile_read(c, 0_c_int64_t, s4)
    call check(all(r4 == s4), 'f4')
    ! Converted on read: f4 into real(8).
    call colfile_read(c, 0_c_int64_t, s8)
    call check(all(real(r4, c_double) == s8), 'f4 read as f8')
    call colfile_column_close(c)
    call check_column(f, 'f8', r8, 'f8')
    call check_column(f, 'c8', z4, 'c8')
    call check_column(f, 'c16', z8, 'c16')
    call colfile_column_open(c, f, 'u8')
    call colfile_read(c, 0_c_int64_t, b8(1:2))
    call check(b8(1) == -1 .and. b8(2) == 5, 'u8 bits')
    call colfile_column_close(c)
    call colfile_column_open(c, f, 'f2')
    call colfile_read(c, 0_c_int64_t, s4(1:2))
    call check(s4(1) == 0.5 .and. s4(2) == -2.0, 'f2 through real(4)')
    call colfile_column_close(c)
  end subroutine scalar_dtypes

  ! ('f8', 3): a real(8) (3, rows) array, row r at pos(:, r+1).
  subroutine vector_column()
    real(c_double) :: pos(3, n), back(3, n), flat(3 * n)
    integer :: j
    do i = 1, int(n)
      do j = 1, 3
        pos(j, i) = 10.0d0 * i + j
      end do
    end do
    call colfile_column_create(c, f, 'part/pos', 'f8', n, nmemb=3_c_int64_t, nfile=2_c_int64_t)
    call colfile_write(c, 0_c_int64_t, pos(:, 1:4))
    call colfile_write(c, 4_c_int64_t, pos(:, 5:))
    call colfile_column_close(c)
    call colfile_column_open(c, f, 'part/pos')
    call check(colfile_nmemb(c) == 3 .and. colfile_size(c) == n, 'vector nmemb and size')
    back = 0
    call colfile_read(c, 0_c_int64_t, back)
    call check(all(pos == back), 'vector column')
    ! A rank-1 array holds whole rows too.
    call colfile_read(c, 0_c_int64_t, flat)
    call check(all(reshape(pos, [3 * n]) == flat), 'vector column into a flat array')
    ! Rows 2..3 only.
    back = 0
    call colfile_read(c, 2_c_int64_t, back(:, 1:2))
    call check(all(back(:, 1:2) == pos(:, 3:4)), 'vector row range')
    ! Zero rows.
    call colfile_read(c, 7_c_int64_t, back(:, 1:0))
    ! Listed rows, in any order, repeats allowed.
    back = 0
    call colfile_read_rows(c, [6_c_int64_t, 0_c_int64_t, 6_c_int64_t], back(:, 1:3))
    call check(all(back(:, 1) == pos(:, 7)) .and. all(back(:, 2) == pos(:, 1)) .and. all(back(:, 3) == pos(:, 7)), &
      'listed rows')
    call colfile_read_rows(c, [1_c_int64_t, 2_c_int64_t], back(:, 1:3), stat=st, errmsg=msg)
    call check(st == COLFILE_EARG .and. index(msg, '2 rows listed') > 0, 'listed rows and array differ: ' // trim(msg))
    call colfile_read_rows(c, [9_c_int64_t], back(:, 1:1), stat=st)
    call check(st == COLFILE_ERANGE, 'listed row out of range: COLFILE_ERANGE')
    ! Every third row from row 1: rows 1 and 4 (as many as the array holds).
    back = 0
    call colfile_read_step(c, 1_c_int64_t, 3_c_int64_t, back(:, 1:2))
    call check(all(back(:, 1) == pos(:, 2)) .and. all(back(:, 2) == pos(:, 5)), 'rows by step')
    call colfile_column_close(c)
  end subroutine vector_column

  subroutine strings_and_bools()
    character(len=5) :: s(3), t(3)
    character(len=8) :: wide(3)
    logical(c_bool) :: b(4)
    s = [character(len=5) :: 'ab', 'hello', '']
    call put_column(f, 'name', 'S5', s)
    call colfile_column_open(c, f, 'name')
    t = 'xxxxx'
    call colfile_read(c, 0_c_int64_t, t)
    call check(all(s == t), 'S5 strings')
    ! Into a wider character: blank padded.
    call colfile_read(c, 0_c_int64_t, wide)
    call check(wide(2) == 'hello   ' .and. wide(1) == 'ab', 'S5 into character(8)')
    call colfile_column_close(c)
    b = [.true., .false., .false., .true.]
    call put_column(f, 'flag', 'b1', b)
    call check_column(f, 'flag', b, 'b1')
  end subroutine strings_and_bools

  subroutine attributes()
    type(colfile_column) :: a
    real(c_double) :: x
    integer(c_int64_t) :: k
    integer(c_int32_t) :: k4
    real(c_double), allocatable :: v(:)
    integer(c_int64_t), allocatable :: iv(:)
    character(len=:), allocatable :: s, names(:)
    ! On the File.
    call colfile_column_open(a, f, '.')
    call colfile_attr_set(a, 'boxsize', 250.0d0)
    call colfile_attr_set(a, 'code', 'MP2C run 7   ')
    call colfile_column_close(a)
    ! On a group (made by part/pos).
    call colfile_column_open(a, f, 'part/.')
    call colfile_attr_set(a, 'npart', 7_c_int64_t)
    call colfile_column_close(a)
    ! On a column.
    call colfile_column_open(a, f, 'part/pos')
    call colfile_attr_set(a, 'units', [1.0d0, 0.001d0, 3.5d0])
    call colfile_attr_set(a, 'ids', [3_c_int64_t, -4_c_int64_t])
    call colfile_attr_set(a, 'nbins', 12_c_int32_t)
    call colfile_column_close(a)

    call colfile_column_open(a, f, '.')
    call colfile_attr_get(a, 'boxsize', x)
    call check(x == 250.0d0, 'File attribute')
    call colfile_attr_get(a, 'code', s)
    call check(s == 'MP2C run 7', 'string attribute (trailing blanks dropped)')
    call colfile_column_close(a)
    call colfile_column_open(a, f, 'part/.')
    call colfile_attr_get(a, 'npart', k)
    call check(k == 7, 'group attribute')
    call colfile_column_close(a)
    call colfile_column_open(a, f, 'part/pos')
    call colfile_attr_get(a, 'units', v)
    call check(size(v) == 3 .and. all(v == [1.0d0, 0.001d0, 3.5d0]), 'f8 array attribute')
    call colfile_attr_get(a, 'ids', iv)
    call check(size(iv) == 2 .and. all(iv == [3_c_int64_t, -4_c_int64_t]), 'i8 array attribute')
    call colfile_attr_get(a, 'nbins', k4)
    call check(k4 == 12, 'i4 attribute')
    ! Converted: an i4 attribute read as real(8).
    call colfile_attr_get(a, 'nbins', x)
    call check(x == 12.0d0, 'i4 attribute read as real(8)')
    call check(colfile_attr_count(a, 'units') == 3, 'attribute count')
    call colfile_attr_names(a, names)
    call check(size(names) == 3, 'three attribute names')
    call check(names(1) == 'ids' .and. names(2) == 'nbins' .and. names(3) == 'units', 'attribute names sorted')
    call colfile_attr_delete(a, 'ids')
    msg = ''
    call colfile_attr_get(a, 'ids', iv, stat=st, errmsg=msg)
    call check(st == COLFILE_ENOENT, 'deleted attribute is gone')
    call check(colfile_attr_count(a, 'ids', stat=st) == 0 .and. st == COLFILE_ENOENT, 'no count of a deleted attribute')
    call check(index(msg, 'part/pos') > 0 .and. index(msg, 'ids') > 0, 'message names column and attribute: ' &
      // trim(msg))
    call check(size(iv) == 0, 'no elements for a missing attribute')
    call colfile_column_close(a)
  end subroutine attributes

  subroutine listing()
    character(len=:), allocatable :: names(:)
    call colfile_list(f, names)
    call check(size(names) == 13, 'thirteen columns listed')
    call check(any(names == 'part/pos') .and. any(names == 'c16') .and. any(names == 'name'), 'listed names')
    call colfile_remove(f, 'u8')
    call colfile_list(f, names)
    call check(size(names) == 12 .and. .not. any(names == 'u8'), 'removed column not listed')
  end subroutine listing

  subroutine errors()
    type(colfile_file) :: g
    real(c_double) :: wrong(2, 3)
    msg = ''
    call colfile_column_open(c, f, 'no/such', stat=st, errmsg=msg)
    call check(st == COLFILE_ENOENT, 'missing column: COLFILE_ENOENT')
    call check(index(msg, 'no/such') > 0, 'message names the column: ' // trim(msg))
    call check(.not. colfile_column_is_open(c), 'no handle after a failure')
    call check(colfile_size(c) == -1 .and. colfile_nmemb(c) == -1 .and. colfile_nfile(c) == -1 &
      .and. colfile_dtype(c) == '' .and. colfile_name(c) == '', 'accessors of a handle not open')
    call colfile_column_flush(c, stat=st)
    call check(st == COLFILE_EARG, 'flush of a handle not open: COLFILE_EARG')
    call colfile_column_create(c, f, 'bad name', 'f8', 1_c_int64_t, stat=st)
    call check(st == COLFILE_ENAME, 'bad name: COLFILE_ENAME')
    call colfile_column_create(c, f, 'x', 'f7', 1_c_int64_t, stat=st, errmsg=msg)
    call check(st == COLFILE_EDTYPE .and. index(msg, 'f7') > 0, 'bad dtype: ' // trim(msg))
    call colfile_open(g, trim(dir) // '/nowhere', stat=st, errmsg=msg)
    call check(st /= 0 .and. index(msg, 'nowhere') > 0, 'missing File: ' // trim(msg))
    ! A (2, rows) array for a column of 3 elements per row.
    call colfile_column_open(c, f, 'part/pos')
    call colfile_read(c, 0_c_int64_t, wrong, stat=st, errmsg=msg)
    call check(st == COLFILE_EARG .and. index(msg, 'first dimension') > 0, 'shape mismatch: ' // trim(msg))
    call colfile_read(c, 6_c_int64_t, wrong(:, 1:1), stat=st)
    call check(st == COLFILE_EARG, 'shape mismatch of one row')
    call colfile_column_close(c)
    call colfile_column_open(c, f, 'f8')
    call colfile_read(c, 6_c_int64_t, wrong(1, :), stat=st, errmsg=msg)
    call check(st == COLFILE_ERANGE, 'rows past the end: COLFILE_ERANGE ' // trim(msg))
    call colfile_column_close(c)
    ! Writing to a read-only File.
    call colfile_open(g, dir)
    call colfile_column_open(c, g, 'f8')
    call colfile_write(c, 0_c_int64_t, [1.0d0], stat=st)
    call check(st == COLFILE_EREADONLY, 'read-only: COLFILE_EREADONLY')
    call colfile_column_close(c)
    call colfile_close(g)
    ! Success sets stat to 0.
    st = 99
    call colfile_column_open(c, f, 'f8', stat=st)
    call check(st == 0, 'stat 0 on success')
    call colfile_column_close(c, stat=st)
  end subroutine errors

end program test_fortran_serial
