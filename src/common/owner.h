/* owner.h - who made a staging directory (docs/format.md 8.3): the host,
 * its boot, the process and the process's start time, so that repair can
 * tell a dead writer from a live one on another node, where locks may be
 * node-local and prove nothing (internal). */
#ifndef CF_OWNER_H
#define CF_OWNER_H

#include <stddef.h>

#include "colfile.h"

#define CF__OWNER_NAME ".colfile-owner"

/* Write dir/.colfile-owner for the calling process (in place, unsynced:
 * the directory is not visible to readers). */
int cf__owner_write(const char *dir, cf_error *err);

/* Remove it (before the directory is published). */
void cf__owner_remove(const char *dir);

/* What dir/.colfile-owner says of its writer: 1 alive (this host, this
 * boot, the process running with the recorded start time), 0 gone, 2
 * cannot tell (another host), -1 no usable record.  `who` receives
 * "host H, process P" when a record was read. */
int cf__owner_check(const char *dir, char *who, size_t n);

#endif
