! The Fortran side of the cross-language test (tests/python/test_fortran.py):
!   fortran_cross write DIR   writes a particle File from Fortran
!   fortran_cross read DIR    reads one written by Python and checks every
!                             value; exits non-zero naming the first wrong one
! Values follow formulas both sides compute in IEEE double the same way.
program fortran_cross
  use, intrinsic :: iso_c_binding
  use colfile
  use colfile_test_check
  implicit none
  integer(c_int64_t), parameter :: n = 10
  character(len=16) :: mode
  character(len=4096) :: dir
  real(c_double) :: pos(3, n)
  integer(c_int64_t) :: id(n)
  real(c_float) :: mass(n)
  integer(c_int32_t) :: ptype(n)
  character(len=6) :: pname(n)
  logical(c_bool) :: flag(n)
  complex(c_double_complex) :: z(n)
  integer :: r, j

  call check_prefix('fortran_cross: wrong ')
  call get_command_argument(1, mode)
  call get_command_argument(2, dir)
  do r = 0, int(n) - 1
    do j = 0, 2
      pos(j + 1, r + 1) = r * 0.1d0 + j
    end do
    id(r + 1) = r * 1000003_c_int64_t - 5
    mass(r + 1) = r * 0.5
    ptype(r + 1) = mod(r, 3)
    write(pname(r + 1), '(a, i0)') 'p', r
    flag(r + 1) = mod(r, 2) == 0
    z(r + 1) = cmplx(r, -r * 0.25d0, c_double_complex)
  end do
  select case (trim(mode))
  case ('write')
    call write_file()
  case ('read')
    call read_file()
  case default
    print '(a)', 'usage: fortran_cross write|read DIR'
    error stop 2
  end select

contains

  subroutine write_file()
    type(colfile_file) :: f
    type(colfile_column) :: c
    call colfile_open(f, dir, COLFILE_OPEN_WRITE + COLFILE_OPEN_CREATE + COLFILE_OPEN_TRUNCATE)
    call colfile_column_create(c, f, 'pos', 'f8', n, nmemb=3_c_int64_t, nfile=2_c_int64_t)
    call colfile_write(c, 0_c_int64_t, pos)
    call colfile_attr_set(c, 'units', [1.0d0, 2.0d0, 3.0d0])
    call colfile_column_close(c)
    call put_column(f, 'id', 'i8', id)
    call put_column(f, 'mass', 'f4', mass)
    call put_column(f, 'type', 'i4', ptype)
    call put_column(f, 'name', 'S6', pname)
    call put_column(f, 'flag', 'b1', flag)
    call put_column(f, 'cplx', 'c16', z)
    call colfile_column_open(c, f, '.')
    call colfile_attr_set(c, 'time', 1.25d0)
    call colfile_attr_set(c, 'code', 'fortran')
    call colfile_attr_set(c, 'npart', n)
    call colfile_column_close(c)
    call colfile_close(f)
  end subroutine write_file

  subroutine read_file()
    type(colfile_file) :: f
    type(colfile_column) :: c
    real(c_double) :: pos2(3, n), t
    integer(c_int64_t) :: np
    real(c_double), allocatable :: units(:)
    character(len=:), allocatable :: code
    call colfile_open(f, dir)
    call colfile_column_open(c, f, 'pos')
    call check(colfile_nmemb(c) == 3 .and. colfile_size(c) == n, 'pos shape')
    call colfile_read(c, 0_c_int64_t, pos2)
    call check(all(pos2 == pos), 'pos')
    call colfile_attr_get(c, 'units', units)
    call check(size(units) == 3 .and. all(units == [1.0d0, 2.0d0, 3.0d0]), 'units')
    call colfile_column_close(c)
    call check_column(f, 'id', id, 'id')
    call check_column(f, 'mass', mass, 'mass')
    call check_column(f, 'type', ptype, 'type')
    call check_column(f, 'name', pname, 'name')
    call check_column(f, 'flag', flag, 'flag')
    call check_column(f, 'cplx', z, 'cplx')
    call colfile_column_open(c, f, '.')
    call colfile_attr_get(c, 'time', t)
    call check(t == 1.25d0, 'time')
    call colfile_attr_get(c, 'code', code)
    call check(code == 'python', 'code')
    call colfile_attr_get(c, 'npart', np)
    call check(np == n, 'npart')
    call colfile_column_close(c)
    call colfile_close(f)
    print '(a)', 'fortran_cross: read ok'
  end subroutine read_file

end program fortran_cross
