#!/bin/sh
# examples/c/mpi_stream.c as a user runs it: written on 4 ranks (rank 0
# appends nothing), read back on 3 ranks and on 1.
#   example_mpi_stream.sh DIR EXE MPIEXEC NUMPROC_FLAG [PREFLAGS...]
set -eu
dir=$1 exe=$2 mpiexec=$3 np=$4
shift 4
rm -rf "$dir"
"$mpiexec" "$np" 4 "$@" "$exe" write "$dir"
for n in 3 1; do
    out=$("$mpiexec" "$np" "$n" "$@" "$exe" read "$dir")
    echo "$out"
    # sum over ranks 1..3 and steps 0..9 of (rank * step) % 7
    case $out in
    # (one file on one node; one per task on a local file system)
    *"read 81 records of 4 tasks in "[14]" files on $n ranks: 0 wrong"*) ;;
    *) echo "unexpected output on $n ranks" >&2; exit 1 ;;
    esac
done
