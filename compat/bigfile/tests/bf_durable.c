/* bf_durable.c DIR [nodurable] - writes one block and closes it; with
 * `nodurable` after colfile_bigfile_set_durable(0).  durable.sh counts the
 * fsyncs each way (strace). */
#include <stdio.h>
#include <string.h>

#include "bigfile.h"
#include "colfile-bigfile.h"

int main(int argc, char **argv)
{
    BigFile bf;
    BigBlock b;
    BigBlockPtr ptr;
    BigArray a;
    double v[64] = {0};
    if (argc < 2) return 2;
    if (argc > 2 && strcmp(argv[2], "nodurable") == 0 && colfile_bigfile_set_durable(0) != 1) return 3;
    big_array_init(&a, v, "f8", 1, (size_t[]){64}, NULL);
    if (big_file_create(&bf, argv[1]) || big_file_create_block(&bf, &b, "x", "f8", 1, 2, (size_t[]){32, 32}) ||
        big_block_seek(&b, &ptr, 0) || big_block_write(&b, &ptr, &a) || big_block_close(&b)) {
        fprintf(stderr, "%s\n", big_file_get_error_message());
        return 1;
    }
    big_file_close(&bf);
    return 0;
}
