/* bf_mpi.c write|read DIR - exercises bigfile's MPI C API (bigfile-mpi.h
 * only).  Rank 0 prints what every rank saw, so that the output depends on
 * the library only: built against bigfile 0.1.52 and against colfile's
 * drop-in, both must print the same and leave the same tree.  `read`
 * reads a tree `write` made, with any rank count. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bigfile-mpi.h"

static int rank, ntask;
static BigFile bf;

/* Rank 0 prints `label` and the value of every rank. */
static void say_all(const char *label, double v)
{
    double *all = malloc(sizeof *all * (size_t)ntask);
    MPI_Gather(&v, 1, MPI_DOUBLE, all, 1, MPI_DOUBLE, 0, MPI_COMM_WORLD);
    if (rank == 0) {
        printf("%s:", label);
        for (int i = 0; i < ntask; i++) printf(" %.17g", all[i]);
        printf("\n");
    }
    free(all);
}

#define SAY(...)                                                                  \
    do {                                                                          \
        if (rank == 0) printf(__VA_ARGS__);                                      \
    } while (0)
/* Every rank's return code and whether its error message is set. */
#define RC(call)                                                                  \
    do {                                                                          \
        big_file_set_error_message(NULL);                                         \
        int rc_ = (call);                                                         \
        say_all(#call, rc_ * 10 + (big_file_get_error_message() != NULL));       \
    } while (0)

static void show_block(const char *what, BigBlock *b)
{
    SAY("%s: dtype=%s nmemb=%d size=%zu Nfile=%d fsize=[", what, b->dtype, b->nmemb, b->size, b->Nfile);
    for (int i = 0; i < b->Nfile; i++) SAY("%s%zu", i ? " " : "", b->fsize[i]);
    SAY("]\n");
    say_all("  size on every rank", (double)b->size);
}

static void show_sums(const char *what, BigBlock *b)
{
    double s = 0;
    for (int i = 0; i < b->Nfile; i++) s = s * 3 + b->fchecksum[i];
    say_all(what, s);
}

static int64_t my_rows(void)
{
    return rank == 1 ? 0 : 3 + 2 * rank; /* uneven, one rank with none */
}

struct particle {
    double pos[3];
    float vel[3];
    int64_t id;
};

static void write_snapshot(const char *dir)
{
    int64_t n = my_rows(), first = 0, total = 0;
    MPI_Exscan(&n, &first, 1, MPI_INT64_T, MPI_SUM, MPI_COMM_WORLD);
    if (rank == 0) first = 0;
    MPI_Allreduce(&n, &total, 1, MPI_INT64_T, MPI_SUM, MPI_COMM_WORLD);
    struct particle *p = calloc((size_t)n + 1, sizeof *p);
    for (int64_t i = 0; i < n; i++) {
        int64_t g = first + i;
        for (int k = 0; k < 3; k++) {
            p[i].pos[k] = g + 0.125 * k;
            p[i].vel[k] = (float)(-g - 0.5 * k);
        }
        p[i].id = 1000 + g;
    }
    BigBlock b;
    BigBlockPtr ptr;
    BigArray a;
    RC(big_file_mpi_create(&bf, dir, MPI_COMM_WORLD));

    RC(big_file_mpi_create_block(&bf, &b, "Header", NULL, 0, 0, 0, MPI_COMM_WORLD));
    double t = 0.5;
    int64_t np[6] = {0, total, 0, 0, 0, 0};
    RC(big_block_set_attr(&b, "Time", &t, "f8", 1));
    RC(big_block_set_attr(&b, "TotNumPart", np, "i8", 6));
    RC(big_block_set_attr(&b, "Label", "snap", "a1", 4));
    RC(big_block_mpi_close(&b, MPI_COMM_WORLD));

    /* strided f8 positions as f4, one rank at a time */
    RC(big_file_mpi_create_block(&bf, &b, "1/Position", "f4", 3, 3, (size_t)total, MPI_COMM_WORLD));
    show_block("Position", &b);
    big_array_init(&a, &p[0].pos[0], "f8", 2, (size_t[]){(size_t)n, 3},
                   (ptrdiff_t[]){sizeof *p, sizeof(double)});
    RC(big_block_seek(&b, &ptr, 0));
    RC(big_block_mpi_write(&b, &ptr, &a, 1, MPI_COMM_WORLD));
    say_all("  ptr after", (double)ptr.aoffset * 100 + ptr.fileid);
    RC(big_block_mpi_flush(&b, MPI_COMM_WORLD));
    show_sums("  sums after flush", &b);
    RC(big_block_set_attr(&b, "Unit", &t, "f8", 1));
    RC(big_block_mpi_close(&b, MPI_COMM_WORLD));

    /* velocities gathered (aggregated threshold), f4 into f8 */
    big_file_mpi_set_aggregated_threshold(1 << 20);
    SAY("threshold %zu\n", big_file_mpi_get_aggregated_threshold());
    RC(big_file_mpi_create_block(&bf, &b, "1/Velocity", "f8", 3, 2, (size_t)total, MPI_COMM_WORLD));
    big_array_init(&a, &p[0].vel[0], "f4", 2, (size_t[]){(size_t)n, 3},
                   (ptrdiff_t[]){sizeof *p, sizeof(float)});
    RC(big_block_seek(&b, &ptr, 0));
    RC(big_block_mpi_write(&b, &ptr, &a, 0, MPI_COMM_WORLD));
    RC(big_block_mpi_close(&b, MPI_COMM_WORLD));
    big_file_mpi_set_aggregated_threshold(0);

    /* ids in two collective writes: the pointer moves past both */
    RC(big_file_mpi_create_block(&bf, &b, "1/ID", "i8", 1, 2, (size_t)total, MPI_COMM_WORLD));
    int64_t h = n / 2;
    int64_t ha = 0, hb = 0;
    MPI_Allreduce(&h, &ha, 1, MPI_INT64_T, MPI_SUM, MPI_COMM_WORLD);
    RC(big_block_seek(&b, &ptr, 0));
    big_array_init(&a, &p[0].id, "i8", 1, (size_t[]){(size_t)h}, (ptrdiff_t[]){sizeof *p});
    RC(big_block_mpi_write(&b, &ptr, &a, 2, MPI_COMM_WORLD));
    big_array_init(&a, &p[h].id, "i8", 1, (size_t[]){(size_t)(n - h)}, (ptrdiff_t[]){sizeof *p});
    RC(big_block_mpi_write(&b, &ptr, &a, 2, MPI_COMM_WORLD));
    say_all("  ID ptr", (double)ptr.aoffset);
    (void)hb;
    /* past the end: every rank fails */
    RC(big_block_mpi_write(&b, &ptr, &a, 2, MPI_COMM_WORLD));
    RC(big_block_mpi_close(&b, MPI_COMM_WORLD));

    /* more files than rows; and a block of no rows */
    RC(big_file_mpi_create_block(&bf, &b, "1/Mass", "f4", 1, 7, (size_t)total, MPI_COMM_WORLD));
    float *m = malloc(sizeof *m * ((size_t)n + 1));
    for (int64_t i = 0; i < n; i++) m[i] = (float)(first + i) / 4;
    big_array_init(&a, m, "f4", 1, (size_t[]){(size_t)n}, NULL);
    RC(big_block_seek(&b, &ptr, 0));
    RC(big_block_mpi_write(&b, &ptr, &a, 0, MPI_COMM_WORLD));
    RC(big_block_mpi_close(&b, MPI_COMM_WORLD));
    RC(big_file_mpi_create_block(&bf, &b, "2/Mass", "f4", 1, 2, 0, MPI_COMM_WORLD));
    big_array_init(&a, m, "f4", 1, (size_t[]){0}, NULL);
    RC(big_block_seek(&b, &ptr, 0));
    RC(big_block_mpi_write(&b, &ptr, &a, 0, MPI_COMM_WORLD));
    RC(big_block_mpi_close(&b, MPI_COMM_WORLD));

    /* independent writes: each rank writes its own rows with the serial
     * call; the collective close sums every rank's checksums */
    RC(big_file_mpi_create_block(&bf, &b, "2/Independent", "f8", 3, 2, (size_t)total, MPI_COMM_WORLD));
    big_array_init(&a, &p[0].pos[0], "f8", 2, (size_t[]){(size_t)n, 3}, (ptrdiff_t[]){sizeof *p, sizeof(double)});
    RC(big_block_seek(&b, &ptr, (ptrdiff_t)first));
    RC(big_block_write(&b, &ptr, &a));
    RC(big_block_mpi_close(&b, MPI_COMM_WORLD));

    /* append: grow by an even split, then by given files, and write */
    RC(big_file_mpi_open_block(&bf, &b, "1/Mass", MPI_COMM_WORLD));
    RC(big_block_mpi_grow_simple(&b, 2, (size_t)total, MPI_COMM_WORLD));
    RC(big_block_mpi_grow(&b, 3, (size_t[]){1, 0, 2}, MPI_COMM_WORLD));
    show_block("Mass grown", &b);
    for (int64_t i = 0; i < n; i++) m[i] = -(float)(first + i);
    big_array_init(&a, m, "f4", 1, (size_t[]){(size_t)n}, NULL);
    RC(big_block_seek(&b, &ptr, (ptrdiff_t)total));
    RC(big_block_mpi_write(&b, &ptr, &a, 1, MPI_COMM_WORLD));
    float three[3] = {7, 8, 9};
    big_array_init(&a, three, "f4", 1, (size_t[]){rank == 0 ? 3 : 0}, NULL);
    RC(big_block_mpi_write(&b, &ptr, &a, 1, MPI_COMM_WORLD));
    RC(big_block_mpi_close(&b, MPI_COMM_WORLD));

    /* records: one block per field */
    BigRecordType rt = {0};
    big_record_type_add(&rt, "rec/pos", "f8", 3);
    big_record_type_add(&rt, "rec/vel", "f4", 3);
    big_record_type_add(&rt, "rec/id", "i8", 1);
    big_record_type_complete(&rt);
    SAY("record itemsize %zu\n", rt.itemsize);
    RC(big_file_mpi_create_records(&bf, &rt, "w+", 2, (size_t[]){(size_t)total / 2, (size_t)(total - total / 2)},
                                   MPI_COMM_WORLD));
    /* collective: rank r's records follow the lower ranks' from offset 0 */
    char *rb = calloc((size_t)n + 1, rt.itemsize);
    for (int64_t i = 0; i < n; i++) {
        big_record_set(&rt, rb, i, 0, p[i].pos);
        big_record_set(&rt, rb, i, 1, p[i].vel);
        big_record_set(&rt, rb, i, 2, &p[i].id);
    }
    RC(big_file_mpi_write_records(&bf, &rt, 0, (size_t)n, rb, 0, MPI_COMM_WORLD));
    free(rb);
    RC(big_file_mpi_create_records(&bf, &rt, "a+", 1, (size_t[]){2}, MPI_COMM_WORLD));
    RC(big_file_mpi_create_records(&bf, &rt, "r", 1, (size_t[]){2}, MPI_COMM_WORLD));
    big_record_type_clear(&rt);

    BigBlock missing;
    RC(big_file_mpi_open_block(&bf, &missing, "nope", MPI_COMM_WORLD));
    RC(big_file_mpi_close(&bf, MPI_COMM_WORLD));
    free(m);
    free(p);
}

/* Read every data block with this rank count: rank r takes its even
 * share of the rows; print the sums. */
static void read_snapshot(const char *dir)
{
    BigBlock b;
    BigBlockPtr ptr;
    BigArray a;
    RC(big_file_mpi_open(&bf, dir, MPI_COMM_WORLD));
    RC(big_file_mpi_open_block(&bf, &b, "Header", MPI_COMM_WORLD));
    int64_t np[6] = {0};
    double t = 0;
    char label[5] = {0};
    RC(big_block_get_attr(&b, "TotNumPart", np, "i8", 6));
    RC(big_block_get_attr(&b, "Time", &t, "f8", 1));
    RC(big_block_get_attr(&b, "Label", label, "a1", 4));
    say_all("Header TotNumPart[1] + Time", (double)np[1] + t);
    SAY("Label %s\n", label);
    RC(big_block_mpi_close(&b, MPI_COMM_WORLD));
    const char *names[] = {"1/Position", "1/Velocity", "1/ID", "1/Mass", "2/Mass", "2/Independent", "rec/pos",
                           "rec/id"};
    for (size_t k = 0; k < sizeof names / sizeof *names; k++) {
        RC(big_file_mpi_open_block(&bf, &b, names[k], MPI_COMM_WORLD));
        show_block(names[k], &b);
        size_t lo = b.size * (size_t)rank / (size_t)ntask, hi = b.size * (size_t)(rank + 1) / (size_t)ntask;
        size_t cnt = (hi - lo) * (size_t)b.nmemb;
        double *v = calloc(cnt + 1, sizeof *v);
        big_array_init(&a, v, "f8", 2, (size_t[]){hi - lo, (size_t)b.nmemb}, NULL);
        RC(big_block_seek(&b, &ptr, (ptrdiff_t)lo));
        /* collective: the ranks' rows follow each other from ptr, so every
         * rank seeks to the first rank's row */
        RC(big_block_seek(&b, &ptr, 0));
        big_file_set_error_message(NULL);
        int rc = big_block_mpi_read(&b, &ptr, &a, 2, MPI_COMM_WORLD);
        double s = 0;
        for (size_t i = 0; i < cnt; i++) s += v[i] * (double)(i % 7 + 1);
        /* a failed read leaves the buffer undefined: print the failure only */
        say_all("  read rc / weighted sum", rc ? rc : s);
        RC(big_block_mpi_read(&b, &ptr, &a, 2, MPI_COMM_WORLD)); /* past the end when not empty */
        free(v);
        size_t na;
        BigAttr *al = big_block_list_attrs(&b, &na);
        say_all("  attrs", (double)na + (na ? al[0].nmemb : 0));
        RC(big_block_mpi_close(&b, MPI_COMM_WORLD));
    }
    RC(big_file_mpi_close(&bf, MPI_COMM_WORLD));
}

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &ntask);
    if (argc != 3) {
        MPI_Finalize();
        return 2;
    }
    SAY("ranks %d\n", ntask);
    if (strcmp(argv[1], "write") == 0)
        write_snapshot(argv[2]);
    else
        read_snapshot(argv[2]);
    fflush(stdout);
    MPI_Finalize();
    return 0;
}
