"""File systems whose locks or renames differ from a local one's, for the
crash and concurrency harnesses (``--fs``).

Each model runs every process the harness starts (writers, repairs, the
read-back, workers, the observer) under the lock shim
(``tests/locking/lockshim.c``) in one of its modes:

=============  ===========================================================
``local``      no shim: the file system of this machine
``noflock``    every lock call fails with ENOSYS (Lustre ``-o noflock``);
               writers open their Files with ``locking=False``
               (``CF_OPEN_NOLOCKING``) and repairs run with
               ``--no-locking --force`` (nothing else writes the File)
``nodelocal``  every lock is granted and every probe finds it free, as
               node-local locks look from another node (Lustre
               ``localflock``, BeeGFS, NFS ``nolock``)
``noexchange`` ``renameat2(RENAME_EXCHANGE)`` fails with EINVAL (NFS):
               a re-create moves the old version aside, then renames the
               new one in; a crash between the two leaves the column absent
               with its old version in ``.colfile-old.<name>.*`` until
               ``colfile repair`` moves it back (docs/reliability.md, NFS)
=============  ===========================================================

Several may be combined with commas (``noflock,noexchange``).
"""
from __future__ import annotations

import os
from dataclasses import dataclass, field
from pathlib import Path

MODELS = ("local", "noflock", "nodelocal", "noexchange")
OLD_PREFIX = ".colfile-old."
#: CF_OPEN_NOLOCKING (include/colfile.h)
OPEN_NOLOCKING = 0x200


@dataclass
class FsModel:
    modes: frozenset[str] = field(default_factory=frozenset)
    shim: Path | None = None
    log: Path | None = None     # LOCKSHIM_LOG: the calls the shim answered
    table: Path | None = None   # LOCKSHIM_MOUNTINFO: the mount table shown

    @property
    def name(self) -> str:
        return ",".join(sorted(self.modes)) or "local"

    @property
    def active(self) -> bool:
        return bool(self.modes)

    @property
    def locking_off(self) -> bool:
        """Writers must open with locking off: every lock call fails."""
        return "noflock" in self.modes

    @property
    def no_exchange(self) -> bool:
        return "noexchange" in self.modes

    def apply(self, env: dict[str, str]) -> dict[str, str]:
        """`env` with the shim preloaded (before any other preload)."""
        if not self.active:
            return env
        assert self.shim is not None
        env = dict(env)
        other = env.get("LD_PRELOAD", "")
        env["LD_PRELOAD"] = f"{self.shim} {other}".strip()
        env["LOCKSHIM_MODE"] = ",".join(sorted(self.modes))
        if self.log is not None:
            env["LOCKSHIM_LOG"] = str(self.log)
        if self.table is not None:
            env["LOCKSHIM_MOUNTINFO"] = str(self.table)
        return env

    def show_mount(self, root: Path) -> None:
        """Show `root` in the mount table as the file system the lock model
        stands for (a Lustre mount with ``localflock`` or ``noflock``), as a
        real one would be: colfile reads the table to know what its locks
        prove.  ``noexchange`` alone changes nothing there."""
        option = "localflock" if "nodelocal" in self.modes else "noflock" if "noflock" in self.modes else None
        if option is None:
            return
        mnt = os.path.realpath(root)
        try:
            real = Path("/proc/self/mountinfo").read_text()
        except OSError:
            real = "22 1 8:2 / / rw,relatime shared:1 - ext4 /dev/sda2 rw\n"
        self.table = Path(root) / "mountinfo"
        self.table.write_text(real.rstrip("\n") + "\n"
                              f"9998 22 0:251 / {mnt} rw,relatime shared:998 - lustre "
                              f"10.1.0.1@o2ib:/scratch rw,{option},lazystatfs\n")

    def answered(self, program: str = "") -> dict[str, int]:
        """How many calls of each kind the shim answered itself
        ("noexchange renameat2": 12, ...), of processes whose command line
        holds `program` if given."""
        out: dict[str, int] = {}
        try:
            lines = self.log.read_text().splitlines() if self.log else []
        except OSError:
            lines = []
        for ln in lines:
            if program and program not in ln.split(" [", 1)[-1]:
                continue
            what = ln.split(" ", 1)[-1].split(" [", 1)[0]
            out[what] = out.get(what, 0) + 1
        return out

    def preload(self, other: str | Path | None) -> str:
        """The LD_PRELOAD value for the shim followed by `other`."""
        parts = ([str(self.shim)] if self.active and self.shim else []) + ([str(other)] if other else [])
        return " ".join(parts)

    def repair_args(self) -> list[str]:
        """`colfile repair` options: with every lock failing, repair can
        only run without locks; there and with node-local locks, --force
        (the harness knows that no writer is left) lets it change and
        remove what only a lock could prove free."""
        if self.locking_off:
            return ["--no-locking", "--force"]
        return ["--force"] if "nodelocal" in self.modes else []


def find_lockshim(build: Path | None) -> Path | None:
    for cand in ([build] if build else []) + [Path(p) for p in (os.environ.get("COLFILE_C_BUILD"),) if p]:
        p = Path(cand) / "tests" / "locking" / "lockshim.so"
        if p.exists():
            return p.resolve()
    return None


def parse(text: str, build: Path | None) -> FsModel:
    modes = frozenset(m.strip() for m in text.split(",") if m.strip() and m.strip() != "local")
    bad = sorted(modes - set(MODELS))
    if bad:
        raise SystemExit(f"--fs: unknown file-system model(s) {', '.join(bad)} (known: {', '.join(MODELS)})")
    if "noflock" in modes and "nodelocal" in modes:
        raise SystemExit("--fs: noflock and nodelocal are two lock models; pick one")
    if not modes:
        return FsModel()
    shim = find_lockshim(build)
    if shim is None:
        raise SystemExit(f"--fs {text}: tests/locking/lockshim.so is not built in {build}")
    return FsModel(modes, shim)


def moved_aside(root: Path, entity: str) -> list[Path]:
    """The old versions of `entity` a re-create without RENAME_EXCHANGE
    moved aside (hidden, next to its name)."""
    path = root / entity
    try:
        names = os.listdir(path.parent)
    except OSError:
        return []
    return [path.parent / n for n in names if n.startswith(OLD_PREFIX + path.name + ".")]
