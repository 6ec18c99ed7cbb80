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
    cf_column *c = NULL;
    double box = 1000.0, back[3];
    int64_t id;
    const size_t row = sizeof p[0];
    if (cf_file_open(&f, argv[1], CF_OPEN_WRITE | CF_OPEN_CREATE | CF_OPEN_TRUNCATE, &err)) goto fail;
    if (cf_column_create(&c, f, "1/Position", "f8", 3, N, 2, &err) ||
        cf_column_write(c, 0, N, p[0].pos, NULL, row, sizeof(double), &err) || cf_column_close(c, &err)) goto fail;
    if (cf_column_create(&c, f, "1/Velocity", "f4", 3, N, 2, &err) ||
        cf_column_write(c, 0, N, p[0].vel, NULL, row, sizeof(float), &err) || cf_column_close(c, &err)) goto fail;
    if (cf_column_create(&c, f, "1/ID", "i8", 1, N, 2, &err) ||
        cf_column_write(c, 0, N, &p[0].id, "i4", row, 0, &err) || cf_column_close(c, &err)) goto fail;
    if (cf_column_open(&c, f, ".", &err) || cf_column_attr_set(c, "BoxSize", "f8", 1, &box, &err) ||
        cf_column_close(c, &err)) goto fail;

    if (cf_column_open(&c, f, "1/Position", &err) ||
        cf_column_read(c, N - 1, 1, back, NULL, 3 * sizeof(double), sizeof(double), &err) ||
        cf_column_close(c, &err)) goto fail;
    if (cf_column_open(&c, f, "1/ID", &err) || cf_column_read(c, N - 1, 1, &id, NULL, 8, 8, &err) ||
        cf_column_close(c, &err)) goto fail;
    cf_file_close(f);
    if (back[2] != p[N - 1].pos[2] || id != p[N - 1].id) {
        fprintf(stderr, "read back the wrong values\n");
        return 1;
    }
    printf("wrote %d particles to %s (colfile %s); last ID %lld\n", N, argv[1], cf_version(), (long long)id);
    return 0;
fail:
    fprintf(stderr, "colfile error %s: %s\n", cf_error_name(err.code), err.message);
    cf_column_close(c, NULL);
    cf_file_close(f);
    return 1;
}
