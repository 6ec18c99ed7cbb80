/* overlap_refused.h - the agreed refusal of a collective write whose ranks'
 * rows overlap, checked to the letter. */
#ifndef CF_TEST_OVERLAP_REFUSED_H
#define CF_TEST_OVERLAP_REFUSED_H

#include "mpi_harness.h"

/* rc and err (every rank's) refuse rows [lo, hi) of column col of the
 * File dir on rank `rank`, which overlap rows [olo, ohi) of rank `other`:
 * CF_EARG, agreed, with the message that names both. */
static void check_overlap_refused(int rc, const cf_error *err, const char *dir, const char *col, int rank,
                                  int64_t lo, int64_t hi, int other, int64_t olo, int64_t ohi)
{
    char want[4600];
    CHECK_EQ_INT(rc, CF_EARG);
    CHECK_AGREED(rc, err);
    snprintf(want, sizeof want,
             "rank %d: %s/%s: rows [%lld, %lld) here overlap rows [%lld, %lld) of rank %d: each row may be written "
             "by one rank only (is start right on every rank?)",
             rank, dir, col, (long long)lo, (long long)hi, (long long)olo, (long long)ohi, other);
    CHECK_EQ_STR(err->message, want);
}

#endif
