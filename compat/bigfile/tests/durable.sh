#!/bin/sh
# durable.sh PROGRAM DIR - colfile_bigfile_set_durable(0) removes every
# fsync of a block's commit, and the default keeps them (counted by strace;
# exit 77, skipped, where strace cannot trace).
set -u
prog=$1 dir=$2
command -v strace > /dev/null || { echo "no strace: skipped"; exit 77; }
trace() { # trace MODE: the fsync-family calls of one run, into $dir.MODE
    rm -rf "$dir"
    strace -f -qq -e trace=fsync,fdatasync -o "$dir.$1" "$prog" "$dir" "$1" > /dev/null
}
trace durable || { echo "strace cannot run $prog: skipped"; exit 77; }
trace nodurable || { echo "strace cannot run $prog: skipped"; exit 77; }
durable=$(grep -c -E '^[0-9]+ +(fsync|fdatasync)\(' "$dir.durable")
nodurable=$(grep -c -E '^[0-9]+ +(fsync|fdatasync)\(' "$dir.nodurable")
echo "fsync calls: durable $durable, nodurable $nodurable"
[ "$durable" -gt 0 ] && [ "$nodurable" -eq 0 ]
