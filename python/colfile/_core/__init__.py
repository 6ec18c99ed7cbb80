"""The binding tier: the only part of colfile that talks to libcolfile.

Every call into the C library goes through the modules of this package;
the rest of colfile (``file``, ``column``, ``mpi``, ``compat``, the CLI)
sees plain Python functions and opaque handles, never cffi.  Here, and
only here:

* a failing C call's ``cf_error`` record becomes a colfile exception
  (:mod:`._errors`), with the class that fits what was asked for;
* handles are opened and released (``cf_file_close``, ``cf_column_close``,
  ``cf_committer_free``), and memory the library hands out is copied and
  freed (``cf_free``, ``cf_names_free``: :mod:`.memory`);
* numpy arrays are passed to C as pointers that stay valid for the call;
* the kinds, states and bits the C headers define get the names colfile
  reports (:mod:`.constants`, from the generated :mod:`colfile._constants`,
  where every flag and code has its C name).

One module per concept: :mod:`.constants`, :mod:`._errors`, :mod:`.memory`,
:mod:`.library` (loading, version), :mod:`.dtype` (the core's dtype rules
and converter), :mod:`.file` (``cf_file``), :mod:`.column` (``cf_column``:
life cycle, rows), :mod:`.column_attrs` (a column's attributes),
:mod:`.integrity` (checksums, verification, repair, per-chunk statistics),
:mod:`.committer` (``cf_committer``) and :mod:`.plan` (the parallel
planning functions).

Below it are only the loader (``colfile._ffi``), the generated
declarations and constants, and :mod:`colfile.errors` (for the exception
classes); nothing here imports a user-facing module: they depend on it,
not the other way round (tests/python/test_python_layers.py checks it).
"""
