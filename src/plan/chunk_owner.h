/* chunk_owner.h - which rank owns a statistics chunk at a collective
 * close (internal, free of MPI).
 *
 * The owner of a chunk merges every rank's partial accumulators and CRC32C
 * pieces of it and writes its final records, so that no rank (rank 0
 * neither) holds more than about the chunks it wrote itself.  The ranks
 * cut the column's rows into consecutive ranges, one per rank in rank
 * order (cut[r] .. cut[r + 1], cut[nranks] being the row count): rank r
 * owns the chunks whose first row lies in its range.  With the cuts at the
 * first row each rank wrote (cf__owner_cuts), a write of consecutive rows
 * per rank leaves each rank owning the chunks that start in its rows: it
 * sends at most the one chunk its first row falls inside, to the rank
 * before it.  Every rank computes the same owners from the same cuts (one
 * int64 per rank, gathered once), without further communication. */
#ifndef CF_CHUNK_OWNER_H
#define CF_CHUNK_OWNER_H

#include <stdint.h>

/* Cuts (nranks + 1 values, cut[0] = 0, cut[nranks] = total, never
 * decreasing) from the first row each rank wrote (first[r] < 0: rank r
 * wrote nothing, its range is empty): cut[r] is the smallest first row
 * of ranks r and after, so a rank whose first row is out of rank order
 * owns nothing and its rows go to the range they fall in. */
void cf__owner_cuts(const int64_t *first, int64_t nranks, int64_t total, int64_t *cut);

/* Cuts of the even shares of total rows (cf_plan_share). */
void cf__owner_cuts_even(int64_t nranks, int64_t total, int64_t *cut);

/* The rank whose range holds row: the last r with cut[r] <= row (a
 * nonempty range); -1 when row is not in [0, cut[nranks])). */
int64_t cf__owner_of_row(const int64_t *cut, int64_t nranks, int64_t row);

/* The owner of chunk k (of chunk_rows rows) of the blob whose first row is
 * blob_first: the owner of the chunk's first row; -1 out of range. */
int64_t cf__owner_of_chunk(const int64_t *cut, int64_t nranks, int64_t blob_first, int64_t chunk_rows, int64_t k);

/* The chunks [*k0, *k1) that rank r owns of the blob holding rows
 * [blob_first, blob_first + blob_rows) (its chunks restart at its first
 * row): owners do not decrease with the row, so they are consecutive
 * (*k0 == *k1: none). */
void cf__owned_chunks(const int64_t *cut, int64_t nranks, int64_t r, int64_t blob_first, int64_t blob_rows,
                      int64_t chunk_rows, int64_t *k0, int64_t *k1);

#endif
