/* snapshot.c - write and read back a small particle snapshot with libcolfile.
 *
 *   snapshot DIR
 *
 * Shows the strided model: fields of an array of structs are written
 * without copies, the IDs converted from int32 to the column's int64. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <colfile.h>

struct particle {
    double pos[3];
    float vel[3];
    int32_t id;
};

#define N 1000

/* Create a column of N rows, write them from buf (dtype NULL: the
 * column's own), close it.  The handle never outlives this function, so a
 * failure at any step leaves nothing to close twice. */
static int write_column(cf_file *f, const char *name, const char *dtype, int64_t nmemb, const void *buf,
                        const char *buf_dtype, size_t row_stride, size_t elem_stride, cf_error *err)
{
    cf_column *c;
    int rc = cf_column_create(&c, f, name, dtype, nmemb, N, 2, err);
    if (rc) return rc;
    rc = cf_column_write(c, 0, N, buf, buf_dtype, row_stride, elem_stride, err);
    if (rc) {
        cf_column_close(c, NULL);
        return rc;
    }
    return cf_column_close(c, err);
}

/* The File's attribute BoxSize. */
static int set_box_size(cf_file *f, double box, cf_error *err)
{
    cf_column *c;
    int rc = cf_column_open(&c, f, ".", err);
    if (rc) return rc;
    rc = cf_column_attr_set(c, "BoxSize", "f8", 1, &box, err);
    int rc2 = cf_column_close(c, rc ? NULL : err);
    return rc ? rc : rc2;
}

/* Read one row of column name into out. */
static int read_row(cf_file *f, const char *name, int64_t row, void *out, size_t row_stride, size_t elem_stride,
                    cf_error *err)
{
    cf_column *c;
    int rc = cf_column_open(&c, f, name, err);
    if (rc) return rc;
    rc = cf_column_read(c, row, 1, out, NULL, row_stride, elem_stride, err);
    int rc2 = cf_column_close(c, rc ? NULL : err);
    return rc ? rc : rc2;
}

int main(int argc, char **argv)
{
    if (argc != 2) {
        fprintf(stderr, "usage: %s DIR\n", argv[0]);
        return 2;
    }
    static struct particle p[N];
    for (int i = 0; i < N; i++) {
        for (int k = 0; k < 3; k++) {
            p[i].pos[k] = i + 0.25 * k;
            p[i].vel[k] = (float)(k - i);
        }
        p[i].id = 7 * i;
    }
    cf_error err;
    cf_file *f = NULL;
    double box = 1000.0, back[3];
    int64_t id;
    const size_t row = sizeof p[0];
    if (cf_file_open(&f, argv[1], CF_OPEN_WRITE | CF_OPEN_CREATE | CF_OPEN_TRUNCATE, &err) ||
        write_column(f, "1/Position", "f8", 3, p[0].pos, NULL, row, sizeof(double), &err) ||
        write_column(f, "1/Velocity", "f4", 3, p[0].vel, NULL, row, sizeof(float), &err) ||
        write_column(f, "1/ID", "i8", 1, &p[0].id, "i4", row, 0, &err) ||
        set_box_size(f, box, &err) ||
        read_row(f, "1/Position", N - 1, back, 3 * sizeof(double), sizeof(double), &err) ||
        read_row(f, "1/ID", N - 1, &id, 8, 8, &err))
        goto fail;
    cf_file_close(f);
    if (back[2] != p[N - 1].pos[2] || id != p[N - 1].id) {
        fprintf(stderr, "read back the wrong values\n");
        return 1;
    }
    printf("wrote %d particles to %s (colfile %s); last ID %lld\n", N, argv[1], cf_version(), (long long)id);
    return 0;
fail:
    fprintf(stderr, "colfile error %s: %s\n", cf_error_name(err.code), err.message);
    cf_file_close(f);
    return 1;
}
