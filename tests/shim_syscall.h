/* shim_syscall.h - for the LD_PRELOAD shims that wrap syscall()
 * (tests/locking/lockshim.c, tests/concurrency/delayshim.c). */
#ifndef CF_SHIM_SYSCALL_H
#define CF_SHIM_SYSCALL_H

#include <stdarg.h>

/* The six arguments after `number` of the variadic syscall(number, ...)
 * being wrapped, into long a[6] (the kernel takes six; the ones a call does
 * not pass are read as whatever is there, as libc's syscall does). */
#define SHIM_SYSCALL_ARGS(a, number)                                     \
    do {                                                                 \
        va_list shim_ap_;                                                \
        va_start(shim_ap_, number);                                      \
        for (int shim_i_ = 0; shim_i_ < 6; shim_i_++)                    \
            (a)[shim_i_] = va_arg(shim_ap_, long);                       \
        va_end(shim_ap_);                                                \
    } while (0)

#endif
