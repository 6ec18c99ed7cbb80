#!/bin/sh
# examples/c/mpi_snapshot.c as a user runs it: written on 4 ranks (one of
# them with no rows), read back on 3 ranks and on 1.
#   example_mpi_snapshot.sh DIR EXE MPIEXEC NUMPROC_FLAG [PREFLAGS...]
set -eu
dir=$1 exe=$2 mpiexec=$3 np=$4
shift 4
rm -rf "$dir"
"$mpiexec" "$np" 4 "$@" "$exe" write "$dir"
for n in 3 1; do
    out=$("$mpiexec" "$np" "$n" "$@" "$exe" read "$dir")
    echo "$out"
    # 1000 + 0 + 1500 + 1750 rows, every one as written
    case $out in
    *"read 4250 particles on $n ranks (BoxSize 100, written by examples/c/mpi_snapshot.c): 0 wrong"*) ;;
    *) echo "unexpected output on $n ranks" >&2; exit 1 ;;
    esac
done
