#!/bin/sh
# metadata_calls.sh - the metadata load of a collective open does not grow
# with the number of ranks: under strace, a File is listed and every column
# opened (attributes and one row each read) with 1 and with 4 ranks, and
# the openat() calls on metadata files (header, attr*, colfile-*) must be
# as many with 4 ranks as with 1 (only rank 0 reads them); so must the
# stat calls on them and the listings of the File's directories.
#
#   metadata_calls.sh WORKDIR WRITE_PATTERN OPEN_LISTING MPIEXEC NPFLAG [PREFLAGS...]
#
# strace missing or not permitted: skipped (exit 77), or a failure when
# CI=true.
set -eu
work=$1 pattern=$2 listing=$3 mpiexec=$4 np=$5
shift 5

skip() {
    if [ "${CI:-}" = true ]; then
        echo "FAIL: $1 (CI=true)" >&2
        exit 1
    fi
    echo "SKIP: $1"
    exit 77
}

strace=$(command -v strace || true)
[ -n "$strace" ] || skip "strace not found"
"$strace" -f -o /dev/null true 2>/dev/null || skip "strace cannot trace here"

rm -rf "$work"
mkdir -p "$work"
"$mpiexec" "$np" 2 "$@" "$pattern" "$work/snap" --total 5000 --nfile 2 --mode auto

count() { # count FILE PATTERN
    grep -E -c "$2" "$1" || true
}

meta='"[^"]*/(header|attr[^/"]*|colfile-[^/"]*)"'
for n in 1 4; do
    out="$work/strace-$n.txt"
    # -y: file descriptors printed with their paths, so that listings of
    # the File's directories can be told from MPI's own (/proc, /sys).
    "$strace" -f -y -e trace=openat,stat,newfstatat,statx,getdents64 -o "$out" \
        "$mpiexec" "$np" "$n" "$@" "$listing" "$work/snap" > "$work/listing-$n.txt"
    cat "$work/listing-$n.txt"
    opens=$(count "$out" "openat\(.*$meta")
    stats=$(count "$out" "(stat|newfstatat|statx)\(.*$meta")
    blobs=$(count "$out" 'openat\(.*"[^"]*/[0-9A-F]{6}"')
    dirs=$(count "$out" "getdents64\([0-9]+<$work/snap")
    echo "$n rank(s): on metadata files openat $opens, stat $stats; listings of the File's directories $dirs; openat on blobs $blobs"
    eval "opens_$n=$opens stats_$n=$stats dirs_$n=$dirs"
done
if [ "$opens_1" -eq 0 ]; then
    echo "FAIL: no metadata file was opened: is strace following the ranks?" >&2
    exit 1
fi
if [ "$opens_1" -ne "$opens_4" ] || [ "$stats_1" -ne "$stats_4" ] || [ "$dirs_1" -ne "$dirs_4" ]; then
    echo "FAIL: the metadata load differs between 1 and 4 ranks (openat $opens_1/$opens_4, stat $stats_1/$stats_4, getdents64 $dirs_1/$dirs_4)" >&2
    grep -E "(openat|stat|newfstatat|statx)\(.*$meta|getdents64\([0-9]+<$work/snap" "$work/strace-4.txt" >&2
    exit 1
fi
echo "PASS: metadata files opened $opens_1 times, stat-ed $stats_1 times, File directories listed $dirs_1 times, with 1 rank and with 4"
rm -rf "$work"
