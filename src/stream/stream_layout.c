/* stream_layout.c - where a stream's chunks go (docs/format.md 8.7): tasks
 * mapped to physical files in contiguous runs, chunk b of a task at
 * (b x tasks_in_file + local_task) x chunk, computed by each task alone. */
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>

#include "error.h"
#include "stream_impl.h"

#define OFFSET_MAX ((int64_t)1 << 62)

int64_t cf_stream_file_of(int64_t tasks, int64_t files, int64_t task, int64_t *first, int64_t *count)
{
    if (tasks < 1 || tasks > CF_STREAM_TASKS_MAX || files < 1 || files > tasks || files > CF_STREAM_FILES_MAX ||
        task < 0 || task >= tasks)
        return -1;
    /* file f holds tasks floor(f P / M) .. floor((f+1) P / M) - 1 (the
     * split of docs/format.md 3.5); products stay below 2^55 */
    int64_t f = ((task + 1) * files - 1) / tasks;
    int64_t lo = f * tasks / files, hi = (f + 1) * tasks / files;
    if (first) *first = lo;
    if (count) *count = hi - lo;
    return f;
}

int64_t cf_stream_chunk_offset(const cf_stream_layout *layout, int64_t task, int64_t block)
{
    int64_t first, n;
    if (!layout || block < 0 || layout->chunk < 1 ||
        cf_stream_file_of(layout->tasks, layout->files, task, &first, &n) < 0)
        return -1;
    int64_t slot_limit = OFFSET_MAX / layout->chunk; /* chunks that fit below 2^62 */
    if (block > (slot_limit - (task - first)) / n) return -1;
    int64_t slot = block * n + (task - first);
    if (slot >= slot_limit) return -1;
    return slot * layout->chunk;
}

int cf__stream_layout_check(const cf_stream_layout *l, const char *context, cf_error *err)
{
    if (l->tasks < 1 || l->tasks > CF_STREAM_TASKS_MAX)
        return CF_FAIL(err, CF_EARG, "%s: tasks must be in 1..%lld, got %lld", context,
                       (long long)CF_STREAM_TASKS_MAX, (long long)l->tasks);
    int64_t max_files = l->tasks < CF_STREAM_FILES_MAX ? l->tasks : CF_STREAM_FILES_MAX;
    if (l->files < 1 || l->files > max_files)
        return CF_FAIL(err, CF_EARG, "%s: files must be in 1..%lld (at most one per task), got %lld", context,
                       (long long)max_files, (long long)l->files);
    if (l->align < 1 || l->align > CF_STREAM_CHUNK_MAX)
        return CF_FAIL(err, CF_EARG, "%s: align must be in 1..%lld, got %lld", context,
                       (long long)CF_STREAM_CHUNK_MAX, (long long)l->align);
    if (l->chunk < 1 || l->chunk > CF_STREAM_CHUNK_MAX || l->chunk % l->align != 0)
        return CF_FAIL(err, CF_EARG, "%s: chunk must be a multiple of align %lld in 1..%lld, got %lld", context,
                       (long long)l->align, (long long)CF_STREAM_CHUNK_MAX, (long long)l->chunk);
    return 0;
}

int cf_stream_layout_choose(cf_stream_layout *out, cf_file *f, int64_t tasks, int64_t files, int64_t chunk,
                            int64_t align, cf_error *err)
{
    if (!out || !f) return CF_FAIL(err, CF_EARG, "cf_stream_layout_choose: NULL argument");
    const char *path = cf_file_path(f);
    if (files < 0 || chunk < 0 || align < 0)
        return CF_FAIL(err, CF_EARG, "%s: files, chunk and align must not be negative (%lld, %lld, %lld)", path,
                       (long long)files, (long long)chunk, (long long)align);
    if (align == 0) {
        struct stat st;
        if (stat(path, &st) != 0) {
            int e = errno;
            return CF_FAIL(err, cf__errno_code(e), "%s: cannot stat the File for its block size: %s", path,
                           strerror(e));
        }
        align = st.st_blksize > 0 ? (int64_t)st.st_blksize : 4096;
    }
    if (chunk == 0) chunk = CF_STREAM_CHUNK_DEFAULT;
    if (align > CF_STREAM_CHUNK_MAX || chunk > CF_STREAM_CHUNK_MAX)
        return CF_FAIL(err, CF_EARG, "%s: chunk %lld or align %lld above %lld", path, (long long)chunk,
                       (long long)align, (long long)CF_STREAM_CHUNK_MAX);
    cf_stream_layout l = { tasks, files ? files : 1, (chunk + align - 1) / align * align, align };
    int rc = cf__stream_layout_check(&l, path, err);
    if (rc) return rc;
    *out = l;
    return 0;
}

int64_t cf_stream_files_default(const cf_file *f, int64_t tasks, int64_t nodes)
{
    static const char *const local[] = { "ext4", "xfs", "btrfs", "tmpfs", "zfs", "bcachefs", "overlayfs" };
    const char *type = f ? cf_file_fs_type(f) : "unknown";
    int64_t files = nodes;
    for (size_t i = 0; i < sizeof local / sizeof *local; i++)
        if (strcmp(type, local[i]) == 0) files = tasks;
    int64_t most = tasks < CF_STREAM_FILES_MAX ? tasks : CF_STREAM_FILES_MAX;
    return files < 1 ? 1 : files > most ? most : files;
}

void cf__stream_data_name(int64_t file, char out[40])
{
    snprintf(out, 40, CF__STREAM_DATA_PREFIX "%06llX", (unsigned long long)file);
}
