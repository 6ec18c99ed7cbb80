"""Compatibility layers: the APIs of other libraries, implemented on colfile.

Sub-modules
-----------
:mod:`colfile.compat.bigfile`
    A drop-in replacement for the Python API of bigfile 0.1.52
    (``File``/``BigFile``, ``FileMPI``, ``Column``/``BigBlock``, ``Dataset``,
    the attribute semantics and the exceptions).  Existing bigfile code runs
    after changing only its import::

        import colfile.compat.bigfile as bigfile
        # or: from colfile.compat.bigfile import BigFile, BigFileMPI, Dataset

Nothing is imported here, so ``import colfile.compat`` stays cheap.
"""

__all__ = ["bigfile"]
