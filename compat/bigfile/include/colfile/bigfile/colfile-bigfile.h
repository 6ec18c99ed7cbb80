/* colfile-bigfile.h - what colfile's bigfile drop-in adds to bigfile's C
 * API (not part of bigfile: a program using it no longer builds against
 * bigfile itself).  Link with libcolfile-bigfile. */
#ifndef COLFILE_BIGFILE_H
#define COLFILE_BIGFILE_H
#ifdef __cplusplus
extern "C" {
#endif

/* 1 (the default): commits are durable (fsync'd, docs/reliability.md).
 * 0: blocks opened or created from now on skip every fsync (colfile's
 * CF_OPEN_NODURABLE): commits stay atomic against a crash of the process
 * but not of the machine, which is all bigfile ever promised.
 * Process-wide; returns the previous setting. */
int colfile_bigfile_set_durable(int durable);

#ifdef __cplusplus
}
#endif
#endif
