#!/bin/sh
# random_trees.sh - cf_write_random writes byte-identical Files with 1, 2 and
# 4 ranks and uneven row splits over ranks and writes: random floats over a
# wide exponent range (NaN and infinities in one column) give the same
# statistics sums whatever the split.
#
#   random_trees.sh WORKDIR WRITE_RANDOM MPIEXEC NPFLAG [PREFLAGS...]
set -eu
work=$1 prog=$2 mpiexec=$3 np=$4
shift 4
preflags="$*"
rm -rf "$work"
mkdir -p "$work"
. "$(dirname "$0")/same_trees.sh"

for nfile in 1 3; do
    ref="$work/ref-$nfile"
    "$mpiexec" "$np" 1 $preflags "$prog" "$ref" --total 20011 --nfile "$nfile" --layout even --calls 1 > /dev/null
    for n in 1 2 4; do
        for layout in ramp reverse; do
            out="$work/out-$nfile-$n-$layout"
            "$mpiexec" "$np" "$n" $preflags "$prog" "$out" --total 20011 --nfile "$nfile" --layout "$layout" \
                --calls 3 > /dev/null
            same "$ref" "$out" "nfile $nfile, $n ranks, $layout"
            rm -rf "$out"
        done
    done
done

finish
