/* seedgen.c - the seed corpus of the fuzz targets, from the golden fixtures.
 *
 *     colfile_fuzz_seedgen FIXTURES_DIR CORPUS_DIR
 *
 * Walks FIXTURES_DIR (read only) and writes, under CORPUS_DIR/<target>/,
 * every `header`, `attr-v2` and `attr` file as found, and for each column
 * the files colfile would add, computed from its blobs: colfile-v1 with
 * the blobs' CRC32C, the statistics text (default and 2-row chunks, after
 * the header it belongs to), a CFM1 snapshot and a CFP1 write state covering
 * the blobs.  The fixtures were written by bigfile and hold no colfile
 * files, so these are the realistic seeds for colfile's own formats.
 */
#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "attrs.h"
#include "checksum.h"
#include "ext.h"
#include "fuzz.h"
#include "fuzz_snapshot.h"
#include "header.h"
#include "stats.h"
#include "wire.h"

static const char *corpus;
static int written, failures;

static char *read_all(const char *path, size_t *len)
{
    FILE *fp = fopen(path, "rb");
    if (!fp) return NULL;
    size_t cap = 4096, n = 0;
    char *buf = malloc(cap);
    while (buf) {
        n += fread(buf + n, 1, cap - n, fp);
        if (n < cap) break;
        char *nb = realloc(buf, cap * 2);
        if (!nb) {
            free(buf);
            buf = NULL;
            break;
        }
        buf = nb;
        cap *= 2;
    }
    fclose(fp);
    if (buf) *len = n;
    return buf;
}

/* Write pieces joined by FUZZ_SEP to CORPUS_DIR/<target>/<seed name>. */
static void seed(const char *target, const char *name, int npieces, const void *const *piece, const size_t *len)
{
    char dir[4096], path[8192];
    snprintf(dir, sizeof dir, "%s/%s", corpus, target);
    if (mkdir(dir, 0775) != 0 && errno != EEXIST) {
        perror(dir);
        failures++;
        return;
    }
    snprintf(path, sizeof path, "%s/%s", dir, name);
    FILE *fp = fopen(path, "wb");
    if (!fp) {
        perror(path);
        failures++;
        return;
    }
    for (int i = 0; i < npieces; i++) {
        if (i) fwrite(FUZZ_SEP, 1, FUZZ_SEP_LEN, fp);
        if (len[i]) fwrite(piece[i], 1, len[i], fp);
    }
    if (fclose(fp) != 0) failures++;
    written++;
}

static void seed1(const char *target, const char *name, const void *p, size_t len)
{
    seed(target, name, 1, &p, &len);
}

/* Statistics of every complete blob of a column, chunk_rows rows a chunk
 * (blob[i] NULL or short: unknown). */
static int column_stats(cf__stats *s, const cf__header *h, unsigned char **blob, const size_t *blob_len,
                        int64_t chunk_rows)
{
    if (cf__stats_alloc(s, h, chunk_rows, "seed", NULL)) return -1;
    int64_t rowbytes = h->nmemb * h->dtype.width;
    for (int64_t b = 0; b < h->nfile; b++) {
        if (h->rows[b] == 0 || !blob[b] || (int64_t)blob_len[b] < h->rows[b] * rowbytes) continue;
        for (int64_t k = 0; k < cf__stats_blob_chunks(s, b); k++) {
            int64_t r0 = k * chunk_rows, n = h->rows[b] - r0 < chunk_rows ? h->rows[b] - r0 : chunk_rows;
            cf__acc_add(cf__stats_chunk(s, b, k), h->nmemb, 0, blob[b] + r0 * rowbytes, n * h->nmemb, &h->dtype);
        }
        s->valid[b] = 1;
    }
    return 0;
}

/* The CFP1 state of one writer that wrote every complete blob whole, in
 * `pieces` segments each. */
static void pending_state(cf__wire_out *o, const cf__header *h, const cf__stats *s, unsigned char **blob,
                          const size_t *blob_len, int pieces)
{
    int64_t rowbytes = h->nmemb * h->dtype.width, entries = 0;
    for (int64_t b = 0; b < h->nfile; b++) entries += s->valid[b] && h->rows[b] > 0;
    cf__wire_put(o, "CFP1", 4);
    cf__wire_put_u64(o, (uint64_t)h->nfile);
    cf__wire_put_u64(o, (uint64_t)s->chunk_rows);
    cf__wire_put_u64(o, (uint64_t)entries);
    for (int64_t b = 0; b < h->nfile; b++) {
        if (!s->valid[b] || h->rows[b] == 0) continue;
        int64_t bytes = h->rows[b] * rowbytes;
        (void)blob_len;
        cf__wire_put_u64(o, (uint64_t)b);
        cf__wire_put_u32(o, cf__sysv_add(0, blob[b], (size_t)bytes));
        unsigned char overflow = 0;
        cf__wire_put(o, &overflow, 1);
        cf__wire_put_u64(o, (uint64_t)pieces);
        for (int k = 0; k < pieces; k++) {
            int64_t lo = bytes * k / pieces, hi = bytes * (k + 1) / pieces;
            cf__wire_put_u64(o, (uint64_t)lo);
            cf__wire_put_u64(o, (uint64_t)(hi - lo));
            cf__wire_put_u32(o, cf__crc32c_update(0, blob[b] + lo, (size_t)(hi - lo)));
        }
        /* one run: the blob's chunks, all held (written whole) */
        int64_t nacc = s->blob[b].nrun ? s->blob[b].run[0].n * h->nmemb : 0;
        cf__wire_put_u64(o, 1);
        cf__wire_put_u64(o, 0);
        cf__wire_put_u64(o, (uint64_t)nacc);
        const cf__acc *acc = s->blob[b].nrun ? s->blob[b].run[0].acc : NULL;
        for (int64_t k = 0; k < nacc; k++) {
            uint64_t v[2], w[CF__XSUM_WIRE_WORDS];
            memcpy(v, &acc[k].v, sizeof v);
            cf__wire_put_u64(o, (uint64_t)acc[k].count);
            cf__wire_put_u64(o, (uint64_t)acc[k].nan);
            cf__wire_put_u64(o, v[0]);
            cf__wire_put_u64(o, v[1]);
            int nw = cf__xsum_to_words(&acc[k].xs, w);
            for (int i = 0; i < nw; i++) cf__wire_put_u64(o, w[i]);
        }
    }
}

/* The seeds of one column directory: header text already read. */
static void column_seeds(const char *dir, const char *id, const char *htext, size_t hlen)
{
    cf__header h;
    if (cf__header_parse(&h, htext, hlen, dir, NULL)) return;
    unsigned char **blob = calloc((size_t)h.nfile + 1, sizeof *blob);
    size_t *blob_len = calloc((size_t)h.nfile + 1, sizeof *blob_len);
    uint32_t *crc = calloc((size_t)h.nfile + 1, sizeof *crc);
    unsigned char *known = calloc((size_t)h.nfile + 1, 1);
    if (!blob || !blob_len || !crc || !known) abort();
    int64_t rowbytes = h.nmemb * h.dtype.width;
    for (int64_t b = 0; b < h.nfile; b++) {
        char path[8192];
        snprintf(path, sizeof path, "%s/%06llX", dir, (unsigned long long)b);
        blob[b] = (unsigned char *)read_all(path, &blob_len[b]);
        int64_t need = h.rows[b] * rowbytes;
        if (h.rows[b] == 0 || (blob[b] && (int64_t)blob_len[b] >= need)) {
            crc[b] = h.rows[b] ? cf__crc32c_update(0, blob[b], (size_t)need) : 0;
            known[b] = 1;
        }
    }
    char name[512];
    char *ext = NULL, *st = NULL, *attrs = NULL;
    size_t xl = 0, sl = 0, al = 0;
    if (cf__ext_format(&h, crc, known, &ext, &xl, dir, NULL) == 0) {
        snprintf(name, sizeof name, "%s.colfile-v1", id);
        seed1("ext", name, ext, xl);
        /* the whole file as a commit writes it (statistics left out) */
        char *sealed;
        size_t sealed_len;
        if (cf__ext_assemble(ext, xl, "", 0, &sealed, &sealed_len, dir, NULL) == 0) {
            snprintf(name, sizeof name, "%s.colfile-v1-sealed", id);
            seed1("ext", name, sealed, sealed_len);
            free(sealed);
        }
    }
    int64_t chunks[2] = { cf__stats_default_chunk_rows(rowbytes), 2 };
    for (int v = 0; v < 2; v++) {
        cf__stats s;
        if (h.nmemb == 0 || column_stats(&s, &h, blob, blob_len, chunks[v])) continue;
        char *text;
        size_t len;
        if (cf__stats_format(&s, &h, &text, &len, dir, NULL) == 0) {
            const void *piece[2] = { htext, text };
            size_t plen[2] = { hlen, len };
            snprintf(name, sizeof name, "%s.stats-%lld", id, (long long)chunks[v]);
            seed("stats", name, 2, piece, plen);
            if (v == 0) {
                st = text;
                sl = len;
                for (int pieces = 1; pieces <= 2; pieces++) {
                    cf__wire_out o = { NULL, 0, 0, 0 };
                    pending_state(&o, &h, &s, blob, blob_len, pieces);
                    const void *pp[2] = { htext, o.p };
                    size_t ppl[2] = { hlen, o.len };
                    snprintf(name, sizeof name, "%s.cfp1-%d", id, pieces);
                    if (!o.failed) seed("pending", name, 2, pp, ppl);
                    free(o.p);
                }
            } else {
                free(text);
            }
        }
        cf__stats_free(&s);
    }
    /* The snapshot rank 0 would send, made by the library from a scratch
     * copy of the column's metadata files with the colfile files added. */
    char path[8192], sdir[4096], scol[4200];
    snprintf(path, sizeof path, "%s/attr-v2", dir);
    attrs = read_all(path, &al);
    size_t vl = 0;
    snprintf(path, sizeof path, "%s/attr", dir);
    char *v1 = read_all(path, &vl);
    if (fuzz_scratch_dir(sdir, sizeof sdir, scol, sizeof scol) == 0) {
        void *snap;
        size_t snap_len;
        cf_error err;
        /* colfile-v1 as colfile writes it: sealed, and with the mtime of
         * the header written with it (docs/format.md 8.1), so that the
         * snapshot carries the CRCs and statistics */
        int bad = fuzz_write_file(scol, "header", htext, hlen);
        struct stat hst;
        char hp[4300], xp[4300], *sealed = NULL;
        size_t sealed_len = 0;
        snprintf(hp, sizeof hp, "%s/header", scol);
        snprintf(xp, sizeof xp, "%s/%s", scol, CF__EXT_NAME);
        if (!bad && ext && stat(hp, &hst) == 0 &&
            cf__ext_assemble(ext, xl, st ? st : "", st ? sl : 0, &sealed, &sealed_len, scol, NULL))
            sealed = NULL;
        bad = bad || fuzz_write_file(scol, "attr-v2", attrs ? attrs : "", attrs ? al : 0) ||
              (v1 && fuzz_write_file(scol, "attr", v1, vl)) ||
              (sealed && fuzz_write_file(scol, CF__EXT_NAME, sealed, sealed_len));
        if (!bad && sealed) {
            struct timespec ts[2] = { { 0, UTIME_OMIT }, hst.st_mtim };
            bad = utimensat(AT_FDCWD, xp, ts, 0) != 0;
        }
        free(sealed);
        if (bad) {
            perror(scol);
            failures++;
        } else if (fuzz_snapshot_of_dir(sdir, &snap, &snap_len, &err) == 0) {
            snprintf(name, sizeof name, "%s.cfm1", id);
            seed1("meta", name, snap, snap_len);
            cf_free(snap);
        } else {
            fprintf(stderr, "seedgen: %s: %s\n", dir, err.message);
        }
        fuzz_rm_tree(sdir);
    }
    free(v1);
    free(attrs);
    free(st);
    free(ext);
    for (int64_t b = 0; b < h.nfile; b++) free(blob[b]);
    free(blob);
    free(blob_len);
    free(crc);
    free(known);
    cf__header_free(&h);
}

/* A colfile-attrs file for a directory: its attributes again, as arrays
 * of no elements (what only colfile-attrs can hold). */
static void attrs_seed(const char *dir, const char *id)
{
    char path[8192];
    size_t vl = 0, al = 0;
    snprintf(path, sizeof path, "%s/attr", dir);
    char *v1 = read_all(path, &vl);
    snprintf(path, sizeof path, "%s/attr-v2", dir);
    char *v2 = read_all(path, &al);
    if (!v1 && !v2) return;
    cf__attrset s, e;
    cf__attrset_init(&s);
    cf__attrset_init(&e);
    char *ext = NULL;
    size_t xl = 0;
    if (v2 && cf__attrset_parse_v2(&s, v2, al, path, NULL) == 0) {
        for (size_t i = 0; i < s.count; i++) {
            char n[600];
            snprintf(n, sizeof n, "%s_empty", s.items[i].name);
            cf__attrset_set(&e, n, s.items[i].dtype, 0, NULL, NULL);
        }
        cf__attrset_format_v2(&e, NULL, &ext, &xl, NULL);
    }
    const void *piece[3] = { v1, v2, ext };
    size_t len[3] = { v1 ? vl : 0, v2 ? al : 0, ext ? xl : 0 };
    char name[512];
    snprintf(name, sizeof name, "%s.attrs", id);
    seed("colfile_attrs", name, 3, piece, len);
    free(ext);
    cf__attrset_free(&s);
    cf__attrset_free(&e);
    free(v1);
    free(v2);
}

static size_t root_len;

static int visit(const char *path, const struct stat *st, int type, struct FTW *ftw)
{
    (void)st;
    (void)ftw;
    if (type != FTW_D) return 0;
    /* A seed name from the directory's path below the fixtures root. */
    char id[512];
    const char *rel = path + root_len;
    while (*rel == '/') rel++;
    snprintf(id, sizeof id, "%s", *rel ? rel : "root");
    for (char *c = id; *c; c++)
        if (*c == '/' || *c == '.') *c = '_';
    char file[8192], name[600];
    size_t len;
    char *text;
    snprintf(file, sizeof file, "%s/header", path);
    if ((text = read_all(file, &len))) {
        seed1("header", id, text, len);
        column_seeds(path, id, text, len);
        free(text);
    }
    snprintf(file, sizeof file, "%s/attr-v2", path);
    if ((text = read_all(file, &len))) {
        snprintf(name, sizeof name, "%s.attr-v2", id);
        if (len) seed1("attr_v2", name, text, len);
        free(text);
    }
    snprintf(file, sizeof file, "%s/attr", path);
    if ((text = read_all(file, &len))) {
        snprintf(name, sizeof name, "%s.attr", id);
        seed1("attr_v1", name, text, len);
        free(text);
    }
    attrs_seed(path, id);
    return 0;
}

int main(int argc, char **argv)
{
    if (argc != 3) {
        fprintf(stderr, "usage: %s FIXTURES_DIR CORPUS_DIR\n", argv[0]);
        return 2;
    }
    corpus = argv[2];
    if (mkdir(corpus, 0775) != 0 && errno != EEXIST) {
        perror(corpus);
        return 1;
    }
    root_len = strlen(argv[1]);
    if (nftw(argv[1], visit, 16, FTW_PHYS) != 0) {
        perror(argv[1]);
        return 1;
    }
    printf("seedgen: %d seeds from %s\n", written, argv[1]);
    return failures ? 1 : 0;
}
