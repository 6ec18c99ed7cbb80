/* test_stream_append.c - a task's appends in few system calls: small
 * appends wait in the task's buffer, a task alone in its file writes across
 * its chunks in one call, and whatever waits is written by every commit and
 * lost (as any uncommitted append) by a killed writer.  This program's
 * pwrite and pwritev count the calls and pass them on to libc's. */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE 1 /* RTLD_NEXT */
#endif
#include <dlfcn.h>
#include <fcntl.h>
#include <sys/uio.h>
#include <sys/wait.h>
#include <unistd.h>

#include "harness.h"
#include "colfile_stream.h"

static long nwrites; /* write calls to any file since the last reset */

/* The library is built with 64-bit offsets: it calls pwrite64 and
 * pwritev64 (the same functions on 64-bit Linux). */
ssize_t pwrite64(int fd, const void *buf, size_t n, off_t off)
{
    static ssize_t (*real)(int, const void *, size_t, off_t);
    if (!real) real = (ssize_t(*)(int, const void *, size_t, off_t))dlsym(RTLD_NEXT, "pwrite64");
    nwrites++;
    return real(fd, buf, n, off);
}

ssize_t pwritev64(int fd, const struct iovec *iov, int cnt, off_t off)
{
    static ssize_t (*real)(int, const struct iovec *, int, off_t);
    if (!real) real = (ssize_t(*)(int, const struct iovec *, int, off_t))dlsym(RTLD_NEXT, "pwritev64");
    nwrites++;
    return real(fd, iov, cnt, off);
}

#define CHUNK 8192
#define BIG ((int64_t)1 << 20)

/* Byte i of task `task`'s stream. */
static unsigned char byte_of(int64_t task, int64_t i)
{
    return (unsigned char)(i * 7 + task * 31 + (i >> 9));
}

static cf_stream_writer *new_raw(cf_file *f, const char *name, int64_t tasks, int64_t files, int64_t chunk)
{
    cf_error err;
    cf_stream_layout l;
    cf_stream_writer *w = NULL;
    CHECK_OK(cf_stream_layout_choose(&l, f, tasks, files, chunk, 4096, &err), &err);
    CHECK_OK(cf_stream_create(&w, f, name, "raw", 1, &l, &err), &err);
    return w;
}

/* Append bytes [at, at + n) of task `task`. */
static void append_bytes(cf_stream_task *t, int64_t task, int64_t at, int64_t n)
{
    cf_error err;
    unsigned char *p = malloc((size_t)n + 1);
    for (int64_t i = 0; i < n; i++) p[i] = byte_of(task, at + i);
    CHECK_OK(cf_stream_append(t, p, n, &err), &err);
    free(p);
}

/* Stream `name` holds bytes[k] bytes of each task k, read back verified
 * (every chunk's CRC32C checked), and the physical files hold them where
 * the layout puts them. */
static void check_bytes(cf_file *f, const char *name, int64_t tasks, const int64_t *bytes)
{
    cf_error err;
    cf_stream_reader *r = NULL;
    CHECK_OK(cf_stream_open(&r, f, name, &err), &err);
    if (!r) return;
    cf_stream_set_verify(r, 1);
    cf_stream_layout l;
    cf_stream_info(r, &l, NULL, NULL, NULL);
    for (int64_t k = 0; k < tasks; k++) {
        CHECK_EQ_INT(cf_stream_task_size(r, k), bytes[k]);
        unsigned char *got = malloc((size_t)bytes[k] + 1);
        CHECK_OK(cf_stream_read_task(r, k, 0, bytes[k], got, &err), &err);
        int64_t bad = -1;
        for (int64_t i = 0; i < bytes[k] && bad < 0; i++)
            if (got[i] != byte_of(k, i)) bad = i;
        CHECK_EQ_INT(bad, -1);
        /* chunk by chunk in the physical file */
        char path[4300];
        snprintf(path, sizeof path, "%s/%s/%s/colfile-stream-data-%06llX", cf_test_dir(), "f", name,
                 (unsigned long long)cf_stream_file_of(tasks, l.files, k, NULL, NULL));
        int fd = open(path, O_RDONLY);
        CHECK(fd >= 0);
        for (int64_t at = 0; fd >= 0 && at < bytes[k]; at += l.chunk) {
            int64_t n = bytes[k] - at < l.chunk ? bytes[k] - at : l.chunk;
            CHECK_EQ_INT(pread(fd, got, (size_t)n, cf_stream_chunk_offset(&l, k, at / l.chunk)), n);
            for (int64_t i = 0; i < n && bad < 0; i++)
                if (got[i] != byte_of(k, at + i)) bad = at + i;
            CHECK_EQ_INT(bad, -1);
        }
        if (fd >= 0) close(fd);
        free(got);
    }
    cf_stream_reader_close(r);
}

/* 1000 appends of 100 bytes: they wait in the buffer and reach the file in
 * a few calls (the buffer's size each), not one or two per append. */
static void test_small_appends_wait(void)
{
    cf_file *f = cf_test_open_new("f");
    cf_error err;
    cf_stream_writer *w = new_raw(f, "small", 1, 1, CHUNK);
    cf_stream_task *t;
    CHECK_OK(cf_stream_task_open(&t, w, 0, &err), &err);
    nwrites = 0;
    for (int i = 0; i < 1000; i++) append_bytes(t, 0, i * 100, 100);
    CHECK(nwrites <= 2);
    CHECK_EQ_INT(cf_stream_task_rows(t), 100000);
    nwrites = 0;
    CHECK_OK(cf_stream_flush(w, &err), &err); /* the held bytes, then the table */
    CHECK(nwrites >= 1);
    int64_t bytes[1] = { 100000 };
    check_bytes(f, "small", 1, bytes);
    CHECK_OK(cf_stream_close(w, &err), &err);
    cf_file_close(f);
}

/* Appends of 1.5 chunks (too large to wait in the buffer) to a task alone
 * in its file: one call each, the chunks being contiguous there; sharing a
 * file, one call per chunk. */
static void test_large_appends_one_call(void)
{
    cf_file *f = cf_test_open_new("f");
    cf_error err;
    cf_stream_writer *w = new_raw(f, "large", 3, 2, BIG); /* file 0: task 0 alone; file 1: tasks 1 and 2 */
    cf_stream_task *t0, *t1;
    CHECK_OK(cf_stream_task_open(&t0, w, 0, &err), &err);
    CHECK_OK(cf_stream_task_open(&t1, w, 1, &err), &err);
    const int64_t n = BIG + BIG / 2;
    nwrites = 0;
    for (int i = 0; i < 10; i++) append_bytes(t0, 0, i * n, n);
    CHECK_EQ_INT(nwrites, 10);
    nwrites = 0;
    for (int i = 0; i < 10; i++) append_bytes(t1, 1, i * n, n);
    CHECK_EQ_INT(nwrites, 20); /* 15 chunks touched, a chunk boundary inside every append */
    CHECK_OK(cf_stream_close(w, &err), &err);
    int64_t bytes[3] = { 10 * n, 10 * n, 0 };
    check_bytes(f, "large", 3, bytes);
    cf_file_close(f);
}

/* Every size from 1 byte to beyond two chunks, small and large mixed, for
 * tasks alone in a file and sharing one, with commits in between: the
 * bytes land where the layout puts them, and every chunk's CRC32C holds. */
static void test_sizes_mixed(void)
{
    cf_file *f = cf_test_open_new("f");
    cf_error err;
    cf_stream_writer *w = new_raw(f, "mixed", 4, 2, CHUNK); /* file 0: tasks 0 1; file 1: tasks 2 3 */
    cf_stream_task *t[4];
    for (int k = 0; k < 4; k++) CHECK_OK(cf_stream_task_open(&t[k], w, k, &err), &err);
    int64_t bytes[4] = { 0, 0, 0, 0 };
    unsigned s = 12345;
    for (int i = 0; i < 600; i++) {
        s = s * 1103515245u + 12345u;
        int k = (int)(s >> 8) % 3; /* task 3 stays empty */
        int64_t n = (s >> 12) % 4 == 0 ? 1 + (int64_t)(s >> 14) % (2 * CHUNK + 100) : 1 + (int64_t)(s >> 14) % 300;
        append_bytes(t[k], k, bytes[k], n);
        bytes[k] += n;
        if (i % 151 == 150) {
            CHECK_OK(cf_stream_flush(w, &err), &err);
            check_bytes(f, "mixed", 4, bytes);
        }
    }
    CHECK_OK(cf_stream_close(w, &err), &err);
    check_bytes(f, "mixed", 4, bytes);
    cf_file_close(f);
}

/* A writer killed with bytes waiting in the buffer: the stream is at its
 * last commit, which holds the bytes that waited before it. */
static void test_killed_with_held_bytes(void)
{
    cf_file *f = cf_test_open_new("f");
    pid_t pid = fork();
    if (pid == 0) {
        cf_error err;
        cf_stream_writer *w = new_raw(f, "k", 2, 1, CHUNK);
        cf_stream_task *t;
        if (cf_stream_task_open(&t, w, 1, &err) != 0) _exit(3);
        unsigned char p[300];
        for (int i = 0; i < 300; i++) p[i] = byte_of(1, i);
        if (cf_stream_append(t, p, 200, &err) != 0) _exit(3); /* waits */
        if (cf_stream_flush(w, &err) != 0) _exit(4);
        if (cf_stream_append(t, p + 200, 100, &err) != 0) _exit(3); /* waits, never written */
        _exit(0);
    }
    int status = 0;
    waitpid(pid, &status, 0);
    CHECK(WIFEXITED(status) && WEXITSTATUS(status) == 0);
    int64_t bytes[2] = { 0, 200 };
    check_bytes(f, "k", 2, bytes);
    cf_file_close(f);
}

CF_TESTS(CF_TEST(test_small_appends_wait), CF_TEST(test_large_appends_one_call), CF_TEST(test_sizes_mixed),
         CF_TEST(test_killed_with_held_bytes))
