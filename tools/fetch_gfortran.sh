#!/usr/bin/env bash
# fetch_gfortran.sh DIR - unpack Debian's gfortran 12 (the driver, f951,
# libgfortran) into DIR without installing it, and print the path of a
# wrapper usable as CMAKE_Fortran_COMPILER.  The unpacked driver needs the
# rest of the system gcc-12 (crt files, liblto_plugin, libgcc): every entry
# of /usr/lib/gcc/<triplet>/12 missing from the unpacked tree is linked in,
# so gcc-12 (the same Debian version) must be installed.  The wrapper adds
# the unpacked libgfortran to the link path and the run path.  Needs no
# root (tools/debian_unpack.sh).  Reuses DIR when it is complete.
set -euo pipefail
dir=$1
wrapper="$dir/bin/gfortran"
if [ -x "$wrapper" ]; then echo "$wrapper"; exit 0; fi
triplet=$(gcc -dumpmachine 2>/dev/null || echo x86_64-linux-gnu)
sysgcc="/usr/lib/gcc/$triplet/12"
[ -d "$sysgcc" ] ||
    { echo "fetch_gfortran.sh: needs gcc-12 installed ($sysgcc is missing)" >&2; exit 1; }
rm -rf "$dir"
mkdir -p "$dir/bin"
"$(dirname "$0")/debian_unpack.sh" fetch_gfortran.sh "$dir" gfortran-12 libgfortran-12-dev libgfortran5
gcclib="$dir/root/usr/lib/gcc/$triplet/12"
mkdir -p "$gcclib"
for entry in "$sysgcc"/*; do
    name=$(basename "$entry")
    [ -e "$gcclib/$name" ] || ln -s "$entry" "$gcclib/$name"
done
libdir="$dir/root/usr/lib/$triplet"
cat > "$wrapper.tmp" <<WRAP
#!/bin/sh
# gfortran unpacked by tools/fetch_gfortran.sh: link its libgfortran.
exec "$dir/root/usr/bin/$triplet-gfortran-12" "\$@" -L "$libdir" -Wl,-rpath,"$libdir"
WRAP
chmod +x "$wrapper.tmp"
# Check that it compiles and runs a program before calling DIR complete.
printf 'program t\n  print "(a)", "ok"\nend program t\n' > "$dir/check.f90"
"$wrapper.tmp" -o "$dir/check" "$dir/check.f90" > "$dir/check.log" 2>&1 ||
    { cat "$dir/check.log" >&2; echo "fetch_gfortran.sh: the unpacked gfortran does not work" >&2; exit 1; }
[ "$("$dir/check")" = ok ] || { echo "fetch_gfortran.sh: the test program failed" >&2; exit 1; }
mv "$wrapper.tmp" "$wrapper"
echo "$wrapper"
