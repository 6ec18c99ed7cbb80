! The module colfile_mpi under mpiexec: collective create, write (each
! rank its rows: uneven, rank 1 none), read, grow, attributes, listing and
! close, in every write mode; a failure on one rank reaches every rank.
! Argument: a scratch directory (emptied first).
program test_fortran_mpi
  use, intrinsic :: iso_c_binding
  use colfile
  use colfile_mpi
  use colfile_test_mpi
  implicit none
  character(len=4096) :: dir
  integer :: comm, rank, nranks, m
  type(colfile_file) :: f
  type(colfile_mpi_options) :: opt

  call test_mpi_start(comm, rank, nranks)
  call get_command_argument(1, dir)
  call colfile_mpi_open(f, comm, dir, COLFILE_OPEN_WRITE + COLFILE_OPEN_CREATE + COLFILE_OPEN_TRUNCATE)

  do m = 0, 2
    opt = colfile_mpi_options()
    opt%mode = int(m, c_int)
    call vectors(m, opt)
  end do
  call strings_and_ints()
  call independent_writes()
  call grow_and_attrs()
  call listing()
  call one_rank_fails()
  call colfile_close(f)
  call barrier(comm)
  if (rank == 0) print '(a)', 'test_fortran_mpi: ok'
  call mpi_finalize_()

contains

  subroutine vectors(m, opt)
    integer, intent(in) :: m
    type(colfile_mpi_options), intent(in) :: opt
    type(colfile_column) :: c
    integer(c_int64_t) :: first, nloc, g, total
    real(c_double), allocatable :: mine(:, :), all_rows(:, :)
    character(len=16) :: name
    integer :: j
    write(name, '(a, i0)') 'pos', m
    nloc = rows_of(rank)
    call colfile_mpi_column_create(c, f, comm, name, 'f8', nloc, nmemb=3_c_int64_t, first_row=first, &
      options=opt)
    allocate(mine(3, nloc))
    do g = first, first + nloc - 1
      do j = 1, 3
        mine(j, g - first + 1) = g * 10.0d0 + j
      end do
    end do
    call colfile_mpi_write(c, comm, first, mine, options=opt)
    call colfile_mpi_column_close(c, comm)

    total = total_rows()
    call colfile_mpi_column_open(c, f, comm, name)
    call check(colfile_size(c) == total .and. colfile_nmemb(c) == 3, 'size after collective create')
    allocate(all_rows(3, total))
    all_rows = -1
    call colfile_mpi_read(c, comm, 0_c_int64_t, all_rows)
    do g = 0, total - 1
      do j = 1, 3
        call check(all_rows(j, g + 1) == g * 10.0d0 + j, 'every row read on every rank: ' // name)
      end do
    end do
    mine = -1
    call colfile_mpi_read(c, comm, first, mine)
    do g = first, first + nloc - 1
      call check(all(mine(:, g - first + 1) == [(g * 10.0d0 + j, j = 1, 3)]), 'own rows read back')
    end do
    call colfile_mpi_column_close(c, comm)
  end subroutine vectors

  subroutine strings_and_ints()
    type(colfile_column) :: c
    integer(c_int64_t) :: first, nloc, g
    integer(c_int32_t), allocatable :: k(:), back(:)
    character(len=4), allocatable :: s(:), sback(:)
    nloc = rows_of(rank)
    call colfile_mpi_column_create(c, f, comm, 'grp/k', 'i4', nloc, first_row=first)
    allocate(k(nloc), back(nloc))
    k = [(int(-7 * g, c_int32_t), g = first, first + nloc - 1)]
    call colfile_mpi_write(c, comm, first, k)
    call colfile_mpi_column_close(c, comm)
    call colfile_mpi_column_create(c, f, comm, 'grp/s', 'S4', nloc, first_row=first)
    allocate(s(nloc), sback(nloc))
    do g = first, first + nloc - 1
      write(s(g - first + 1), '(a, i0)') 'r', g
    end do
    call colfile_mpi_write(c, comm, first, s)
    call colfile_mpi_column_close(c, comm)

    call colfile_mpi_column_open(c, f, comm, 'grp/k')
    call colfile_mpi_read(c, comm, first, back)
    call check(all(back == k), 'i4 rows')
    call colfile_mpi_column_close(c, comm)
    call colfile_mpi_column_open(c, f, comm, 'grp/s')
    call colfile_mpi_read(c, comm, first, sback)
    call check(all(sback == s), 'S4 rows')
    call colfile_mpi_column_close(c, comm)
  end subroutine strings_and_ints

  ! Handles of colfile_mpi_column_create are core handles: each rank
  ! writes its rows with colfile_write, in two pieces, and the collective
  ! close merges them into one commit.
  subroutine independent_writes()
    type(colfile_column) :: c
    type(colfile_file) :: g
    integer(c_int64_t) :: first, nloc, total, h
    real(c_float), allocatable :: v(:), whole(:)
    nloc = rows_of(rank)
    call colfile_mpi_column_create(c, f, comm, 'indep', 'f4', nloc, first_row=first)
    allocate(v(nloc))
    v = [(real(h, c_float) / 4, h = first, first + nloc - 1)]
    call colfile_write(c, first + nloc / 2, v(nloc / 2 + 1:))
    call colfile_write(c, first, v(1:nloc / 2))
    call colfile_mpi_column_close(c, comm)
    ! Read back alone on rank 0 with the serial module.
    call barrier(comm)
    if (rank == 0) then
      total = total_rows()
      call colfile_open(g, dir)
      call colfile_column_open(c, g, 'indep')
      allocate(whole(total))
      call colfile_read(c, 0_c_int64_t, whole)
      call check(all(whole == [(real(h, c_float) / 4, h = 0, total - 1)]), 'independent writes merged')
      call colfile_column_close(c)
      call colfile_close(g)
    end if
    call barrier(comm)
  end subroutine independent_writes

  subroutine grow_and_attrs()
    type(colfile_column) :: c, a
    integer(c_int64_t) :: first, total, g
    integer(c_int32_t), allocatable :: more(:), whole(:)
    real(c_double) :: t
    character(len=:), allocatable :: s
    integer(c_int32_t), allocatable :: ib(:)
    real(c_float), allocatable :: rs(:)
    integer(c_int64_t) :: k8
    total = total_rows()
    call colfile_mpi_column_open(c, f, comm, 'grp/k')
    ! Rank r appends r rows (rank 0 none).
    call colfile_mpi_grow(c, f, comm, int(rank, c_int64_t), first_row=first)
    allocate(more(rank))
    more = [(int(1000 + g, c_int32_t), g = first, first + rank - 1)]
    call colfile_mpi_write(c, comm, first, more)
    call colfile_mpi_attr_set(c, comm, 'time', 2.5d0)
    call colfile_mpi_attr_set(c, comm, 'bins', [1_c_int32_t, 2_c_int32_t, 3_c_int32_t])
    call colfile_mpi_attr_set(c, comm, 'scale', [0.5_c_float, 4.0_c_float])
    call colfile_mpi_attr_set(c, comm, 'step', 42_c_int64_t)
    call colfile_mpi_attr_set(c, comm, 'origin', 'fortran mpi')
    call colfile_mpi_column_close(c, comm)

    call colfile_mpi_column_open(c, f, comm, 'grp/k')
    call check(colfile_size(c) == total + nranks * (nranks - 1) / 2, 'size after grow')
    allocate(whole(colfile_size(c)))
    call colfile_mpi_read(c, comm, 0_c_int64_t, whole)
    call check(all(whole(1:total) == [(int(-7 * g, c_int32_t), g = 0, total - 1)]), 'rows before the grow')
    call check(all(whole(total + 1:) == [(int(1000 + g, c_int32_t), g = total, size(whole) - 1)]), 'grown rows')
    call colfile_attr_get(c, 'time', t)
    call check(t == 2.5d0, 'collective attribute')
    call colfile_attr_get(c, 'bins', ib)
    call check(size(ib) == 3 .and. all(ib == [1, 2, 3]), 'collective i4 array attribute')
    call colfile_attr_get(c, 'scale', rs)
    call check(size(rs) == 2 .and. all(rs == [0.5_c_float, 4.0_c_float]), 'collective f4 array attribute')
    call colfile_attr_get(c, 'step', k8)
    call check(k8 == 42, 'collective i8 attribute')
    call colfile_attr_get(c, 'origin', s)
    call check(s == 'fortran mpi', 'collective string attribute')
    call colfile_mpi_column_close(c, comm)
    ! Attributes of the File, opened collectively.
    call colfile_mpi_column_open(a, f, comm, '.')
    call colfile_mpi_attr_set(a, comm, 'nranks', [int(nranks, c_int64_t)])
    call colfile_mpi_column_close(a, comm)
  end subroutine grow_and_attrs

  subroutine listing()
    character(len=:), allocatable :: names(:)
    call colfile_mpi_list(f, comm, names)
    call check(size(names) == 6, 'six columns')
    call check(names(1) == 'grp/k' .and. names(3) == 'indep' .and. names(4) == 'pos0', 'listed in order')
  end subroutine listing

  ! Rank 0 passes an array of the wrong shape: every rank gets the error,
  ! none hangs, and rank 0's message says what was wrong.
  subroutine one_rank_fails()
    type(colfile_column) :: c
    real(c_double), allocatable :: buf(:, :)
    integer :: st
    character(len=512) :: msg
    call colfile_mpi_column_open(c, f, comm, 'pos0')
    if (rank == 0) then
      allocate(buf(2, 1))
    else
      allocate(buf(3, 1))
    end if
    msg = ''
    call colfile_mpi_read(c, comm, 0_c_int64_t, buf, stat=st, errmsg=msg)
    call check(st /= 0, 'a bad shape on rank 0 fails every rank')
    if (rank == 0) call check(index(msg, 'first dimension') > 0, 'rank 0 names the shape: ' // trim(msg))
    call colfile_mpi_column_close(c, comm)
    ! A missing column: COLFILE_ENOENT everywhere.
    call colfile_mpi_column_open(c, f, comm, 'missing', stat=st)
    call check(st == COLFILE_ENOENT, 'missing column on every rank')
  end subroutine one_rank_fails

end program test_fortran_mpi
