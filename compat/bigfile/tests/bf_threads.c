/* bf_threads.c DIR - the drop-in's error message is per thread: two
 * threads failing at once each read their own message, and a thread that
 * has not failed reads none.  (bigfile 0.1.52 keeps one message for the
 * whole process, so this runs against the drop-in only.) */
#include <pthread.h>
#include <stdio.h>
#include <string.h>

#include "bigfile.h"

static BigFile bf;
static pthread_barrier_t barrier;

static void *worker(void *arg)
{
    const char *name = arg;
    BigBlock b;
    int ok = 1;
    for (int i = 0; i < 200; i++) { /* no early exit: the other thread waits at the barrier */
        pthread_barrier_wait(&barrier);
        if (big_file_open_block(&bf, &b, name) != -1) ok = 0;
        pthread_barrier_wait(&barrier);
        const char *m = big_file_get_error_message();
        if (!m || !strstr(m, name)) {
            if (ok) fprintf(stderr, "thread %s: message '%s' does not name its block\n", name, m ? m : "(null)");
            ok = 0;
        }
    }
    return ok ? NULL : arg;
}

static void *quiet(void *arg)
{
    (void)arg;
    return big_file_get_error_message() == NULL ? NULL : arg;
}

int main(int argc, char **argv)
{
    if (argc != 2 || big_file_create(&bf, argv[1])) return 2;
    pthread_t t[3];
    void *r[3];
    pthread_barrier_init(&barrier, NULL, 2);
    pthread_create(&t[0], NULL, worker, "missing-a");
    pthread_create(&t[1], NULL, worker, "missing-b");
    pthread_join(t[0], &r[0]);
    pthread_join(t[1], &r[1]);
    pthread_create(&t[2], NULL, quiet, "quiet");
    pthread_join(t[2], &r[2]);
    big_file_close(&bf);
    if (r[0] || r[1] || r[2]) {
        fprintf(stderr, "per-thread error messages: FAILED\n");
        return 1;
    }
    printf("per-thread error messages: ok\n");
    return 0;
}
