! Statistics, verification and repair from Fortran (module colfile).
!   test_fortran_integrity self DIR          checks itself (CTest): chunk statistics of
!                                            what it wrote, a flipped byte found by
!                                            verify and a verifying read, repair
!   test_fortran_integrity stats DIR NAME    prints every chunk's statistics
!   test_fortran_integrity verify DIR NAME   prints every blob's status and the column's
!   test_fortran_integrity repair DIR NAME   repairs, prints what was fixed
!   test_fortran_integrity sstats DIR NAME   prints a stream's chunk statistics and checks
! The printing modes are compared with Python by tests/python/test_fortran_integrity.py;
! doubles are printed as the integers of their bits.
program test_fortran_integrity
  use, intrinsic :: iso_c_binding
  use colfile
  use colfile_test_check
  implicit none
  character(len=4096) :: dir
  character(len=256) :: name
  character(len=8) :: mode

  call get_command_argument(1, mode)
  call get_command_argument(2, dir)
  call get_command_argument(3, name)
  select case (mode)
  case ('self')
    call self_check()
    print '(a)', 'test_fortran_integrity: ok'
  case ('stats')
    call print_stats()
  case ('verify')
    call print_verify()
  case ('repair')
    call print_repair()
  case ('sstats')
    call print_stream()
  case default
    error stop 'mode: self, stats, verify, repair or sstats'
  end select

contains

  integer(c_int64_t) function bits(x)
    real(c_double), intent(in) :: x
    bits = transfer(x, 0_c_int64_t)
  end function bits

  subroutine print_record(prefix, s)
    character(len=*), intent(in) :: prefix
    type(colfile_stats), intent(in) :: s
    print '(a, 3(1x, i0), 2(1x, i0), 2(1x, i0), 3(1x, i0))', prefix, s%blob, s%first_row, s%rows, s%valid, &
      s%ordered, s%count, s%nan_count, bits(s%min), bits(s%max), bits(s%sum)
  end subroutine print_record

  subroutine print_stats()
    type(colfile_file) :: f
    type(colfile_column) :: c
    type(colfile_stats) :: s
    integer(c_int64_t) :: k, j
    character(len=48) :: prefix
    call colfile_open(f, dir)
    call colfile_column_open(c, f, name)
    do k = 0, colfile_chunk_count(c) - 1
      do j = 0, colfile_nmemb(c) - 1
        call colfile_chunk_stats(c, k, s, component=j)
        write(prefix, '(a, i0, 1x, i0)') 'chunk ', k, j
        call print_record(trim(prefix), s)
      end do
    end do
    call colfile_column_close(c)
    call colfile_close(f)
  end subroutine print_stats

  subroutine print_verify()
    type(colfile_file) :: f
    type(colfile_column) :: c
    integer(c_int64_t) :: i, bad
    integer :: s, state
    call colfile_open(f, dir)
    call colfile_column_open(c, f, name)
    call colfile_ext_state(c, state)
    print '(a, i0)', 'ext ', state
    do i = 0, colfile_nfile(c) - 1
      call colfile_verify_blob(c, i, s)
      print '(a, i0, 1x, i0)', 'blob ', i, s
    end do
    call colfile_verify(c, s, first_bad=bad)
    print '(a, i0, 1x, i0)', 'column ', s, bad
    call colfile_column_close(c)
    call colfile_close(f)
  end subroutine print_verify

  subroutine print_repair()
    type(colfile_file) :: f
    type(colfile_column) :: c
    integer :: fixed
    call colfile_open(f, dir, COLFILE_OPEN_WRITE)
    call colfile_column_open(c, f, name)
    call colfile_repair(c, fixed)
    print '(a, i0)', 'fixed ', fixed
    call colfile_column_close(c)
    call colfile_close(f)
  end subroutine print_repair

  ! Every chunk of every task: its statistics and whether its bytes match
  ! their CRC32C (the stat of colfile_stream_check_chunk).
  subroutine print_stream()
    type(colfile_file) :: f
    type(colfile_stream_reader) :: r
    type(colfile_stats) :: s
    integer(c_int64_t) :: t, b, j
    integer :: st
    character(len=512) :: msg
    character(len=64) :: prefix
    call colfile_open(f, dir)
    call colfile_stream_open(r, f, name)
    do t = 0, colfile_stream_ntasks(r) - 1
      b = 0
      do
        call colfile_stream_chunk_stats(r, t, b, s, stat=st)
        if (st == COLFILE_ERANGE) exit
        call check(st == 0, 'stream chunk statistics')
        do j = 0, colfile_stream_nmemb(r) - 1
          call colfile_stream_chunk_stats(r, t, b, s, component=j)
          write(prefix, '(a, i0, 1x, i0, 1x, i0)') 'chunk ', t, b, j
          call print_record(trim(prefix), s)
        end do
        msg = ''
        call colfile_stream_check_chunk(r, t, b, stat=st, errmsg=msg)
        print '(a, i0, 1x, i0, 1x, i0, 1x, a)', 'check ', t, b, st, trim(msg)
        b = b + 1
      end do
    end do
    call colfile_stream_close(r)
    call colfile_close(f)
  end subroutine print_stream

  ! Column x: f8 x 2, 10 rows in 2 blobs, 3 rows a chunk (chunks of 3 and
  ! 2 rows in each blob), a NaN in row 4; column k: i8 beyond 2**53.
  subroutine self_check()
    type(colfile_file) :: f
    type(colfile_column) :: c
    type(colfile_stats) :: s
    real(c_double) :: x(2, 10), back(2, 10)
    integer(c_int64_t) :: k(5), r, ch
    integer :: state, status, fixed, st, u
    integer(c_int64_t) :: bad
    character(len=512) :: msg
    character(len=1) :: byte
    real(c_double) :: nan
    nan = transfer(-2251799813685248_c_int64_t, 1.0_c_double)  ! a quiet NaN
    do r = 1, 10
      x(:, r) = [r * 1.5d0, -r * 1.0d0]
    end do
    x(1, 5) = nan
    call colfile_open(f, dir, COLFILE_OPEN_WRITE + COLFILE_OPEN_CREATE + COLFILE_OPEN_TRUNCATE)
    call colfile_column_create(c, f, 'x', 'f8', 10_c_int64_t, nmemb=2_c_int64_t, nfile=2_c_int64_t)
    call colfile_set_chunk_rows(c, 3_c_int64_t)
    call colfile_write(c, 0_c_int64_t, x)
    call colfile_column_close(c)
    k = [2_c_int64_t**53 + 1, 3_c_int64_t, -7_c_int64_t, 2_c_int64_t**60, 0_c_int64_t]
    call colfile_column_create(c, f, 'k', 'i8', 5_c_int64_t)
    call colfile_write(c, 0_c_int64_t, k)
    ! too late: data was written
    call colfile_set_chunk_rows(c, 2_c_int64_t, stat=st, errmsg=msg)
    call check(st == COLFILE_EARG, 'chunk rows after a write: ' // trim(msg))
    call colfile_column_close(c)

    call colfile_column_open(c, f, 'x')
    call check(colfile_chunk_rows(c) == 3 .and. colfile_chunk_count(c) == 4, 'chunks of x')
    call colfile_ext_state(c, state)
    call check(state == COLFILE_EXT_CURRENT, 'statistics current')
    ! chunk 1: rows 3..4 of blob 0 (x(:, 4:5)), component 0 holds the NaN
    call colfile_chunk_stats(c, 1_c_int64_t, s)
    call check(s%valid == 1 .and. s%blob == 0 .and. s%first_row == 3 .and. s%rows == 2, 'chunk 1 placement')
    call check(s%count == 2 .and. s%nan_count == 1 .and. s%min == 6.0d0 .and. s%max == 6.0d0 .and. &
      s%sum == 6.0d0, 'chunk 1 component 0')
    call colfile_chunk_stats(c, 2_c_int64_t, s, component=1_c_int64_t)
    call check(s%blob == 1 .and. s%first_row == 5 .and. s%rows == 3 .and. s%min == -8.0d0 .and. &
      s%max == -6.0d0 .and. s%sum == -21.0d0 .and. s%nan_count == 0, 'chunk 2 component 1')
    call colfile_chunk_stats(c, 4_c_int64_t, s, stat=st, errmsg=msg)
    call check(st == COLFILE_ERANGE, 'no chunk 4: ' // trim(msg))
    call colfile_chunk_stats(c, 0_c_int64_t, s, component=2_c_int64_t, stat=st)
    call check(st == COLFILE_ERANGE, 'no component 2')
    call colfile_verify(c, status, first_bad=bad)
    call check(status == COLFILE_BLOB_OK .and. bad == -1, 'x verifies')
    call colfile_column_close(c)
    call colfile_column_open(c, f, 'k')
    call colfile_chunk_stats(c, 0_c_int64_t, s)
    ! the exact sum 2**60 + 2**53 - 3, correctly rounded
    call check(s%sum == real(2_c_int64_t**60, c_double) + real(2_c_int64_t**53, c_double) .and. &
      s%min == -7.0d0 .and. s%max == real(2_c_int64_t**60, c_double), 'i8 statistics')
    call colfile_column_close(c)

    ! Flip a byte of blob 1 (row 5's first element).
    open(newunit=u, file=trim(dir) // '/x/000001', access='stream', form='unformatted', status='old', &
      action='readwrite')
    read(u, pos=1) byte
    write(u, pos=1) achar(ieor(iachar(byte), 1))
    close(u)
    call colfile_close(f)
    call colfile_open(f, dir)
    call colfile_column_open(c, f, 'x')
    call colfile_verify_blob(c, 0_c_int64_t, status)
    call check(status == COLFILE_BLOB_OK, 'blob 0 intact')
    call colfile_verify(c, status, first_bad=bad)
    call check(iand(status, COLFILE_BLOB_CRC_MISMATCH) /= 0 .and. iand(status, COLFILE_BLOB_SUM_MISMATCH) /= 0 &
      .and. bad == 1, 'the flipped byte is found in blob 1')
    call colfile_set_verify(c, .true.)
    call colfile_read(c, 0_c_int64_t, back, stat=st, errmsg=msg)
    call check(st == COLFILE_ECHECKSUM .and. index(msg, '000001') > 0, 'a verifying read fails: ' // trim(msg))
    msg = ''
    call colfile_repair(c, fixed, stat=st, errmsg=msg)
    call check(st == COLFILE_EREADONLY, 'repair needs a writable File: ' // trim(msg))
    call colfile_column_close(c)
    call colfile_close(f)

    call colfile_open(f, dir, COLFILE_OPEN_WRITE)
    call colfile_column_open(c, f, 'x')
    call colfile_repair(c, fixed)
    call check(iand(fixed, COLFILE_REPAIR_SUMS) /= 0 .and. iand(fixed, COLFILE_REPAIR_CRC) /= 0, 'repair fixed')
    call colfile_column_close(c)
    call colfile_column_open(c, f, 'x')
    call colfile_verify(c, status)
    call check(status == COLFILE_BLOB_OK, 'x verifies after the repair')
    call colfile_set_verify(c, .true.)
    call colfile_read(c, 0_c_int64_t, back)
    call check(back(1, 6) /= x(1, 6) .and. all(back(:, 7:) == x(:, 7:)), 'the repair keeps the rows')
    ! the statistics are those of the rows as they are now
    ch = 2
    call colfile_chunk_stats(c, ch, s)
    call check(s%valid == 1 .and. s%min == back(1, 6) .and. s%min /= 9.0d0, 'statistics recomputed')
    call colfile_column_close(c)
    call colfile_close(f)
  end subroutine self_check

end program test_fortran_integrity
