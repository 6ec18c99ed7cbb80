#!/bin/sh
# durable.sh PROGRAM DIR - colfile_bigfile_set_durable(0) removes every
# fsync of a block's commit, and the default keeps them (counted by strace;
# exit 77, skipped, where strace cannot trace).
set -u
prog=$1 dir=$2
command -v strace > /dev/null || { echo "no strace: skipped"; exit 77; }
count() { # count MODE: fsync-family calls of one run
    rm -rf "$dir"
    strace -f -qq -e trace=fsync,fdatasync,sync_file_range -o "$dir.trace" "$prog" "$dir" "$1" > /dev/null ||
        { echo "strace cannot run $prog: skipped"; exit 77; }
    grep -c -E '^[0-9]+ +(fsync|fdatasync)\(' "$dir.trace"
}
durable=$(count durable)
nodurable=$(count nodurable)
echo "fsync calls: durable $durable, nodurable $nodurable"
[ "$durable" -gt 0 ] && [ "$nodurable" -eq 0 ]
