/* test_stream_read.c - reading streams: the global view at any start,
 * one task's rows, chunk locations, and damage (docs/format.md 8.7). */
#include <fcntl.h>
#include <sys/stat.h>

#include "harness.h"
#include "checksum.h"
#include "colfile_stream.h"

/* A raw stream of 7 tasks over 3 files, chunks of 512 bytes: task t has
 * t * 300 bytes, byte k of it is (t * 31 + k) mod 251. */
static cf_file *make_raw(void)
{
    cf_file *f = cf_test_open_new("f");
    cf_error err;
    cf_stream_layout l;
    cf_stream_writer *w = NULL;
    CHECK_OK(cf_stream_layout_choose(&l, f, 7, 3, 512, 512, &err), &err);
    CHECK_OK(cf_stream_create(&w, f, "raw", "raw", 1, &l, &err), &err);
    unsigned char buf[2100];
    for (int t = 0; t < 7; t++) {
        cf_stream_task *h;
        CHECK_OK(cf_stream_task_open(&h, w, t, &err), &err);
        for (int k = 0; k < t * 300; k++) buf[k] = (unsigned char)((t * 31 + k) % 251);
        for (int at = 0; at < t * 300; at += 97) {
            int n = t * 300 - at < 97 ? t * 300 - at : 97;
            CHECK_OK(cf_stream_append(h, buf + at, n, &err), &err);
        }
    }
    CHECK_OK(cf_stream_close(w, &err), &err);
    return f;
}

static unsigned char expect(int64_t global)
{
    int64_t t = 0;
    while (global >= t * 300) global -= t * 300, t++;
    return (unsigned char)((t * 31 + global) % 251);
}

static void test_global_view(void)
{
    cf_file *f = make_raw();
    cf_error err;
    cf_stream_reader *r = NULL;
    CHECK_OK(cf_stream_open(&r, f, "raw", &err), &err);
    if (!r) return;
    char dtype[CF_DTYPE_MAX];
    int64_t nmemb;
    cf_stream_layout l;
    cf_stream_info(r, &l, dtype, &nmemb, NULL);
    CHECK_EQ_STR(dtype, "raw");
    CHECK_EQ_INT(nmemb, 1);
    CHECK_EQ_INT(l.files, 3);
    CHECK_EQ_INT(cf_stream_row_bytes(r), 1);
    int64_t size = cf_stream_size(r);
    CHECK_EQ_INT(size, 300 * 21);
    unsigned char buf[6400];
    cf_stream_set_verify(r, 1);
    /* every start and a few lengths, across task and chunk boundaries */
    for (int64_t start = 0; start <= size; start += 37)
        for (int64_t len = 0; len <= 1500 && start + len <= size; len += 499) {
            CHECK_OK(cf_stream_read(r, start, len, buf, &err), &err);
            for (int64_t i = 0; i < len; i++)
                if (buf[i] != expect(start + i)) {
                    CHECK_EQ_INT(buf[i], expect(start + i));
                    start = size;
                    break;
                }
        }
    CHECK_OK(cf_stream_read(r, 0, size, buf, &err), &err);
    CHECK_FAILS(cf_stream_read(r, size, 1, buf, &err), CF_ERANGE, &err, "outside");
    CHECK_FAILS(cf_stream_read(r, -1, 1, buf, &err), CF_ERANGE, &err, "outside");
    CHECK_FAILS(cf_stream_read_task(r, 2, 500, 101, buf, &err), CF_ERANGE, &err, "task 2");
    CHECK_FAILS(cf_stream_read_task(r, 7, 0, 0, buf, &err), CF_ERANGE, &err, "no task 7");
    CHECK_OK(cf_stream_read_task(r, 6, 1000, 800, buf, &err), &err);
    CHECK_EQ_INT(buf[0], (6 * 31 + 1000) % 251);
    CHECK_EQ_INT(cf_stream_task_size(r, 0), 0);
    CHECK_EQ_INT(cf_stream_task_start(r, 3), 300 * 3);
    CHECK_EQ_INT(cf_stream_task_size(r, 7), -1);
    /* tasks 0 1 | 2 3 | 4 5 6 over the files: task 6 (local 2 of 3) has its
     * chunk 3 at (3*3+2)*512 in file 2, holding 1800 - 3*512 bytes */
    int64_t file, offset, bytes;
    uint32_t crc;
    CHECK_OK(cf_stream_chunk(r, 6, 3, &file, &offset, &bytes, &crc, &err), &err);
    CHECK_EQ_INT(file, 2);
    CHECK_EQ_INT(offset, 11 * 512);
    CHECK_EQ_INT(bytes, 1800 - 1536);
    CHECK_OK(cf_stream_read_task(r, 6, 1536, bytes, buf, &err), &err);
    CHECK_EQ_INT(crc, cf__crc32c_update(0, buf, (size_t)bytes));
    CHECK_OK(cf_stream_chunk(r, 3, 1, &file, &offset, &bytes, &crc, &err), &err);
    CHECK_EQ_INT(file, 1);
    CHECK_EQ_INT(offset, 3 * 512);
    CHECK_EQ_INT(bytes, 900 - 512);
    CHECK_FAILS(cf_stream_chunk(r, 6, 4, &file, &offset, &bytes, &crc, &err), CF_ERANGE, &err, "no chunk 4");
    CHECK_FAILS(cf_stream_chunk(r, 0, 0, &file, &offset, &bytes, &crc, &err), CF_ERANGE, &err, "no chunk 0");
    cf_stream_reader_close(r);
    cf_file_close(f);
}

static void test_damage(void)
{
    cf_file *f = make_raw();
    cf_error err;
    cf_stream_reader *r = NULL;
    char path[4200];
    unsigned char buf[2000];
    /* a byte changed in task 3's chunk 1 (file 1: tasks 2 3, slot 1*2+1) */
    snprintf(path, sizeof path, "%s/f/raw/colfile-stream-data-000001", cf_test_dir());
    int fd = open(path, O_RDWR);
    CHECK(fd >= 0);
    unsigned char b = 0;
    CHECK_EQ_INT(pread(fd, &b, 1, 3 * 512 + 10), 1);
    b ^= 0x40;
    CHECK_EQ_INT(pwrite(fd, &b, 1, 3 * 512 + 10), 1);
    close(fd);
    CHECK_OK(cf_stream_open(&r, f, "raw", &err), &err);
    CHECK_OK(cf_stream_read_task(r, 3, 0, 900, buf, &err), &err); /* not verifying */
    CHECK_EQ_INT(buf[512 + 10], ((3 * 31 + 522) % 251) ^ 0x40);
    cf_stream_set_verify(r, 1);
    CHECK_FAILS(cf_stream_read_task(r, 3, 0, 900, buf, &err), CF_ECHECKSUM, &err, "task 3, chunk 1");
    CHECK_FAILS(cf_stream_read(r, 0, 2000, buf, &err), CF_ECHECKSUM, &err, "task 3, chunk 1");
    CHECK_OK(cf_stream_read_task(r, 3, 0, 512, buf, &err), &err);   /* chunk 0 is intact */
    CHECK_OK(cf_stream_read_task(r, 3, 520, 100, buf, &err), &err); /* part of a chunk: not checked */
    /* colfile check's question, chunk by chunk */
    CHECK_OK(cf_stream_check_chunk(r, 3, 0, &err), &err);
    CHECK_FAILS(cf_stream_check_chunk(r, 3, 1, &err), CF_ECHECKSUM, &err, "task 3, chunk 1 (offset 1536, 388 bytes)");
    CHECK_FAILS(cf_stream_check_chunk(r, 3, 2, &err), CF_ERANGE, &err, "no chunk 2");
    CHECK_OK(cf_stream_check_chunk(r, 6, 3, &err), &err);
    cf_stream_reader_close(r);
    /* the file cut short in task 6's last chunk (file 2, slot 3*3+2) */
    snprintf(path, sizeof path, "%s/f/raw/colfile-stream-data-000002", cf_test_dir());
    CHECK(truncate(path, 11 * 512 + 100) == 0);
    CHECK_OK(cf_stream_open(&r, f, "raw", &err), &err);
    CHECK_OK(cf_stream_read_task(r, 6, 1536, 100, buf, &err), &err);
    CHECK_FAILS(cf_stream_read_task(r, 6, 1536, 101, buf, &err), CF_ESHORT, &err, "colfile-stream-data-000002");
    CHECK_FAILS(cf_stream_check_chunk(r, 6, 3, &err), CF_ESHORT, &err, "task 6, chunk 3 (offset 5632, 264 bytes)");
    CHECK_OK(cf_stream_check_chunk(r, 6, 2, &err), &err);
    cf_stream_reader_close(r);
    CHECK(unlink(path) == 0);
    CHECK_OK(cf_stream_open(&r, f, "raw", &err), &err);
    CHECK_FAILS(cf_stream_read_task(r, 5, 0, 1, buf, &err), CF_ENOENT, &err, "colfile-stream-data-000002");
    CHECK_FAILS(cf_stream_check_chunk(r, 5, 0, &err), CF_ENOENT, &err, "task 5, chunk 0");
    CHECK_OK(cf_stream_check_chunk(r, 3, 0, &err), &err);
    CHECK_OK(cf_stream_read_task(r, 3, 0, 900, buf, &err), &err); /* other files still read */
    cf_stream_reader_close(r);
    /* the table damaged: the stream does not open */
    snprintf(path, sizeof path, "%s/f/raw/colfile-stream-v1", cf_test_dir());
    fd = open(path, O_RDWR);
    CHECK_EQ_INT(pwrite(fd, "9", 1, 20), 1);
    close(fd);
    CHECK_FAILS(cf_stream_open(&r, f, "raw", &err), CF_EFORMAT, &err, "colfile-stream-v1");
    CHECK_FAILS(cf_stream_open(&r, f, "nothing", &err), CF_ENOENT, &err, "nothing");
    CHECK_FAILS(cf_stream_open(&r, f, "../x", &err), CF_ENAME, &err, NULL);
    cf_file_close(f);
}

CF_TESTS(CF_TEST(test_global_view), CF_TEST(test_damage))
