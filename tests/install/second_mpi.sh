#!/usr/bin/env bash
# second_mpi.sh DIR - unpack Debian's MPICH (libmpich-dev and what it
# links) into DIR without installing it, and print the directory of its
# mpicc: a second MPI for the installed-package test, which puts it first
# on PATH.  Needs no root: `apt-get download` and `dpkg -x` (root only
# runs `apt-get update` when the package lists are empty:
# tools/debian_unpack.sh).  Reuses DIR when it is complete.
set -euo pipefail
dir=$1
bin="$dir/bin"
if [ -x "$bin/mpicc" ]; then echo "$bin"; exit 0; fi
rm -rf "$dir"
mkdir -p "$bin"
"$(dirname "$0")/../../tools/debian_unpack.sh" second_mpi.sh "$dir" \
    mpich libmpich-dev libmpich12 libhwloc15 libucx0 libgfortran5
# The wrapper names /usr; point it at the unpacked tree.
sed -e "s|^prefix=/usr\$|prefix=$dir/root/usr|" \
    -e "s|^exec_prefix=/usr\$|exec_prefix=$dir/root/usr|" \
    -e "s|^includedir=/usr/|includedir=$dir/root/usr/|" \
    -e "s|^libdir=/usr/|libdir=$dir/root/usr/|" \
    "$dir/root/usr/bin/mpicc.mpich" > "$bin/mpicc"
chmod +x "$bin/mpicc"
ln -s "$dir/root/usr/bin/mpiexec.hydra" "$bin/mpiexec"
echo "$bin"
