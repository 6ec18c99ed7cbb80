#!/usr/bin/env bash
# second_mpi.sh DIR - unpack Debian's MPICH (libmpich-dev and what it
# links) into DIR without installing it, and print the directory of its
# mpicc: a second MPI for the installed-package test, which puts it first
# on PATH.  Needs no root: `apt-get download` and `dpkg -x` (root only
# runs `apt-get update` when the package lists are empty).  Reuses DIR
# when it is complete.
set -euo pipefail
dir=$1
bin="$dir/bin"
if [ -x "$bin/mpicc" ]; then echo "$bin"; exit 0; fi
command -v apt-get > /dev/null && command -v dpkg > /dev/null ||
    { echo "second_mpi.sh: needs apt-get and dpkg (a Debian-like system)" >&2; exit 1; }
rm -rf "$dir"
mkdir -p "$dir/debs" "$bin"
pkgs="mpich libmpich-dev libmpich12 libhwloc15 libucx0 libgfortran5"
if ! (cd "$dir/debs" && apt-get download $pkgs) > "$dir/download.log" 2>&1; then
    if [ "$(id -u)" = 0 ]; then
        apt-get update > "$dir/update.log" 2>&1
        (cd "$dir/debs" && apt-get download $pkgs) > "$dir/download.log" 2>&1 ||
            { cat "$dir/download.log" >&2; exit 1; }
    else
        cat "$dir/download.log" >&2
        echo "second_mpi.sh: apt-get download failed (run apt-get update once as root)" >&2
        exit 1
    fi
fi
for deb in "$dir"/debs/*.deb; do dpkg -x "$deb" "$dir/root"; done
# The wrapper names /usr; point it at the unpacked tree.
sed -e "s|^prefix=/usr\$|prefix=$dir/root/usr|" \
    -e "s|^exec_prefix=/usr\$|exec_prefix=$dir/root/usr|" \
    -e "s|^includedir=/usr/|includedir=$dir/root/usr/|" \
    -e "s|^libdir=/usr/|libdir=$dir/root/usr/|" \
    "$dir/root/usr/bin/mpicc.mpich" > "$bin/mpicc"
chmod +x "$bin/mpicc"
ln -s "$dir/root/usr/bin/mpiexec.hydra" "$bin/mpiexec"
echo "$bin"
