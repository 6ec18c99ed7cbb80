! A particle snapshot, as a simulation code writes one every few steps:
! positions and velocities (3 reals per particle), ids, masses and a type,
! with the time step and box size as attributes of the File, and the
! particles of each type counted in a group attribute.
!   snapshot write DIR [N]   write a snapshot of N particles (default 10000)
!   snapshot read DIR        read it back and count the values that differ
! Build against an installed colfile: examples/fortran/CMakeLists.txt.
program snapshot
  use, intrinsic :: iso_c_binding, only: c_int64_t, c_double, c_float, c_int32_t
  use colfile
  implicit none
  character(len=16) :: mode, arg
  character(len=4096) :: dir
  integer(c_int64_t) :: n

  call get_command_argument(1, mode)
  call get_command_argument(2, dir)
  n = 10000
  if (command_argument_count() >= 3) then
    call get_command_argument(3, arg)
    read(arg, *) n
  end if
  select case (trim(mode))
  case ('write')
    call write_snapshot(dir, n)
  case ('read')
    call read_snapshot(dir)
  case default
    print '(a)', 'usage: snapshot write DIR [N] | snapshot read DIR'
    error stop 2
  end select

contains

  ! The state of particle i (1-based) at the step written.
  subroutine particle(i, x, v, id, m, t)
    integer(c_int64_t), intent(in) :: i
    real(c_double), intent(out) :: x(3), v(3)
    integer(c_int64_t), intent(out) :: id
    real(c_float), intent(out) :: m
    integer(c_int32_t), intent(out) :: t
    integer :: k
    do k = 1, 3
      x(k) = mod(i * 7919 * k, 100000_c_int64_t) / 1000.0d0
      v(k) = (mod(i * 104729 + k, 2001_c_int64_t) - 1000) / 100.0d0
    end do
    id = 1000000000_c_int64_t + i
    m = 1.0 + real(mod(i, 4_c_int64_t), c_float) * 0.25
    t = int(mod(i, 3_c_int64_t), c_int32_t)
  end subroutine particle

  subroutine write_snapshot(dir, n)
    character(len=*), intent(in) :: dir
    integer(c_int64_t), intent(in) :: n
    type(colfile_file) :: f
    type(colfile_column) :: c
    real(c_double), allocatable :: x(:, :), v(:, :)
    integer(c_int64_t), allocatable :: id(:)
    real(c_float), allocatable :: m(:)
    integer(c_int32_t), allocatable :: t(:)
    integer(c_int64_t) :: i, ntype(0:2)
    allocate(x(3, n), v(3, n), id(n), m(n), t(n))
    do i = 1, n
      call particle(i, x(:, i), v(:, i), id(i), m(i), t(i))
    end do
    call colfile_open(f, dir, COLFILE_OPEN_WRITE + COLFILE_OPEN_CREATE + COLFILE_OPEN_TRUNCATE)
    ! Vector columns: x(:, i) is the row of particle i, written without a copy.
    call colfile_column_create(c, f, 'part/pos', 'f8', n, nmemb=3_c_int64_t, nfile=4_c_int64_t)
    call colfile_write(c, 0_c_int64_t, x)
    call colfile_attr_set(c, 'units', 'Mpc/h')
    call colfile_column_close(c)
    call colfile_column_create(c, f, 'part/vel', 'f4', n, nmemb=3_c_int64_t, nfile=4_c_int64_t)
    call colfile_write(c, 0_c_int64_t, v) ! stored as f4, converted by the library
    call colfile_column_close(c)
    call colfile_column_create(c, f, 'part/id', 'i8', n, nfile=4_c_int64_t)
    call colfile_write(c, 0_c_int64_t, id)
    call colfile_column_close(c)
    call colfile_column_create(c, f, 'part/mass', 'f4', n)
    call colfile_write(c, 0_c_int64_t, m)
    call colfile_column_close(c)
    call colfile_column_create(c, f, 'part/type', 'i1', n)
    call colfile_write(c, 0_c_int64_t, t)
    call colfile_column_close(c)
    do i = 0, 2
      ntype(i) = count(t == i)
    end do
    call colfile_column_open(c, f, 'part/.')
    call colfile_attr_set(c, 'count_by_type', ntype)
    call colfile_column_close(c)
    call colfile_column_open(c, f, '.')
    call colfile_attr_set(c, 'time', 0.5d0)
    call colfile_attr_set(c, 'boxsize', 100.0d0)
    call colfile_attr_set(c, 'code', 'examples/fortran/snapshot.f90')
    call colfile_column_close(c)
    call colfile_close(f)
    print '(a, i0, a)', 'wrote ', n, ' particles'
  end subroutine write_snapshot

  subroutine read_snapshot(dir)
    character(len=*), intent(in) :: dir
    type(colfile_file) :: f
    type(colfile_column) :: c
    real(c_double), allocatable :: x(:, :), v(:, :)
    integer(c_int64_t), allocatable :: id(:), ntype(:)
    real(c_float), allocatable :: m(:)
    integer(c_int32_t), allocatable :: t(:)
    real(c_double) :: xi(3), vi(3), time
    integer(c_int64_t) :: idi, n, i, wrong
    real(c_float) :: mi
    integer(c_int32_t) :: ti
    call colfile_open(f, dir)
    call colfile_column_open(c, f, 'part/pos')
    n = colfile_size(c)
    allocate(x(3, n), v(3, n), id(n), m(n), t(n))
    call colfile_read(c, 0_c_int64_t, x)
    call colfile_column_close(c)
    call colfile_column_open(c, f, 'part/vel')
    call colfile_read(c, 0_c_int64_t, v)
    call colfile_column_close(c)
    call colfile_column_open(c, f, 'part/id')
    call colfile_read(c, 0_c_int64_t, id)
    call colfile_column_close(c)
    call colfile_column_open(c, f, 'part/mass')
    call colfile_read(c, 0_c_int64_t, m)
    call colfile_column_close(c)
    call colfile_column_open(c, f, 'part/type')
    call colfile_read(c, 0_c_int64_t, t)
    call colfile_column_close(c)
    wrong = 0
    do i = 1, n
      call particle(i, xi, vi, idi, mi, ti)
      ! velocities went through f4
      if (any(x(:, i) /= xi) .or. any(v(:, i) /= real(real(vi, c_float), c_double)) .or. id(i) /= idi &
          .or. m(i) /= mi .or. t(i) /= ti) wrong = wrong + 1
    end do
    call colfile_column_open(c, f, 'part/.')
    call colfile_attr_get(c, 'count_by_type', ntype)
    call colfile_column_close(c)
    if (sum(ntype) /= n) wrong = wrong + 1
    call colfile_column_open(c, f, '.')
    call colfile_attr_get(c, 'time', time)
    call colfile_column_close(c)
    call colfile_close(f)
    write(arg, '(f12.2)') time
    print '(a, i0, a, a, a, i0, a)', 'read ', n, ' particles at time ', trim(adjustl(arg)), ': ', wrong, ' wrong'
    if (wrong /= 0) error stop 1
  end subroutine read_snapshot

end program snapshot
