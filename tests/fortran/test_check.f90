! colfile_test_check - the checks of the serial Fortran tests: a condition
! that fails stops the program, naming what was checked; and a whole
! column written, or read back and compared, in one call for any type the
! module colfile reads and writes.
module colfile_test_check
  use, intrinsic :: iso_c_binding
  use colfile
  implicit none
  private
  public :: check, check_prefix, put_column, check_column

  ! What a failure message starts with (check_prefix sets it).
  character(len=:), allocatable, save :: prefix
  integer(c_int64_t), parameter :: row0 = 0

contains

  ! Failures print `label` before what was checked (instead of 'FAILED: ').
  subroutine check_prefix(label)
    character(len=*), intent(in) :: label
    prefix = label
  end subroutine check_prefix

  subroutine check(cond, what)
    logical, intent(in) :: cond
    character(len=*), intent(in) :: what
    if (.not. cond) then
      if (allocated(prefix)) then
        print '(a)', prefix // what
      else
        print '(a)', 'FAILED: ' // what
      end if
      error stop 1
    end if
  end subroutine check

  ! Column `name` of f created with dtype and size(a) rows (in nfile
  ! blobs), all of a written from row 0, and closed.
  subroutine put_column(f, name, dtype, a, nfile)
    type(colfile_file), intent(in) :: f
    character(len=*), intent(in) :: name, dtype
    class(*), intent(in) :: a(:)
    integer(c_int64_t), intent(in), optional :: nfile
    type(colfile_column) :: c
    select type (a)
    type is (character(len=*))
      call put_strings(f, name, dtype, a, nfile)
      return
    end select
    call colfile_column_create(c, f, name, dtype, size(a, kind=c_int64_t), nfile=nfile)
    call whole_column(c, .false., a)
    call colfile_column_close(c)
  end subroutine put_column

  ! Column `name` of f read whole into an array like want, and checked to
  ! hold size(want) rows equal to want, element for element (the failure
  ! names what).
  subroutine check_column(f, name, want, what)
    type(colfile_file), intent(in) :: f
    character(len=*), intent(in) :: name, what
    class(*), intent(in) :: want(:)
    type(colfile_column) :: c
    class(*), allocatable :: got(:)
    select type (want)
    type is (character(len=*))
      call check_strings(f, name, want, what)
      return
    end select
    allocate(got, mold=want)
    ! logicals must hold valid values before the read (the sanitizers load
    ! them): the opposite of want, so that a read that fills nothing fails
    select type (got)
    type is (logical(c_bool))
      select type (want); type is (logical(c_bool)); got = .not. want; end select
    end select
    call colfile_column_open(c, f, name)
    call whole_column(c, .true., got)
    call check(colfile_size(c) == size(want, kind=c_int64_t) .and. same_values(got, want), what)
    call colfile_column_close(c)
  end subroutine check_column

  ! Strings go through procedures of their own: gfortran 12 loses the
  ! layout of a character array that reaches colfile_write through class(*).
  subroutine put_strings(f, name, dtype, a, nfile)
    type(colfile_file), intent(in) :: f
    character(len=*), intent(in) :: name, dtype
    character(len=*), intent(in) :: a(:)
    integer(c_int64_t), intent(in), optional :: nfile
    type(colfile_column) :: c
    call colfile_column_create(c, f, name, dtype, size(a, kind=c_int64_t), nfile=nfile)
    call colfile_write(c, row0, a)
    call colfile_column_close(c)
  end subroutine put_strings

  ! Strings compare blank padded.
  subroutine check_strings(f, name, want, what)
    type(colfile_file), intent(in) :: f
    character(len=*), intent(in) :: name, what
    character(len=*), intent(in) :: want(:)
    type(colfile_column) :: c
    character(len=len(want)) :: got(size(want))
    call colfile_column_open(c, f, name)
    call colfile_read(c, row0, got)
    call check(colfile_size(c) == size(want, kind=c_int64_t) .and. all(got == want), what)
    call colfile_column_close(c)
  end subroutine check_strings

  ! All rows of c from row 0 read into a (rd) or written from it (a has no
  ! intent: put_column's data is intent(in), and only read here).
  subroutine whole_column(c, rd, a)
    type(colfile_column), intent(inout) :: c
    logical, intent(in) :: rd
    class(*) :: a(:)
    select type (a)
    type is (integer(c_int8_t)); if (rd) call colfile_read(c, row0, a); if (.not. rd) call colfile_write(c, row0, a)
    type is (integer(c_int16_t)); if (rd) call colfile_read(c, row0, a); if (.not. rd) call colfile_write(c, row0, a)
    type is (integer(c_int32_t)); if (rd) call colfile_read(c, row0, a); if (.not. rd) call colfile_write(c, row0, a)
    type is (integer(c_int64_t)); if (rd) call colfile_read(c, row0, a); if (.not. rd) call colfile_write(c, row0, a)
    type is (real(c_float)); if (rd) call colfile_read(c, row0, a); if (.not. rd) call colfile_write(c, row0, a)
    type is (real(c_double)); if (rd) call colfile_read(c, row0, a); if (.not. rd) call colfile_write(c, row0, a)
    type is (complex(c_float_complex)); if (rd) call colfile_read(c, row0, a); if (.not. rd) call colfile_write(c, row0, a)
    type is (complex(c_double_complex)); if (rd) call colfile_read(c, row0, a); if (.not. rd) call colfile_write(c, row0, a)
    type is (logical(c_bool)); if (rd) call colfile_read(c, row0, a); if (.not. rd) call colfile_write(c, row0, a)
    class default
      call check(.false., 'no colfile type for this array')
    end select
  end subroutine whole_column

  ! x == y element for element, x and y of one type (as the tests compare
  ! them: numbers by value, -0 equal to 0; logicals by .eqv.).
  logical function same_values(x, y)
    class(*), intent(in) :: x(:), y(:)
    integer(c_int64_t), allocatable :: ix(:), iy(:)
    complex(c_double_complex), allocatable :: zx(:), zy(:)
    same_values = .false.
    if (size(x) /= size(y)) return
    select type (x)
    type is (logical(c_bool)); select type (y); type is (logical(c_bool)); same_values = all(x .eqv. y); end select
    class default
      call as_numbers(x, ix, zx)
      call as_numbers(y, iy, zy)
      same_values = all(ix == iy) .and. all(zx == zy)
    end select
  end function same_values

  ! The values of an integer array as integer(8) in iv, of a real or
  ! complex one as complex(8) in zv (both exact); the other one empty.
  subroutine as_numbers(x, iv, zv)
    class(*), intent(in) :: x(:)
    integer(c_int64_t), allocatable, intent(out) :: iv(:)
    complex(c_double_complex), allocatable, intent(out) :: zv(:)
    allocate(iv(0), zv(0))
    select type (x)
    type is (integer(c_int8_t)); iv = x
    type is (integer(c_int16_t)); iv = x
    type is (integer(c_int32_t)); iv = x
    type is (integer(c_int64_t)); iv = x
    type is (real(c_float)); zv = x
    type is (real(c_double)); zv = x
    type is (complex(c_float_complex)); zv = x
    type is (complex(c_double_complex)); zv = x
    end select
  end subroutine as_numbers

end module colfile_test_check
