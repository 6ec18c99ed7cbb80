#!/usr/bin/env bash
# check.sh BUILD PREFIX WORK MPIEXEC - the installed package as a user meets it.
#
# Installs the build BUILD into PREFIX, puts a second MPI (Debian's MPICH,
# unpacked by second_mpi.sh into WORK) first on PATH, and builds the C
# examples against PREFIX twice: with find_package(colfile COMPONENTS mpi)
# and no MPI hint, and with pkg-config.  Each program must link the MPI
# colfile was built with, and run without LD_LIBRARY_PATH: snapshot alone,
# mpi_snapshot under MPIEXEC (that MPI's) written on 4 ranks and read on 3.
# With the Fortran module built, examples/fortran too.  Finally
# find_package with an MPI that does not exist must say why it fails.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../.." && pwd)
build=$1 prefix=$2 work=$3 mpiexec=$4
unset LD_LIBRARY_PATH
rm -rf "$prefix" "$work/cmake" "$work/pc" "$work/bin" "$work/out" "$work/notfound"
mkdir -p "$work/pc" "$work/out"
cmake --install "$build" --prefix "$prefix" > "$work/install.log"

second=$("$here/second_mpi.sh" "$work/second-mpi")
export PATH="$second:$PATH"
echo "second MPI first on PATH: $(command -v mpicc)"

fail() { echo "install check: $*" >&2; exit 1; }
log() { # log FILE COMMAND...: run, show the log on failure
    local f=$1; shift
    "$@" > "$f" 2>&1 || { cat "$f" >&2; fail "failed: $*"; }
}

# Each program must take libcolfile from PREFIX and MPI from colfile's MPI.
check_links() { # check_links EXE
    local deps
    deps=$(ldd "$1")
    grep -q "libcolfile.so.0 => $prefix/" <<< "$deps" || { echo "$deps" >&2; fail "$1: libcolfile not from $prefix"; }
    if grep -q "libcolfile-bigfile" <<< "$deps"; then
        grep -q "libcolfile-bigfile.so.0 => $prefix/" <<< "$deps" || { echo "$deps" >&2; fail "$1: libcolfile-bigfile not from $prefix"; }
    fi
    if grep -q "libcolfile_mpi" <<< "$deps"; then
        grep -q "libcolfile_mpi.so.0 => $prefix/" <<< "$deps" || { echo "$deps" >&2; fail "$1: libcolfile_mpi not from $prefix"; }
        ! grep -q "$work/second-mpi" <<< "$deps" || { echo "$deps" >&2; fail "$1: links the second MPI"; }
    fi
}

run_examples() { # run_examples DIR LABEL
    local d=$1 label=$2 out
    check_links "$d/snapshot"
    check_links "$d/mpi_snapshot"
    log "$work/out/$label-snapshot.log" "$d/snapshot" "$work/out/$label-snapshot"
    log "$work/out/$label-write.log" "$mpiexec" -n 4 "$d/mpi_snapshot" write "$work/out/$label-mpi"
    out=$("$mpiexec" -n 3 "$d/mpi_snapshot" read "$work/out/$label-mpi") || fail "$label: mpi_snapshot read failed"
    grep -q "read 4250 particles on 3 ranks .*: 0 wrong" <<< "$out" || { echo "$out" >&2; fail "$label: $out"; }
    echo "$label: $out"
    # bigfile code, unchanged, on colfile's drop-in (libcolfile-bigfile-mpi)
    check_links "$d/bigfile_snapshot"
    out=$(ldd "$d/bigfile_snapshot") # (grep -q on a pipe would end ldd early: pipefail)
    grep -q "libcolfile-bigfile-mpi.so.0 => $prefix/" <<< "$out" || fail "$label: bigfile_snapshot: no drop-in"
    log "$work/out/$label-bigfile-write.log" "$mpiexec" -n 4 "$d/bigfile_snapshot" write "$work/out/$label-bigfile"
    out=$("$mpiexec" -n 3 "$d/bigfile_snapshot" read "$work/out/$label-bigfile") || fail "$label: bigfile_snapshot read failed"
    grep -q "read 4250 particles on 3 ranks (written on 4): 0 wrong" <<< "$out" || { echo "$out" >&2; fail "$label: $out"; }
    echo "$label: bigfile_snapshot: $out"
}

# find_package, no MPI hint: the package brings the MPI it was built with.
# The examples install with their link path as rpath (CMAKE_INSTALL_RPATH_USE_LINK_PATH).
log "$work/cmake.log" cmake -S "$root/examples/c" -B "$work/cmake" -DCMAKE_PREFIX_PATH="$prefix" \
    -DCMAKE_INSTALL_PREFIX="$work/bin"
log "$work/cmake-build.log" cmake --build "$work/cmake"
log "$work/cmake-install.log" cmake --install "$work/cmake"
run_examples "$work/bin/bin" find_package

# pkg-config from the system, else pkgconf from PyPI (a test extra).
pc=$(command -v pkg-config || command -v pkgconf || echo "$root/.venv/bin/pkgconf")
export PKG_CONFIG_PATH="$prefix/lib/pkgconfig:$prefix/lib64/pkgconfig:$prefix/lib/x86_64-linux-gnu/pkgconfig"
# shellcheck disable=SC2046
cc -std=c11 $("$pc" --cflags colfile) "$root/examples/c/snapshot.c" $("$pc" --libs colfile) -o "$work/pc/snapshot"
# shellcheck disable=SC2046
cc -std=c11 $("$pc" --cflags colfile-mpi) "$root/examples/c/mpi_snapshot.c" $("$pc" --libs colfile-mpi) \
    -o "$work/pc/mpi_snapshot"
# bigfile's C API: the same source, the drop-in's flags; its headers sit
# in their own directory (include/colfile/bigfile: bigfile.h, bigfile-mpi.h).
bf_inc=no
for flag in $("$pc" --cflags-only-I colfile-bigfile-mpi); do
    [ "${flag#-I}" -ef "$prefix/include/colfile/bigfile" ] && bf_inc=yes
done
[ "$bf_inc" = yes ] || fail "colfile-bigfile-mpi.pc: --cflags '$("$pc" --cflags colfile-bigfile-mpi)' miss include/colfile/bigfile"
for h in bigfile.h bigfile-mpi.h colfile-bigfile.h; do [ -f "$prefix/include/colfile/bigfile/$h" ] || fail "$h not installed"; done
# shellcheck disable=SC2046
cc -std=c11 $("$pc" --cflags colfile-bigfile-mpi) "$root/examples/c/bigfile_snapshot.c" \
    $("$pc" --libs colfile-bigfile-mpi) -o "$work/pc/bigfile_snapshot"
[ "$("$pc" --variable=mpiexec colfile-mpi)" -ef "$mpiexec" ] ||
    fail "colfile-mpi.pc: mpiexec is '$("$pc" --variable=mpiexec colfile-mpi)', not $mpiexec"
run_examples "$work/pc" pkg-config

# The Fortran module, when the build has it: examples/fortran with
# find_package(colfile COMPONENTS Fortran) and with pkg-config, built by
# the compiler colfile was built with (.mod files belong to one compiler).
if "$pc" --exists colfile-fortran; then
    fc=$("$pc" --variable=fortran_compiler colfile-fortran)
    rm -rf "$work/fcmake" "$work/fbin"
    log "$work/fcmake.log" cmake -S "$root/examples/fortran" -B "$work/fcmake" -DCMAKE_PREFIX_PATH="$prefix" \
        -DCMAKE_INSTALL_PREFIX="$work/fbin" -DCMAKE_Fortran_COMPILER="$fc"
    log "$work/fcmake-build.log" cmake --build "$work/fcmake"
    log "$work/fcmake-install.log" cmake --install "$work/fcmake"
    # shellcheck disable=SC2046
    log "$work/fpc.log" "$fc" $("$pc" --cflags colfile-fortran) "$root/examples/fortran/snapshot.f90" \
        $("$pc" --libs colfile-fortran) -o "$work/pc/fsnapshot"
    for exe in "$work/fbin/bin/fsnapshot" "$work/pc/fsnapshot"; do
        check_links "$exe"
        out=$(ldd "$exe")
        grep -q "libcolfile_fortran.so.0 => $prefix/" <<< "$out" || fail "$exe: libcolfile_fortran not from $prefix"
        log "$work/out/fsnapshot-write.log" "$exe" write "$work/out/fsnapshot" 3000
        out=$("$exe" read "$work/out/fsnapshot") || fail "$exe read failed"
        grep -q "read 3000 particles at time 0.50: 0 wrong" <<< "$out" || fail "$exe: $out"
        echo "fortran: $exe: $out"
    done
    for m in colfile.mod colfile_c.mod colfile_streams.mod colfile_integrity.mod; do
        [ -f "$prefix/include/colfile/fortran/$m" ] || fail "$m not installed"
    done
else
    echo "fortran: colfile was built without its Fortran module: not checked"
fi

# An MPI that is not there: find_package(colfile COMPONENTS mpi) fails
# and says why.
mkdir -p "$work/notfound/src"
printf 'cmake_minimum_required(VERSION 3.18)\nproject(p C)\nfind_package(colfile REQUIRED COMPONENTS mpi)\n' \
    > "$work/notfound/src/CMakeLists.txt"
if cmake -S "$work/notfound/src" -B "$work/notfound/build" -DCMAKE_PREFIX_PATH="$prefix" \
        -DMPI_C_COMPILER=/nonexistent/mpicc > "$work/notfound.log" 2>&1; then
    fail "find_package(colfile COMPONENTS mpi) succeeded with MPI_C_COMPILER=/nonexistent/mpicc"
fi
grep -q "was built with the MPI of" "$work/notfound.log" ||
    { cat "$work/notfound.log" >&2; fail "find_package gave no reason"; }
echo "find_package without its MPI: fails and says why ($work/notfound.log)"
