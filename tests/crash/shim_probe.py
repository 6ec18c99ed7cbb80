"""Runs a script of file operations, for testing faultshim.so itself.

    LD_PRELOAD=faultshim.so CF_FAULT_SCOPE=DIR ... python shim_probe.py DIR SCRIPT.json

SCRIPT is a list of operations, each a list: ["write", path, text] (create
or truncate, write), ["pwrite", path, offset, text] (no truncation),
["fsync", path] (a file or a directory), ["rename", a, b], ["exchange", a, b]
(renameat2 RENAME_EXCHANGE through syscall()), ["unlink", path],
["mkdir", path], ["rmdir", path], ["truncate", path, size],
["link", a, b], ["sync"], ["remember", path] (note the inode number of
path; changes nothing), ["mkdir-reusing", path, remembered] (a directory at
path with the inode number remembered of the other path, if the file
system hands it out again: directories DIR.pad0, DIR.pad1, ... are made
beside DIR, where the shim does not look, until one gets it -- ext4 gives
the lowest free number of a group -- and that one is renamed to path; else
path is made as it is.  Either way one counted operation in DIR; the outcome is
["ok", true] or ["ok", false]).  Paths are relative to DIR.  Each
operation's outcome goes to stdout, one JSON line: ["ok"] or ["err",
errno, retval].
"""

from __future__ import annotations

import ctypes
import json
import os
import sys

RENAME_EXCHANGE = 2
SYS_RENAMEAT2 = 316  # x86-64
AT_FDCWD = -100


def _mkdir_reusing(root: str, path: str, ino: int, tries: int = 300) -> bool:
    # beside DIR, where the shim does not look: the file system puts them
    # near DIR's own directories
    pads = root.rstrip("/") + ".pad"
    for k in range(tries):
        pad = pads + str(k)
        if os.path.exists(pad):
            continue
        os.mkdir(pad)
        if os.lstat(pad).st_ino == ino:
            os.rename(pad, path)
            return True
    os.mkdir(path)
    return False


def main() -> int:
    root, script = sys.argv[1], json.loads(open(sys.argv[2]).read())
    libc = ctypes.CDLL(None, use_errno=True)
    libc.syscall.restype = ctypes.c_long
    remembered: dict[str, int] = {}
    for op in script:
        kind, args = op[0], op[1:]
        p = [os.path.join(root, a) if isinstance(a, str) else a for a in args]
        out: list[object] = ["ok"]
        try:
            if kind == "write":
                fd = os.open(os.path.join(root, args[0]), os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o666)
                n = os.write(fd, args[1].encode())
                os.close(fd)
                out = ["ok", n]
            elif kind == "pwrite":
                fd = os.open(p[0], os.O_WRONLY)
                n = os.pwrite(fd, args[2].encode(), args[1])
                os.close(fd)
                out = ["ok", n]
            elif kind == "fsync":
                fd = os.open(p[0], os.O_RDONLY)
                try:
                    os.fsync(fd)
                finally:
                    os.close(fd)
            elif kind == "rename":
                os.rename(p[0], p[1])
            elif kind == "exchange":
                rc = libc.syscall(SYS_RENAMEAT2, AT_FDCWD, p[0].encode(), AT_FDCWD, p[1].encode(),
                                  RENAME_EXCHANGE)
                if rc != 0:
                    out = ["err", ctypes.get_errno(), rc]
            elif kind == "unlink":
                os.unlink(p[0])
            elif kind == "mkdir":
                os.mkdir(p[0])
            elif kind == "rmdir":
                os.rmdir(p[0])
            elif kind == "truncate":
                fd = os.open(p[0], os.O_WRONLY)
                os.ftruncate(fd, args[1])
                os.close(fd)
            elif kind == "link":
                os.link(p[0], p[1])
            elif kind == "sync":
                os.sync()
            elif kind == "remember":
                remembered[args[0]] = os.lstat(p[0]).st_ino
            elif kind == "mkdir-reusing":
                out = ["ok", _mkdir_reusing(root, p[0], remembered[args[1]])]
            else:
                out = ["err", "unknown op", kind]
        except OSError as exc:
            out = ["err", exc.errno, str(exc)]
        print(json.dumps(out), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
