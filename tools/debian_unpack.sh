#!/usr/bin/env bash
# debian_unpack.sh WHO DIR PKG... - download Debian packages into DIR/debs
# and unpack them into DIR/root, without installing anything.  Needs no
# root: `apt-get download` and `dpkg -x` (root only runs `apt-get update`
# when the package lists are empty).  WHO names the calling script in
# messages.  Logs go to DIR/download.log and DIR/update.log.
set -euo pipefail
who=$1 dir=$2
shift 2
command -v apt-get > /dev/null && command -v dpkg > /dev/null ||
    { echo "$who: needs apt-get and dpkg (a Debian-like system)" >&2; exit 1; }
mkdir -p "$dir/debs"
if ! (cd "$dir/debs" && apt-get download "$@") > "$dir/download.log" 2>&1; then
    if [ "$(id -u)" = 0 ]; then
        apt-get update > "$dir/update.log" 2>&1
        (cd "$dir/debs" && apt-get download "$@") > "$dir/download.log" 2>&1 ||
            { cat "$dir/download.log" >&2; exit 1; }
    else
        cat "$dir/download.log" >&2
        echo "$who: apt-get download failed (run apt-get update once as root)" >&2
        exit 1
    fi
fi
for deb in "$dir"/debs/*.deb; do dpkg -x "$deb" "$dir/root"; done
