"""The C declarations of libcolfile's API, as cffi reads them.

They repeat, by hand, every exported function, enum and struct of
``include/colfile.h`` and ``include/colfile_errors.h`` (tests/python/
test_ffi.py checks that they match).  cffi does not read this at import:
``tools/gen_ffi.py`` turns it into ``_ffi_abi.py``, whose precompiled type
tables load in about a millisecond where parsing these declarations took
about 100 ms.  After changing it, run ``python3 tools/gen_ffi.py``.
"""

#: The C declarations.  Keep in step with include/colfile.h.
CDEF = r"""
/* colfile_errors.h */
enum cf_error_code {
    CF_OK = 0, CF_EIO = -1, CF_ENOENT = -2, CF_EEXIST = -3, CF_ENAME = -4,
    CF_EDTYPE = -5, CF_ECAST = -6, CF_EFORMAT = -7, CF_ERANGE = -8,
    CF_ENOMEM = -9, CF_EARG = -10, CF_ECHECKSUM = -11, CF_EREADONLY = -12,
    CF_ESHORT = -13, CF_ENOTFILE = -14, CF_EKIND = -15, CF_ETORN = -16,
    CF_EBUSY = -17, CF_EREPLACED = -18
};
const char *cf_error_name(int code);
const char *cf_error_text(int code);

/* colfile.h */
const char *cf_version(void);

typedef struct cf_error {
    int code;
    int source_line;
    const char *source_file;
    char message[1024];
} cf_error;

int cf_dtype_normalize(const char *dtype, char out[16], cf_error *err);
int64_t cf_dtype_itemsize(const char *dtype);
int cf_dtype_can_cast(const char *from, const char *to);
int cf_dtype_convert(void *dst, int64_t dst_stride, const char *to,
                     const void *src, int64_t src_stride, const char *from,
                     int64_t count, cf_error *err);

typedef struct cf_file cf_file;
enum cf_open_flags {
    CF_OPEN_READ = 0, CF_OPEN_WRITE = 1, CF_OPEN_CREATE = 2,
    CF_OPEN_EXCL = 4, CF_OPEN_TRUNCATE = 8, CF_OPEN_NOCHECK = 16,
    CF_OPEN_NODURABLE = 32, CF_OPEN_TORN_OK = 64, CF_OPEN_VERIFY = 128,
    CF_OPEN_NOLOCK = 256, CF_OPEN_NOLOCKING = 512
};
int cf_file_open(cf_file **out, const char *path, int flags, cf_error *err);
void cf_file_close(cf_file *f);
void cf_file_forget_locks(cf_file *f);
const char *cf_file_path(const cf_file *f);
int cf_file_writable(const cf_file *f);
int cf_file_flags(const cf_file *f);
const char *cf_file_fs_type(const cf_file *f);
const char *cf_file_lock_scope(const cf_file *f);
enum cf_cleanup_flags { CF_CLEANUP_DRY_RUN = 1, CF_CLEANUP_FORCE = 2 };
int cf_file_cleanup(cf_file *f, int flags, char ***lines, int64_t *count, cf_error *err);
int cf_file_list(cf_file *f, char ***names, int64_t *count, cf_error *err);
void cf_names_free(char **names, int64_t count);
int cf_file_catalog_update(cf_file *f, cf_error *err);
int cf_file_column_attrs(cf_file *f, void **buf, size_t *len, cf_error *err);
int cf_file_remove(cf_file *f, const char *name, cf_error *err);
int cf_file_remove_group(cf_file *f, const char *name, cf_error *err);
int cf_name_check(const char *name, cf_error *err);

typedef struct cf_column cf_column;
enum cf_column_kind {
    CF_KIND_DATA = 0, CF_KIND_HEADER_ONLY = 1, CF_KIND_ATTRS_ONLY = 2
};
int cf_column_create(cf_column **out, cf_file *f, const char *name,
                     const char *dtype, int64_t nmemb, int64_t size,
                     int64_t nfile, cf_error *err);
int cf_column_create_blobs(cf_column **out, cf_file *f, const char *name,
                           const char *dtype, int64_t nmemb, int64_t nfile,
                           const int64_t *blob_rows, cf_error *err);
enum cf_create_flags { CF_CREATE_REPLACE = 1 };
int cf_column_create_ex(cf_column **out, cf_file *f, const char *name,
                        const char *dtype, int64_t nmemb, int64_t nfile,
                        const int64_t *blob_rows, unsigned flags, cf_error *err);
int cf_column_open(cf_column **out, cf_file *f, const char *name, cf_error *err);
int cf_column_flush(cf_column *c, cf_error *err);
int cf_column_close(cf_column *c, cf_error *err);
void cf_column_forget(cf_column *c);
int64_t cf_column_close_many(cf_column **cols, int64_t n, cf_error *errs);
typedef struct cf_committer cf_committer;
int cf_committer_new(cf_committer **out, cf_error *err);
int64_t cf_committer_submit(cf_committer *q, cf_column *c);
int64_t cf_committer_done(cf_committer *q);
int64_t cf_committer_wait(cf_committer *q, int64_t seq);
int64_t cf_committer_take_errors(cf_committer *q, cf_error *errs, int64_t n);
void cf_committer_hold(cf_committer *q, int hold);
void cf_committer_pause(cf_committer *q);
void cf_committer_resume(cf_committer *q);
void cf_committer_forget_after_fork(cf_committer *q);
void cf_committer_free(cf_committer *q);
const char *cf_column_name(const cf_column *c);
const char *cf_column_path(const cf_column *c);
const char *cf_column_dtype(const cf_column *c);
int cf_column_kind(const cf_column *c);
int cf_column_writable(const cf_column *c);
typedef struct cf_column_desc {
    const char *name;
    const char *path;
    const char *dtype;
    int kind;
    int writable;
    int64_t nmemb;
} cf_column_desc;
void cf_column_describe(const cf_column *c, cf_column_desc *d);
int64_t cf_column_itemsize(const cf_column *c);
int64_t cf_column_nmemb(const cf_column *c);
int64_t cf_column_size(const cf_column *c);
int64_t cf_column_nfile(const cf_column *c);
int64_t cf_column_blob_rows(const cf_column *c, int64_t i);
int64_t cf_column_blob_rows_held(cf_column *c, int64_t i, cf_error *err);
int64_t cf_column_row_offset(const cf_column *c, int64_t row);
uint32_t cf_column_blob_sum(const cf_column *c, int64_t i);
uint32_t cf_checksum_fold(uint32_t raw);
int cf_column_blob_crc32c(const cf_column *c, int64_t i, uint32_t *crc);
int cf_column_read(cf_column *c, int64_t start, int64_t count,
                   void *buf, const char *buf_dtype,
                   int64_t row_stride, int64_t elem_stride, cf_error *err);
int cf_column_read_rows(cf_column *c, const int64_t *rows, int64_t count,
                        void *buf, const char *buf_dtype,
                        int64_t row_stride, int64_t elem_stride, cf_error *err);
int cf_column_read_step(cf_column *c, int64_t start, int64_t step, int64_t count,
                        void *buf, const char *buf_dtype,
                        int64_t row_stride, int64_t elem_stride, cf_error *err);
int cf_column_write(cf_column *c, int64_t start, int64_t count,
                    const void *buf, const char *buf_dtype,
                    int64_t row_stride, int64_t elem_stride, cf_error *err);
int cf_column_write_rows(cf_column *c, const int64_t *rows, int64_t count,
                         const void *buf, const char *buf_dtype,
                         int64_t row_stride, int64_t elem_stride, cf_error *err);
int cf_column_grow(cf_column *c, int64_t rows, int64_t nfile, cf_error *err);
int cf_column_pending_export(cf_column *c, void **buf, size_t *len, cf_error *err);
int cf_column_pending_merge(cf_column *c, const void *buf, size_t len, cf_error *err);
int cf_column_export_meta(cf_column *c, void **buf, size_t *len, cf_error *err);
int cf_column_open_meta(cf_column **out, cf_file *f, const void *buf, size_t len,
                        cf_error *err);
void cf_free(void *p);
enum cf_blob_status {
    CF_BLOB_OK = 0, CF_BLOB_MISSING = 1, CF_BLOB_SHORT = 2, CF_BLOB_LONG = 4,
    CF_BLOB_SUM_MISMATCH = 8, CF_BLOB_CRC_MISMATCH = 16,
    CF_BLOB_CRC_UNKNOWN = 32, CF_BLOB_STATS_MISMATCH = 64,
    CF_BLOB_STATS_DAMAGED = 128
};
int cf_column_verify_blob(cf_column *c, int64_t i, unsigned *status,
                          cf_error *err);
enum cf_ext_state {
    CF_EXT_CURRENT = 0, CF_EXT_ABSENT = 1, CF_EXT_UNBOUND = 2, CF_EXT_STALE = 3,
    CF_EXT_DAMAGED = 4, CF_EXT_UPDATING = 5, CF_EXT_TORN = 6
};
int cf_column_ext_state(cf_column *c, int *state, cf_error *err);

int cf_column_attr_set(cf_column *c, const char *name, const char *dtype,
                       int64_t nmemb, const void *data, cf_error *err);
int cf_column_attr_get(cf_column *c, const char *name, const char **dtype,
                       int64_t *nmemb, const void **data, cf_error *err);
int cf_column_attr_set_string(cf_column *c, const char *name, const char *value, cf_error *err);
int cf_column_attr_get_string(cf_column *c, const char *name, char **value, size_t *len,
                              cf_error *err);
int cf_column_attr_get_as(cf_column *c, const char *name, const char *dtype, void *buf,
                          int64_t capacity, int64_t *nmemb, cf_error *err);
int cf_column_attr_delete(cf_column *c, const char *name, cf_error *err);
int cf_column_attr_names(cf_column *c, char ***names, int64_t *count,
                         cf_error *err);

typedef struct cf_chunk_stats {
    int64_t blob;
    int64_t first_row;
    int64_t rows;
    int valid;
    int ordered;
    int64_t count;
    int64_t nan_count;
    double min, max;
    double sum;
} cf_chunk_stats;
int64_t cf_column_chunk_rows(const cf_column *c);
int cf_column_set_chunk_rows(cf_column *c, int64_t rows, cf_error *err);
int64_t cf_column_chunk_count(const cf_column *c);
int cf_column_chunk_stats(const cf_column *c, int64_t k, int64_t component,
                          cf_chunk_stats *out, cf_error *err);
int cf_column_index_blob(cf_column *c, int64_t i, cf_error *err);
int cf_column_set_statistics(cf_column *c, int enabled, cf_error *err);
int cf_column_torn(const cf_column *c);
void cf_column_discard(cf_column *c);
int cf_column_set_verify(cf_column *c, int enabled, cf_error *err);
int cf_column_verify_enabled(const cf_column *c);
enum cf_repair_bits {
    CF_REPAIR_SUMS = 1, CF_REPAIR_CRC = 2, CF_REPAIR_TRUNCATED = 4,
    CF_REPAIR_STRAY = 8, CF_REPAIR_TORN = 16
};
int cf_column_repair(cf_column *c, unsigned *fixed, cf_error *err);

#define CF_PLAN_BLOB_BYTES 268435456
#define CF_PLAN_GROUP_BYTES 67108864
#define CF_PLAN_SMALL_BYTES 4194304
#define CF_PLAN_CONCURRENCY 64
enum cf_io_mode { CF_IO_AUTO = 0, CF_IO_THROTTLED = 1, CF_IO_AGGREGATED = 2 };
int64_t cf_plan_share(int64_t total, int64_t parts, int64_t i, int64_t *first);
int64_t cf_plan_nfile(int64_t total_bytes, int64_t nranks, int64_t blob_bytes);
int cf_plan_blobs_by_rank(const int64_t *rank_rows, int64_t nranks, int64_t nfile,
                          int64_t *blob_rows, cf_error *err);
int64_t cf_plan_turn(int64_t rank, int64_t nranks, int64_t concurrency, int64_t *nturns);
int cf_plan_groups(const int64_t *rank_bytes, int64_t nranks, int64_t group_bytes,
                   int64_t *leader, cf_error *err);
int cf_plan_mode(int64_t total_bytes, int64_t nranks, int64_t small_bytes);
"""
