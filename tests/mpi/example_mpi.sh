#!/bin/sh
# An MPI example of examples/c as a user runs it: written on 4 ranks, read
# back on 3 ranks and on 1; each read must print WANT (a shell pattern in
# which {n} stands for the number of reading ranks).
#   example_mpi.sh DIR EXE WANT MPIEXEC NUMPROC_FLAG [PREFLAGS...]
set -eu
dir=$1 exe=$2 want=$3 mpiexec=$4 np=$5
shift 5
rm -rf "$dir"
"$mpiexec" "$np" 4 "$@" "$exe" write "$dir"
for n in 3 1; do
    out=$("$mpiexec" "$np" "$n" "$@" "$exe" read "$dir")
    echo "$out"
    pattern=$(printf '%s\n' "$want" | sed "s/{n}/$n/g")
    case $out in
    *$pattern*) ;;
    *) echo "unexpected output on $n ranks (wanted: $pattern)" >&2; exit 1 ;;
    esac
done
