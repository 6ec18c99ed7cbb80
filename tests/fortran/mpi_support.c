/* MPI for the Fortran MPI tests without MPI's Fortran bindings (the MPICH
 * from PyPI has none): init, finalize, MPI_COMM_WORLD as a Fortran handle
 * (MPI_Comm_c2f), rank, size, barrier and abort, called through bind(c). */
#include <stddef.h>

#include <mpi.h>

void colfile_test_mpi_init(void) { MPI_Init(NULL, NULL); }
void colfile_test_mpi_finalize(void) { MPI_Finalize(); }
int colfile_test_mpi_comm_world(void) { return (int)MPI_Comm_c2f(MPI_COMM_WORLD); }
int colfile_test_mpi_rank(int fcomm)
{
    int r;
    MPI_Comm_rank(MPI_Comm_f2c((MPI_Fint)fcomm), &r);
    return r;
}
int colfile_test_mpi_size(int fcomm)
{
    int s;
    MPI_Comm_size(MPI_Comm_f2c((MPI_Fint)fcomm), &s);
    return s;
}
void colfile_test_mpi_barrier(int fcomm) { MPI_Barrier(MPI_Comm_f2c((MPI_Fint)fcomm)); }
void colfile_test_mpi_abort(int code) { MPI_Abort(MPI_COMM_WORLD, code); }
