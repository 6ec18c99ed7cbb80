/* checksum.h - the bigfile byte sum and CRC32C (internal). */
#ifndef CF_CHECKSUM_H
#define CF_CHECKSUM_H

#include <stddef.h>
#include <stdint.h>

/* bigfile's running sum: add every byte value (0..255) of p[0..n) to sum,
 * wrapping at 2^32.  Vectorisable; order of calls does not matter. */
uint32_t cf__sysv_add(uint32_t sum, const void *p, size_t n);

/* The SysV fold of a raw sum: r = (s & 0xffff) + (s >> 16);
 * fold = (r & 0xffff) + (r >> 16).  Equals what `sum -s` prints. */
uint32_t cf__sysv_fold(uint32_t raw);

/* CRC32C (Castagnoli, reflected, init and final xor 0xFFFFFFFF), as used by
 * iSCSI, ext4 and zarr: cf__crc32c_update(0, "123456789", 9) == 0xE3069283.
 * Continue a running CRC by passing the previous result.  Uses SSE4.2 when
 * the CPU has it (checked per call via a const-after-init-free method: no
 * global mutable state), otherwise slicing-by-8 tables. */
uint32_t cf__crc32c_update(uint32_t crc, const void *p, size_t n);

/* Both of the above over the same bytes in one pass (each cache line is
 * loaded once): *sum = cf__sysv_add(*sum, p, n) and
 * *crc = cf__crc32c_update(*crc, p, n), bit for bit.  AVX-512 VPCLMULQDQ
 * or AVX2 and SSE4.2 when the CPU has them, otherwise the two functions
 * one after the other. */
void cf__sum_crc32c(uint32_t *sum, uint32_t *crc, const void *p, size_t n);

/* The CRC32C of A||B given crc_a = crc(A), crc_b = crc(B) and len_b = |B|. */
uint32_t cf__crc32c_combine(uint32_t crc_a, uint32_t crc_b, uint64_t len_b);

/* The two CRC32C engines and the portable byte sum, exposed for the tests
 * (both engines must agree bit for bit).  cf__crc32c_hw falls back to the
 * tables when the CPU lacks SSE4.2; cf__crc32c_hw_available says which. */
uint32_t cf__crc32c_sw(uint32_t crc, const void *p, size_t n);
uint32_t cf__crc32c_hw(uint32_t crc, const void *p, size_t n);
int cf__crc32c_hw_available(void);
uint32_t cf__sysv_add_generic(uint32_t sum, const void *p, size_t n);

#endif
