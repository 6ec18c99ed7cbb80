/* bf_error.c - bigfile's error message, kept per thread.
 *
 * bigfile reports failures through one message that the last failing call
 * sets; callers print big_file_get_error_message() after a -1.  Here each
 * thread has its own, so concurrent failures do not overwrite each other;
 * underneath, every colfile call still fills a caller-owned cf_error. */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bf_internal.h"

static _Thread_local char *bf_message;

char *big_file_get_error_message(void)
{
    return bf_message;
}

void big_file_set_error_message(char *msg)
{
    char *copy = NULL;
    if (msg) {
        size_t n = strlen(msg);
        copy = malloc(n + 1);
        if (copy) memcpy(copy, msg, n + 1);
    }
    free(bf_message);
    bf_message = copy;
}

void bf__set_error(const char *fmt, ...)
{
    char buf[2048];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(buf, sizeof buf, fmt, ap);
    va_end(ap);
    big_file_set_error_message(buf);
}

void bf__set_cf_error(const cf_error *e)
{
    bf__set_error("%s", e->message);
}
