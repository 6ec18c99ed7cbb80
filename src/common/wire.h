/* wire.h - little-endian byte buffers for state that travels between
 * processes (pending writes, metadata snapshots), and the little-endian
 * integers at fixed places of binary files (internal). */
#ifndef CF_WIRE_H
#define CF_WIRE_H

#include <stddef.h>
#include <stdint.h>

/* Little-endian integers at p, whatever the host's order. */
static inline void cf__le_put32(unsigned char *p, uint32_t v)
{
    for (int i = 0; i < 4; i++) p[i] = (unsigned char)(v >> (8 * i));
}

static inline void cf__le_put64(unsigned char *p, uint64_t v)
{
    for (int i = 0; i < 8; i++) p[i] = (unsigned char)(v >> (8 * i));
}

static inline uint32_t cf__le_get32(const unsigned char *p)
{
    uint32_t v = 0;
    for (int i = 3; i >= 0; i--) v = (v << 8) | p[i];
    return v;
}

static inline uint64_t cf__le_get64(const unsigned char *p)
{
    uint64_t v = 0;
    for (int i = 7; i >= 0; i--) v = (v << 8) | p[i];
    return v;
}

typedef struct cf__wire_out {
    unsigned char *p;
    size_t len, cap;
    int failed; /* set on allocation failure; later puts do nothing */
} cf__wire_out;

void cf__wire_put(cf__wire_out *o, const void *v, size_t n);
void cf__wire_put_u64(cf__wire_out *o, uint64_t v);
void cf__wire_put_u32(cf__wire_out *o, uint32_t v);
/* A length-prefixed byte string (u64 length, then the bytes). */
void cf__wire_put_bytes(cf__wire_out *o, const void *v, size_t n);

typedef struct cf__wire_in {
    const unsigned char *p, *end;
} cf__wire_in;

/* Each returns 0, or -1 (consuming nothing) when the buffer is too short. */
int cf__wire_get_u64(cf__wire_in *in, uint64_t *v);
int cf__wire_get_u32(cf__wire_in *in, uint32_t *v);
int cf__wire_get_u8(cf__wire_in *in, unsigned char *v);
/* A length-prefixed byte string: *v points into the buffer. */
int cf__wire_get_bytes(cf__wire_in *in, const unsigned char **v, size_t *n);

#endif
