/* cf_write_random.c - write random floats collectively with uneven row
 * splits, for comparing Files written with different rank counts byte for
 * byte: the statistics' sums must not depend on where a chunk's rows were
 * split over ranks and writes.
 *
 *   mpiexec -n R cf_write_random DIR --total N --nfile K --layout L [--calls C]
 *
 * DIR is created (or emptied).  Columns, each created with nfile K and
 * written by C collective cf_mpi_column_write calls per rank (rows of a
 * rank cut unevenly over the calls, some calls empty):
 *   Wide  f8 x3  finite, exponents over [-300, 300], both signs
 *   Odd   f8     as Wide, with NaN, +inf and -inf here and there
 *   Small f4     finite, exponents over [-60, 60]
 *   Count i8     any 64-bit integer
 * Every value is a hash of its row and component.  Rows per rank by layout:
 * "ramp" (rank r holds a share growing with (r + 1)^2), "reverse" (the
 * same, largest first), "even".  Exit status 0, 1 on an error (printed by
 * rank 0), 2 on bad arguments. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "colfile_mpi.h"
#include "mpi_program.h"

static const char usage[] = "usage: cf_write_random DIR --total N --nfile K --layout ramp|reverse|even [--calls C]\n";

static uint64_t mix(uint64_t x)
{
    x += UINT64_C(0x9e3779b97f4a7c15);
    x = (x ^ (x >> 30)) * UINT64_C(0xbf58476d1ce4e5b9);
    x = (x ^ (x >> 27)) * UINT64_C(0x94d049bb133111eb);
    return x ^ (x >> 31);
}

static double wide_value(int64_t row, int j, int col, int emax)
{
    uint64_t h = mix((uint64_t)row * 8 + (uint64_t)j + (uint64_t)col * UINT64_C(0x100000000));
    double m = (double)(h >> 11) * 0x1p-53;
    int e = (int)(mix(h) % (uint64_t)(2 * emax + 1)) - emax;
    double v = ldexp(m, e);
    return h & 1 ? -v : v;
}

static void fill(int col, int64_t first, int64_t n, void *out)
{
    for (int64_t i = 0; i < n; i++) {
        int64_t row = first + i;
        switch (col) {
        case 0:
            for (int j = 0; j < 3; j++) ((double *)out)[i * 3 + j] = wide_value(row, j, col, 300);
            break;
        case 1: {
            double v = wide_value(row, 0, col, 300);
            uint64_t h = mix((uint64_t)row ^ UINT64_C(0x5555));
            if (h % 97 == 0) v = NAN;
            else if (h % 89 == 0) v = INFINITY;
            else if (h % 83 == 0) v = -INFINITY;
            ((double *)out)[i] = v;
            break;
        }
        case 2:
            ((float *)out)[i] = (float)wide_value(row, 0, col, 60);
            break;
        default:
            ((int64_t *)out)[i] = (int64_t)mix((uint64_t)row + 77);
            break;
        }
    }
}

/* Rows of rank r: shares of total weighted by the layout. */
static void shares(int64_t total, int nranks, const char *layout, int64_t *count)
{
    int64_t wsum = 0;
    for (int r = 0; r < nranks; r++) {
        int64_t k = strcmp(layout, "reverse") == 0 ? nranks - r : r + 1;
        count[r] = strcmp(layout, "even") == 0 ? 1 : k * k;
        wsum += count[r];
    }
    int64_t left = total;
    for (int r = 0; r < nranks; r++) {
        int64_t c = r == nranks - 1 ? left : total * count[r] / wsum;
        count[r] = c;
        left -= c;
    }
}

int main(int argc, char **argv)
{
    int rank, nranks;
    MPI_Comm comm = program_start(&argc, &argv, &rank, &nranks);
    const char *dir = NULL, *layout = NULL;
    long long total = -1, nfile = -1, calls = 3;
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
        if (a[0] != '-' && !dir) { dir = a; continue; }
        if (!v) goto bad;
        i++;
        if (strcmp(a, "--total") == 0) total = atoll(v);
        else if (strcmp(a, "--nfile") == 0) nfile = atoll(v);
        else if (strcmp(a, "--calls") == 0) calls = atoll(v);
        else if (strcmp(a, "--layout") == 0 &&
                 (strcmp(v, "ramp") == 0 || strcmp(v, "reverse") == 0 || strcmp(v, "even") == 0)) layout = v;
        else goto bad;
    }
    if (!dir || !layout || total < 0 || nfile < 0 || calls < 1) goto bad;

    int64_t *count = malloc((size_t)nranks * sizeof *count);
    if (!count) MPI_Abort(comm, 1);
    shares(total, nranks, layout, count);
    int64_t local = count[rank];
    free(count);

    static const struct { const char *name, *dtype; int64_t nmemb, itemsize; } columns[] = {
        { "Wide", "f8", 3, 8 }, { "Odd", "f8", 1, 8 }, { "Small", "f4", 1, 4 }, { "Count", "i8", 1, 8 }
    };
    cf_mpi_options opt;
    cf_mpi_options_init(&opt);
    opt.nfile = nfile;
    cf_error err;
    cf_file *f = NULL;
    cf_column *c = NULL;
    int rc = cf_mpi_file_open(&f, comm, dir, CF_OPEN_WRITE | CF_OPEN_CREATE | CF_OPEN_TRUNCATE, &err);
    for (int k = 0; k < 4 && rc == 0; k++) {
        int64_t nmemb = columns[k].nmemb, isz = columns[k].itemsize, first = 0;
        void *buf = malloc((size_t)((local > 0 ? local : 1) * nmemb * isz));
        if (!buf) MPI_Abort(comm, 1);
        rc = cf_mpi_column_create(&c, f, comm, columns[k].name, columns[k].dtype, nmemb, local, &opt, &first, &err);
        if (rc == 0) {
            fill(k, first, local, buf);
            /* the rank's rows over `calls` collective writes, cut unevenly
             * (by a hash of rank and column), some empty */
            int64_t done = 0;
            for (long long q = 0; q < calls && rc == 0; q++) {
                int64_t n = q == calls - 1 ? local - done
                          : (int64_t)(mix((uint64_t)(rank * 131 + k * 7 + q)) % (uint64_t)(local - done + 1));
                rc = cf_mpi_column_write(c, comm, first + done, n, (char *)buf + done * nmemb * isz, NULL,
                                         nmemb * isz, isz, &opt, &err);
                done += n;
            }
            int rc2 = cf_mpi_column_close(c, comm, &err);
            if (rc == 0) rc = rc2;
            c = NULL;
        }
        free(buf);
    }
    cf_file_close(f);
    return program_end("cf_write_random", rank, rc, &err);
bad:
    return program_usage(usage, rank);
}
