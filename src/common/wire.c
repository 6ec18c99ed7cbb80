/* wire.c - little-endian byte buffers. */
#include "wire.h"

#include <stdlib.h>
#include <string.h>

void cf__wire_put(cf__wire_out *o, const void *v, size_t n)
{
    if (o->failed) return;
    if (o->len + n > o->cap) {
        size_t cap = o->cap ? o->cap * 2 : 256;
        while (cap < o->len + n) cap *= 2;
        unsigned char *q = realloc(o->p, cap);
        if (!q) {
            o->failed = 1;
            return;
        }
        o->p = q;
        o->cap = cap;
    }
    if (n) memcpy(o->p + o->len, v, n);
    o->len += n;
}

void cf__wire_put_u64(cf__wire_out *o, uint64_t v)
{
    unsigned char b[8];
    cf__le_put64(b, v);
    cf__wire_put(o, b, 8);
}

void cf__wire_put_u32(cf__wire_out *o, uint32_t v)
{
    unsigned char b[4];
    cf__le_put32(b, v);
    cf__wire_put(o, b, 4);
}

void cf__wire_put_bytes(cf__wire_out *o, const void *v, size_t n)
{
    cf__wire_put_u64(o, (uint64_t)n);
    cf__wire_put(o, v, n);
}

int cf__wire_get_u64(cf__wire_in *in, uint64_t *v)
{
    if (in->end - in->p < 8) return -1;
    *v = cf__le_get64(in->p);
    in->p += 8;
    return 0;
}

int cf__wire_get_u32(cf__wire_in *in, uint32_t *v)
{
    if (in->end - in->p < 4) return -1;
    *v = cf__le_get32(in->p);
    in->p += 4;
    return 0;
}

int cf__wire_get_u8(cf__wire_in *in, unsigned char *v)
{
    if (in->end - in->p < 1) return -1;
    *v = *in->p++;
    return 0;
}

int cf__wire_get_bytes(cf__wire_in *in, const unsigned char **v, size_t *n)
{
    cf__wire_in save = *in;
    uint64_t len;
    if (cf__wire_get_u64(in, &len) || len > (uint64_t)(in->end - in->p)) {
        *in = save;
        return -1;
    }
    *v = in->p;
    *n = (size_t)len;
    in->p += len;
    return 0;
}
