/* stats.h - per-chunk data characteristics (min, max, count, sum, NaN count
 * per vector component) and their text, the tail of `colfile-v1` (older
 * colfile: the file `colfile-stats-v1`) (internal).
 *
 * A column's rows are cut into chunks of `chunk_rows` rows; chunks restart
 * at each blob's first row, so blob b has ceil(rows_b / chunk_rows) chunks
 * (none when it has no rows).  Every chunk keeps one accumulator per vector
 * component (nmemb of them).  Accumulators combine associatively and
 * commutatively, so partial chunks written by different processes merge.
 */
#ifndef CF_STATS_H
#define CF_STATS_H

#include <stddef.h>
#include <stdint.h>

#include "colfile.h"
#include "dtype.h"
#include "header.h"
#include "stats_xsum.h"

/* where older colfile kept the statistics text: read, never written */
#define CF__STATS_NAME "colfile-stats-v1"

/* One component of one chunk.  min/max are typed by the column's kind:
 * signed ints in i.min/i.max, unsigned (and bool) in u.min/u.max, floats
 * (f2 f4 f8, widened exactly) in f.min/f.max over the non-NaN values.
 * Complex and S columns keep count (and nan for complex: either part NaN)
 * only.  xs holds the exact sum of the non-NaN values (floats), the values
 * (ints) or the number of true values (bool): whatever the order values and
 * partial accumulators arrive in, it holds the same number, and
 * cf__acc_sum rounds it to the same double. */
typedef struct cf__acc {
    int64_t count;     /* values seen, NaNs included; 0 means min/max unset */
    int64_t nan;       /* NaN values */
    union {
        struct { int64_t min, max; } i;
        struct { uint64_t min, max; } u;
        struct { double min, max; } f; /* if every value was NaN: min > max */
    } v;
    cf__xsum xs;
    double hint;       /* the AVX2 row folder's last largest |x| (0: none): speed only, never data */
} cf__acc;

/* The fine level (docs/format.md 8.6, "the fine level"): min and max of
 * one component over one sub-chunk, as doubles (integers rounded outward
 * when a record is made), NaNs left out, and the values seen, so that a
 * sub-chunk whose values did not all pass through this handle's writes
 * (merged from other processes, read from a text) is known to be
 * incomplete. */
typedef struct cf__fine {
    double mn, mx;      /* integers: exact while |v| <= 2^53, see cf__fine_add */
    int64_t imn, imx;   /* integer columns: the exact bounds (signed or unsigned bits) */
    int64_t count;
} cf__fine;

/* The sum as the statistics text spells it: the exact sum rounded to the
 * nearest double (0.0 for kinds without sums). */
double cf__acc_sum(const cf__acc *a);

/* Which union member a dtype uses: 'i', 'u' (unsigned and bool), 'f'
 * (f2/f4/f8), or 0 (complex, S: count and nan only). */
char cf__acc_class(const cf__dtype *d);

/* An empty accumulator (count 0; min/max at their identity elements). */
void cf__acc_init(cf__acc *a, const cf__dtype *d);

/* Fold `into` += `from` (same dtype). */
void cf__acc_merge(cf__acc *into, const cf__acc *from, const cf__dtype *d);

/* An accumulator on the wire between processes (wire.h): count, NaN
 * count, the min/max bits, the exact sum's words. */
struct cf__wire_out;
struct cf__wire_in;
void cf__acc_put(struct cf__wire_out *o, const cf__acc *a);
/* 0, or -1: truncated; -2: an exact sum no writer could have sent. */
int cf__acc_get(struct cf__wire_in *in, cf__acc *a);

/* Accumulate `n` elements of dtype d (in d's byte order, contiguous) that
 * belong to consecutive positions of rows with `nmemb` components, the
 * first element being component `component0`: element k goes to
 * acc[(component0 + k) % nmemb].  acc has nmemb entries.  No allocation;
 * tight loops for the native-order nmemb == 1 case (the common one). */
void cf__acc_add(cf__acc *acc, int64_t nmemb, int64_t component0, const void *data, int64_t n,
                 const cf__dtype *d);

/* As cf__acc_add, with the AVX2 kernels (avx2 1), with the AVX-512 ones
 * too where there are any (avx2 2), or without either (avx2 0); 1 only
 * if the CPU has AVX2, 2 only if it has AVX-512F as well.  For the tests:
 * all give the same accumulators. */
void cf__acc_add_simd(cf__acc *acc, int64_t nmemb, int64_t component0, const void *data, int64_t n,
                      const cf__dtype *d, int avx2);

/* The coarsest default rows per chunk for rows of `rowbytes` bytes: the
 * largest power of two <= 2^20 whose chunk holds at most 8 MiB (at least
 * 1). */
int64_t cf__stats_default_chunk_rows(int64_t rowbytes);

/* Chunks a column gets by default, where its size allows: enough that a
 * 1%-selective query on clustered data reads about 2% of the column
 * (docs/query.md, "Default chunks"). */
#define CF__STATS_TARGET_CHUNKS ((int64_t)1 << 15)
/* The smallest default chunk, per vector component: the commit's fixed
 * cost per chunk then stays within 5% of the write. */
#define CF__STATS_MIN_COMPONENT_BYTES ((int64_t)512 << 10)

/* Default rows per chunk for a column created with `rows` rows of `nmemb`
 * components of `width` bytes: a power of two, the smallest with at least
 * CF__STATS_MIN_COMPONENT_BYTES per component, doubled while the column
 * still has CF__STATS_TARGET_CHUNKS chunks, never above
 * cf__stats_default_chunk_rows (which a column created empty gets: it may
 * grow to any size).  Without appends a column has at most the larger of
 * 2 * CF__STATS_TARGET_CHUNKS chunks and the number
 * cf__stats_default_chunk_rows gives (plus one per blob, chunks restarting
 * at each). */
int64_t cf__stats_chunk_rows_for(int64_t rows, int64_t nmemb, int64_t width);

/* Rows per sub-chunk for chunks of chunk_rows rows of a dtype whose
 * components are `width` bytes, class cls (cf__acc_class), native order
 * or not: a power of two holding at least one 4 KiB page per component,
 * at least chunk_rows / CF__FINE_MAX_PER_CHUNK, for native f4 and f8
 * columns; 0 (no fine level) for other dtypes (integers included: the
 * kernels that fold them could keep the bounds, cf__fine_add does, but a
 * pass of its own costs as much as their chunk statistics) or chunks no
 * larger than one sub-chunk. */
#define CF__FINE_PAGE 4096
#define CF__FINE_MAX_PER_CHUNK 1024
int64_t cf__stats_fine_rows(int64_t chunk_rows, const cf__dtype *d);

/* Fold n elements (native order; the first is component c0 of its row)
 * that all lie in one sub-chunk into its nmemb entries f. */
void cf__fine_add(cf__fine *f, int64_t nmemb, int64_t c0, const void *data, int64_t n, const cf__dtype *d);
/* As cf__fine_add, with AVX2 (1) or without (0): the same entries. */
void cf__fine_add_simd(cf__fine *f, int64_t nmemb, int64_t c0, const void *data, int64_t n, const cf__dtype *d,
                       int avx2);
/* A sub-chunk's bounds as the index stores them (doubles, integers rounded
 * outward, a zero bound widened to -0.0 / +0.0). */
void cf__fine_bounds(const cf__fine *f, char cls, double *mn, double *mx);

/* Accumulators held for chunks [lo, lo + n) of a blob, nmemb each, and
 * their sub-chunks' fine entries (fine_m x nmemb per chunk; NULL when the
 * column has no fine level). */
typedef struct cf__acc_run {
    int64_t lo, n;
    cf__acc *acc;
    cf__fine *fine;
} cf__acc_run;

/* The accumulators held for one blob: runs of chunks, sorted, disjoint and
 * never adjacent (adjacent runs merge).  Chunks in no run are empty
 * (nothing written to them, or no statistics for them in the text).
 * Memory thus follows the data written and the statistics text read,
 * never the rows a header claims. */
typedef struct cf__blob_stats {
    cf__acc_run *run;
    int64_t nrun, cap;
    int lost;               /* an allocation failed: unknown until reset */
} cf__blob_stats;

/* The statistics of a column as held in memory and in the file. */
typedef struct cf__stats {
    int64_t chunk_rows;
    int64_t fine_rows;      /* rows per sub-chunk (cf__stats_fine_rows), 0: no fine level */
    int64_t fine_m;         /* sub-chunks per chunk: ceil(chunk_rows / fine_rows), 0 without */
    int64_t nmemb;
    int64_t nfile;
    char cls;               /* cf__acc_class of the column's dtype */
    int64_t *first_chunk;   /* nfile + 1: chunk index of each blob's first chunk */
    cf__blob_stats *blob;   /* nfile */
    unsigned char *valid;   /* nfile: 1 if blob b's chunks are complete and current */
} cf__stats;

/* Set up statistics for the blob layout of h (rows per blob) with
 * chunk_rows rows per chunk: no accumulators held, every blob invalid
 * except blobs with no rows (valid: nothing to know).  Allocates O(nfile)
 * only.  CF_ENOMEM. */
int cf__stats_alloc(cf__stats *s, const cf__header *h, int64_t chunk_rows, const char *path, cf_error *err);
void cf__stats_free(cf__stats *s);

/* Re-layout after blobs were added to h (grow): blobs [0, old_nfile) keep
 * their accumulators and validity.  CF_ENOMEM. */
int cf__stats_grow(cf__stats *s, const cf__header *h, int64_t old_nfile, const char *path, cf_error *err);

/* Number of chunks of blob b (as the header says: nothing is held for
 * them until they are written or parsed). */
int64_t cf__stats_blob_chunks(const cf__stats *s, int64_t b);

/* The accumulators of chunk k of blob b if held, else NULL (empty). */
const cf__acc *cf__stats_peek(const cf__stats *s, int64_t b, int64_t k);

/* The accumulators of chunks [k0, k1) of blob b, contiguous (one run),
 * held from now on (allocated, empty, where they were not): a pointer to
 * chunk k0's, valid until the next call for the same blob.  Runs within
 * their own length of [k0, k1) merge into it, so what a blob holds stays
 * within a small multiple of the chunks touched.  NULL if the range is not
 * in the blob or memory ran out (the blob's statistics are then lost:
 * cf__stats_blob_whole says 0 until cf__stats_reset_blob). */
cf__acc *cf__stats_chunks(cf__stats *s, int64_t b, int64_t k0, int64_t k1);
cf__acc *cf__stats_chunk(cf__stats *s, int64_t b, int64_t k);

/* Keep a fine level from now on (for the dtype d; none for dtypes
 * cf__stats_fine_rows gives 0): chunks held after this get fine entries,
 * those held before stay without (their blocks unknown).  Only reading
 * data back asks for one (cf_column_index_blob): a write never keeps a
 * fine level, so the index a write leaves does not depend on how its rows
 * were split over processes and calls. */
void cf__stats_keep_fine(cf__stats *s, const cf__dtype *d);

/* The fine entries of held chunk k of blob b (fine_m x nmemb), NULL when
 * not held or the column has no fine level. */
cf__fine *cf__stats_fine(const cf__stats *s, int64_t b, int64_t k);

/* Drop blob b's accumulators (all empty again, none held, not lost).
 * Validity is the caller's. */
void cf__stats_reset_blob(cf__stats *s, int64_t b);

/* Drop blob b's accumulators and mark them lost (another handle's writes
 * to it could not be counted), until cf__stats_reset_blob. */
void cf__stats_lose_blob(cf__stats *s, int64_t b);

/* 1 if chunks [k0, k1) of blob b are all held and the blob's statistics
 * are not lost: a holder of some of a blob's chunks (the owner of them at
 * a collective close) says so for its part of cf__stats_blob_whole. */
int cf__stats_holds(const cf__stats *s, int64_t b, int64_t k0, int64_t k1);

/* 1 if every chunk of blob b is held (statistics can describe it whole). */
int cf__stats_blob_whole(const cf__stats *s, int64_t b);

/* The statistics text (docs/format.md 8.4): colfile-v1's tail, or the
 * older file colfile-stats-v1.  Format: text, LF:
 *   COLFILE-STATS: 1
 *   DTYPE: <f8
 *   NMEMB: 3
 *   NFILE: 2
 *   CHUNK: 262144
 *   then for each blob with valid statistics, in id order:
 *   <ID>: <rows> : <rawsum>
 *   and one line per chunk k and component j of that blob:
 *   <k> <j> count=<n> nan=<n> min=<v> max=<v> sum=<v>
 * Values print exactly: integers in decimal, floats with %.17g (nan, inf,
 * -inf spelled so), sum (the exact sum correctly rounded) with %.17g; for kinds with no min/max (complex, S)
 * min= and max= are '-'.  The blob line is the staleness key, as in
 * colfile-v1: a blob's statistics are trusted only if the header still
 * says the same rows and rawsum for it (and DTYPE/NMEMB match). */
int cf__stats_format(const cf__stats *s, const cf__header *h, char **text, size_t *len, const char *path,
                     cf_error *err);

/* A double as the file spells it (nan, inf, -inf or printf's "%.17g" in
 * the C locale) into out (cap >= 32); returns its length.  For the tests. */
int cf__stats_fmt_double(char *out, size_t cap, double v);

/* Parse the file for the column whose current header is h into s (which
 * must be zeroed or allocated; it is freed and re-allocated with the file's
 * CHUNK): blobs whose record is current become valid with their
 * accumulators; everything else stays invalid (and empty).  A damaged file (CF_EFORMAT "<path>:<line>: ...") leaves s
 * all invalid; callers treat that as "no statistics", never as an error
 * that stops the column from opening.  Never reads outside text[0..len). */
int cf__stats_parse(cf__stats *s, const cf__header *h, const char *text, size_t len, const char *path,
                    cf_error *err);

#endif
