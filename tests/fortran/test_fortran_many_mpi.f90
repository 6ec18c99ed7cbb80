! A snapshot of several columns in one collective each:
! colfile_mpi_column_create_many, colfile_mpi_write_add / _write_many (whole
! arrays, a strided section, strings, a write in two pieces) and
! colfile_mpi_column_close_many, under mpiexec; uneven rows, none on rank 1.
! Read back on every rank; a shape error on one rank fails every rank.
! Argument: a scratch directory, left for tests/python/test_fortran_many.py.
! Global row g: pos = (g + 0.5, 2g, -g), id = 7g - 3, mass = g / 8,
! tag = 'g<g>'.
program test_fortran_many_mpi
  use, intrinsic :: iso_c_binding
  use colfile
  use colfile_mpi
  use colfile_test_mpi
  implicit none
  character(len=4096) :: dir
  integer :: comm, rank, nranks
  type(colfile_file) :: f

  call test_mpi_start(comm, rank, nranks)
  rows_step = 4
  call get_command_argument(1, dir)
  call colfile_mpi_open(f, comm, dir, COLFILE_OPEN_WRITE + COLFILE_OPEN_CREATE + COLFILE_OPEN_TRUNCATE)
  call snapshot()
  call read_back()
  call refused()
  call colfile_close(f)
  if (rank == 0) print '(a)', 'test_fortran_many_mpi: ok'
  call mpi_finalize_()

contains

  subroutine snapshot()
    type(colfile_column) :: cols(4)
    type(colfile_mpi_writes) :: w
    integer(c_int64_t) :: nloc, first(4), g, h
    real(c_double), allocatable, target :: pos(:, :)
    integer(c_int32_t), allocatable, target :: id(:)
    real(c_float), allocatable, target :: table(:, :)
    character(len=5), allocatable, target :: tag(:)
    nloc = rows_of(rank)
    call colfile_mpi_column_create_many(cols, f, comm, [character(len=8) :: 'part/pos', 'part/id', 'mass', 'tag'], &
      [character(len=3) :: 'f8', 'i8', 'f4', 'S5'], nloc, nmemb=[3_c_int64_t, 1_c_int64_t, 1_c_int64_t, 1_c_int64_t], &
      first_rows=first)
    call check(all(first == first(1)), 'one first row for all columns')
    allocate(pos(3, nloc), id(nloc), table(2, nloc), tag(nloc))
    do g = first(1), first(1) + nloc - 1
      h = g - first(1) + 1
      pos(:, h) = [g + 0.5d0, 2.0d0 * g, -1.0d0 * g]
      id(h) = int(7 * g - 3, c_int32_t)
      table(:, h) = [real(g, c_float) / 8, -1.0_c_float]  ! mass is row 1 of table
      write(tag(h), '(a, i0)') 'g', g
    end do
    call colfile_mpi_write_add(w, cols(1), first(1), pos)
    ! converted i4 -> i8, in two pieces
    call colfile_mpi_write_add(w, cols(2), first(2), id(1:nloc / 2))
    call colfile_mpi_write_add(w, cols(2), first(2) + nloc / 2, id(nloc / 2 + 1:))
    ! a strided section: no copy
    call colfile_mpi_write_add(w, cols(3), first(3), table(1, :))
    call colfile_mpi_write_add(w, cols(4), first(4), tag)
    call colfile_mpi_write_many(w, comm)
    call colfile_mpi_column_close_many(cols, comm)
    call check(.not. colfile_column_is_open(cols(1)), 'handles released')
  end subroutine snapshot

  subroutine read_back()
    type(colfile_column) :: c
    integer(c_int64_t) :: total, g
    real(c_double), allocatable :: pos(:, :)
    integer(c_int64_t), allocatable :: id(:)
    real(c_float), allocatable :: mass(:)
    character(len=5), allocatable :: tag(:)
    character(len=5) :: want
    total = total_rows()
    allocate(pos(3, total), id(total), mass(total), tag(total))
    call colfile_mpi_column_open(c, f, comm, 'part/pos')
    call check(colfile_size(c) == total, 'size of the snapshot')
    call colfile_mpi_read(c, comm, 0_c_int64_t, pos)
    call colfile_mpi_column_close(c, comm)
    call colfile_mpi_column_open(c, f, comm, 'part/id')
    call colfile_mpi_read(c, comm, 0_c_int64_t, id)
    call colfile_mpi_column_close(c, comm)
    call colfile_mpi_column_open(c, f, comm, 'mass')
    call colfile_mpi_read(c, comm, 0_c_int64_t, mass)
    call colfile_mpi_column_close(c, comm)
    call colfile_mpi_column_open(c, f, comm, 'tag')
    call colfile_mpi_read(c, comm, 0_c_int64_t, tag)
    call colfile_mpi_column_close(c, comm)
    do g = 0, total - 1
      call check(all(pos(:, g + 1) == [g + 0.5d0, 2.0d0 * g, -1.0d0 * g]), 'pos')
      call check(id(g + 1) == 7 * g - 3, 'id')
      call check(mass(g + 1) == real(g, c_float) / 8, 'mass (strided)')
      write(want, '(a, i0)') 'g', g
      call check(tag(g + 1) == want, 'tag')
    end do
  end subroutine read_back

  ! Rank 0 adds an array of the wrong shape: every rank fails, none hangs,
  ! lists of different lengths fail create_many.
  subroutine refused()
    type(colfile_column) :: cols(2)
    type(colfile_mpi_writes) :: w
    real(c_double), allocatable, target :: v(:, :)
    integer(c_int64_t) :: first(2)
    integer :: st
    character(len=512) :: msg
    call colfile_mpi_column_create_many(cols, f, comm, [character(len=2) :: 'a', 'b'], [character(len=2) :: 'f8', 'f8'], &
      [2_c_int64_t, 2_c_int64_t], first_rows=first)
    if (rank == 0) then
      allocate(v(2, 1))
    else
      allocate(v(1, 2))
    end if
    v = 5
    call colfile_mpi_write_add(w, cols(1), first(1), v)
    call colfile_mpi_write_add(w, cols(2), first(2), v(1, :))
    msg = ''
    call colfile_mpi_write_many(w, comm, stat=st, errmsg=msg)
    call check(st /= 0, 'a bad shape on rank 0 fails every rank: ' // trim(msg))
    if (rank == 0) call check(index(msg, 'first dimension is 2') > 0, 'rank 0 names the shape: ' // trim(msg))
    call colfile_mpi_column_close_many(cols, comm)
    call colfile_mpi_column_create_many(cols, f, comm, [character(len=2) :: 'a', 'b'], [character(len=2) :: 'f8'], &
      1_c_int64_t, stat=st, errmsg=msg)
    call check(st == COLFILE_EARG .and. index(msg, 'differ in length') > 0, 'lists of different lengths: ' // trim(msg))
  end subroutine refused

end program test_fortran_many_mpi
