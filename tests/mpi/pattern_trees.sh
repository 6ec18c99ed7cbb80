#!/bin/sh
# pattern_trees.sh - cf_write_pattern writes byte-identical Files whatever
# the number of ranks (1, 2, 4), the mode, the concurrency and the layout
# of the rows over the ranks; with --align, whatever the mode.
#
#   pattern_trees.sh WORKDIR WRITE_PATTERN MPIEXEC NPFLAG [PREFLAGS...]
set -eu
work=$1 pattern=$2 mpiexec=$3 np=$4
shift 4
rm -rf "$work"
mkdir -p "$work"
. "$(dirname "$0")/same_trees.sh"

run() { # run RANKS DIR PATTERN-ARGS... (launcher flags come from "$@" of the script)
    n=$1 dir=$2
    shift 2
    "$mpiexec" "$np" "$n" $preflags "$pattern" "$dir" "$@" > /dev/null
}
preflags="$*"

for nfile in 3 0; do
    ref="$work/ref-$nfile"
    run 1 "$ref" --total 10007 --nfile "$nfile" --mode throttled
    for n in 1 2 4; do
        for mode in throttled aggregated auto; do
            for layout in even skewed; do
                out="$work/out-$nfile-$n-$mode-$layout"
                run "$n" "$out" --total 10007 --nfile "$nfile" --mode "$mode" --layout "$layout"
                same "$ref" "$out" "nfile $nfile, $n ranks, $mode, $layout"
                rm -rf "$out"
            done
        done
    done
    out="$work/out-$nfile-c1"
    run 4 "$out" --total 10007 --nfile "$nfile" --mode throttled --concurrency 1
    same "$ref" "$out" "nfile $nfile, 4 ranks, throttled, concurrency 1"
    run 4 "$out" --total 10007 --nfile "$nfile" --mode aggregated --concurrency 1 --layout skewed
    same "$ref" "$out" "nfile $nfile, 4 ranks, aggregated, concurrency 1, skewed"
done

# Blobs on rank boundaries depend on the layout, not on the mode.
ref="$work/align-ref"
run 4 "$ref" --total 10007 --nfile 3 --mode throttled --layout skewed --align
for mode in aggregated auto; do
    out="$work/align-$mode"
    run 4 "$out" --total 10007 --nfile 3 --mode "$mode" --layout skewed --align
    same "$ref" "$out" "aligned, 4 ranks, $mode"
done

finish
