/* bigfile-mpi.h - bigfile 0.1.52's MPI C API, implemented over
 * libcolfile_mpi.
 *
 * Every function here is collective over `comm`: all its ranks call it,
 * in the same order, and get the same return value (0, or -1 with the
 * failing rank's message on every rank).  MPI_COMM_NULL makes a call a
 * no-op that returns 0.  As in bigfile, rank 0 reads and writes the
 * metadata (header and attributes) and every rank moves its own rows.
 * Link with libcolfile-bigfile-mpi (pkg-config colfile-bigfile-mpi).
 */
#ifndef _BIGFILE_MPI_H_
#define _BIGFILE_MPI_H_
#include <mpi.h>

#include "bigfile.h"

#ifdef __cplusplus
extern "C" {
#endif

/* big_file_open / big_file_create done once (rank 0) for all ranks. */
int big_file_mpi_open(BigFile * bf, const char * basename, MPI_Comm comm);
int big_file_mpi_create(BigFile * bf, const char * basename, MPI_Comm comm);

/* Open block `blockname` on every rank: rank 0 reads its metadata and
 * hands it to the others. */
int big_file_mpi_open_block(BigFile * bf, BigBlock * block, const char * blockname, MPI_Comm comm);

/* Create (or replace) a block of `size` rows in Nfile files, row i of the
 * split going to file i as bigfile splits it: file i holds
 * (i+1)*size/Nfile - i*size/Nfile rows.  dtype NULL: attributes only. */
int big_file_mpi_create_block(BigFile * bf, BigBlock * block, const char * blockname,
                              const char * dtype, int nmemb, int Nfile, size_t size, MPI_Comm comm);

/* The same with the rows of each file given (fsize[0..Nfile-1]). */
int _big_file_mpi_create_block(BigFile * bf, BigBlock * block, const char * blockname,
                               const char * dtype, int nmemb, int Nfile, const size_t fsize[],
                               MPI_Comm comm);

/* Release the File on every rank. */
int big_file_mpi_close(BigFile * bf, MPI_Comm comm);

/* Commit (every rank's writes in one commit) and release the block. */
int big_block_mpi_close(BigBlock * block, MPI_Comm comm);

/* Add files after the existing ones: fsize_grow[i] rows each, or
 * size_grow rows split over Nfile_grow files (the _simple form). */
int big_block_mpi_grow(BigBlock * bb, int Nfile_grow, const size_t fsize_grow[], MPI_Comm comm);
int big_block_mpi_grow_simple(BigBlock * block, int Nfile_grow, size_t size_grow, MPI_Comm comm);

/* Writes whose ranks hold, per concurrent group, fewer bytes than this are
 * gathered to one rank of the group and written by it (0, the default:
 * never).  Process-wide. */
void big_file_mpi_set_aggregated_threshold(size_t bytes);
size_t big_file_mpi_get_aggregated_threshold(void);

/* 1: rank 0 prints a line to stderr for each collective write or read
 * (bigfile 0.1.52 keeps the setting and prints nothing). */
void big_file_mpi_set_verbose(int verbose);

/* Write each rank's array as consecutive rows, in rank order, from *ptr
 * (the same on every rank), and move *ptr past all of them.  At most
 * `concurrency` ranks write at once (<= 0: all). */
int big_block_mpi_write(BigBlock * bb, BigBlockPtr * ptr, BigArray * array, int concurrency,
                        MPI_Comm comm);

/* Read rows into each rank's array the same way. */
int big_block_mpi_read(BigBlock * bb, BigBlockPtr * ptr, BigArray * array, int concurrency,
                       MPI_Comm comm);

/* Commit every rank's writes (one commit by rank 0); the block stays open
 * and every rank gets the committed checksums. */
int big_block_mpi_flush(BigBlock * block, MPI_Comm comm);

/* The record calls of bigfile.h, collective. */
int big_file_mpi_create_records(BigFile * bf, const BigRecordType * rtype, const char * mode,
                                int Nfile, const size_t fsize[], MPI_Comm comm);
int big_file_mpi_write_records(BigFile * bf, const BigRecordType * rtype, ptrdiff_t offset,
                               size_t size, const void * buf, int concurrency, MPI_Comm comm);
int big_file_mpi_read_records(BigFile * bf, const BigRecordType * rtype, ptrdiff_t offset,
                              size_t size, void * buf, int concurrency, MPI_Comm comm);

#ifdef __cplusplus
}
#endif
#endif
