"""The thin procedures of the Fortran modules, one line of table each,
written by gen_rw.py into <module>_wrap.inc: accessors of a handle (-1 or
'' when it is not open), handles released, lists of names, and calls of
one C function whose outcome is the procedure's.  What a procedure does
beyond its C call is written by hand in the module."""

HANDLES = {
    "f": "type(colfile_file)",
    "c": "type(colfile_column)",
    "r": "type(colfile_stream_reader)",
    "w": "type(colfile_stream_writer)",
    "s": "type(colfile_stream)",
}
STAT_ARGS = ["  integer, intent(out), optional :: stat",
             "  character(len=*), intent(inout), optional :: errmsg"]

# Accessors: (name, handle, its C pointer, kind (i64, str or is_open),
# value, comment).  `task` as an argument: a task number.
ACCESSORS = {
    "colfile": [
        ("colfile_is_open", "f", "f%ptr", "is_open", "", ""),
        ("colfile_path", "f", "f%ptr", "str", "cf_file_path(f%ptr)", ""),
        ("colfile_column_is_open", "c", "c%ptr", "is_open", "", ""),
        ("colfile_size", "c", "c%ptr", "i64", "cf_column_size(c%ptr)",
         "Accessors: on a handle that is not open, -1 (numbers) or '' (strings).\n\nRows of the column."),
        ("colfile_nmemb", "c", "c%ptr", "i64", "cf_column_nmemb(c%ptr)", "Elements per row."),
        ("colfile_nfile", "c", "c%ptr", "i64", "cf_column_nfile(c%ptr)", ""),
        ("colfile_dtype", "c", "c%ptr", "str", "cf_column_dtype(c%ptr)", 'The normalised dtype ("<f8").'),
        ("colfile_name", "c", "c%ptr", "str", "cf_column_name(c%ptr)", ""),
    ],
    "colfile_streams": [
        ("colfile_stream_is_open", "r", "r%ptr", "is_open", "", ""),
        ("colfile_stream_size", "r", "r%ptr", "i64", "cf_stream_size(r%ptr)",
         "Accessors of a reader: on one that is not open, -1 or ''.\n\nRows of the global view (every task's)."),
        ("colfile_stream_ntasks", "r", "r%ptr", "i64", "r%ntasks", ""),
        ("colfile_stream_task_size", "r, task", "r%ptr", "i64", "cf_stream_task_size(r%ptr, task)",
         "Committed rows of task `task` (0 .. ntasks-1), and its first row in the\n"
         "global view; -1 for a task out of range."),
        ("colfile_stream_task_start", "r, task", "r%ptr", "i64", "cf_stream_task_start(r%ptr, task)", ""),
        ("colfile_stream_nmemb", "r", "r%ptr", "i64", "r%nmemb", ""),
        ("colfile_stream_rows", "s", "s%task", "i64", "cf_stream_task_rows(s%task)",
         "Rows appended to this task so far (committed or not); -1 if not open."),
    ],
    "colfile_integrity": [
        ("colfile_chunk_rows", "c", "c%ptr", "i64", "cf_column_chunk_rows(c%ptr)",
         "Rows per statistics chunk (chunks restart at every blob; 0 for a\n"
         "column without data), and the chunks of the column; -1 if not open."),
        ("colfile_chunk_count", "c", "c%ptr", "i64", "cf_column_chunk_count(c%ptr)", ""),
    ],
}

# Handles released: (name, handle, the pointers nulled (the first is the
# one passed to C), the C call, outcome, comment).  Outcome "rc": the C
# call's (nothing to do when not open), "ok": always success, "none": no
# stat argument.
RELEASES = {
    "colfile": [
        ("colfile_close", "f", ["f%ptr"], "cf_file_close", "ok",
         "Release the handle (columns opened on it stay valid)."),
        ("colfile_column_close", "c", ["c%ptr"], "cf_column_close", "rc",
         "Commit and release the column (the handle is released on failure too)."),
    ],
    "colfile_streams": [
        ("writer_close", "w", ["w%ptr"], "cf_stream_close", "rc",
         "Commit, then release the writer and its tasks (also on failure)."),
        ("colfile_stream_discard", "w", ["w%ptr"], "cf_stream_discard", "none",
         "Release the writer without committing: the stream stays at its last\n"
         "commit (absent if never committed)."),
        ("reader_close", "r", ["r%ptr"], "cf_stream_reader_close", "ok", ""),
    ],
    "colfile_mpi": [
        ("colfile_mpi_stream_discard", "s", ["s%mpi", "s%task"], "cf_mpi_stream_discard", "none",
         "Release the stream without committing (collective): it stays at its\n"
         "last commit, absent if never committed."),
    ],
}

# Lists of names: (name, arguments before names, the C call (list, count
# and err its outputs), comment).
LISTS = {
    "colfile": [
        ("colfile_list", "f", "cf_file_list(f%ptr, list, count, err)",
         'The columns of the File, depth first ("group/name"), blank padded.'),
        ("colfile_attr_names", "c", "cf_column_attr_names(c%ptr, list, count, err)", ""),
    ],
    "colfile_streams": [
        ("colfile_stream_list", "f", "cf_file_list_streams(f%ptr, list, count, err)",
         "The streams of File f, sorted, blank padded."),
    ],
    "colfile_mpi": [
        ("colfile_mpi_list", "f, comm", "cf_f_mpi_file_list(f%ptr, int(comm, c_int), list, count, err)", ""),
    ],
}
# One C call: (name, arguments (`:out`, `:inout`: the intent if not in),
# the handle that must be open and the failure if not (or None), the C call
# (err its error record), comment).
NOT_OPEN_W = "the stream is not open for writing"
CALLS = {
    "colfile": [
        ("colfile_remove", "f, name", None, "cf_file_remove_group(f%ptr, f_c_string(name), err)",
         "Remove the column or group `name` and everything below it."),
        ("colfile_column_open", "c:out, f, name", None, "cf_column_open(c%ptr, f%ptr, f_c_string(name), err)",
         'Open column `name`, or "." / "group/." for the attributes of the File\n'
         "or of a group.  Writable if the File is."),
        ("colfile_column_flush", "c:inout", None, "cf_column_flush(c%ptr, err)", ""),
        ("attr_set_raw", "c:inout, name, dtype, n, p", None,
         "cf_column_attr_set(c%ptr, f_c_string(name), f_c_string(dtype), n, p, err)", ""),
        ("attr_set_str", "c:inout, name, value", None,
         "cf_column_attr_set_string(c%ptr, f_c_string(name), f_c_string(value), err)",
         "A string attribute (stored as Python stores a str); trailing blanks\nare dropped."),
        ("attr_get_raw", "c:inout, name, dtype, n, p", None,
         "cf_column_attr_get_as(c%ptr, f_c_string(name), f_c_string(dtype), p, n, c_null_ptr, err)",
         "Read attribute `name` converted to `dtype` into n elements at p; with\n"
         "exact, it must have exactly n elements."),
        ("colfile_attr_delete", "c:inout, name", None, "cf_column_attr_delete(c%ptr, f_c_string(name), err)", ""),
    ],
    "colfile_streams": [
        ("colfile_stream_flush", "w:inout", ("w%ptr", NOT_OPEN_W), "cf_stream_flush(w%ptr, err)",
         "Commit what every task has appended; the first commit makes the stream\n"
         "visible.  The stream stays open (a checkpoint)."),
    ],
    "colfile_integrity": [
        ("colfile_set_chunk_rows", "c:inout, rows", ("c%ptr", "the column is not open"),
         "cf_column_set_chunk_rows(c%ptr, rows, err)",
         "Rows per chunk for a column just created, before anything is written."),
        ("colfile_index_blob", "c:inout, i", ("c%ptr", "the column is not open"), "cf_column_index_blob(c%ptr, i, err)",
         "Compute blob i's CRC32C and statistics from its bytes (a File written\n"
         "by another tool, or stale statistics); committed by the next flush."),
        ("colfile_stream_check_chunk", "r, task, block", ("r%ptr", "the stream is not open"),
         "cf_stream_check_chunk(r%ptr, task, block, err)",
         "Compare the committed bytes of chunk `block` of task `task` with their\n"
         "recorded CRC32C: stat COLFILE_ECHECKSUM, COLFILE_ESHORT or\n"
         "COLFILE_ENOENT naming the file, task and chunk when they differ."),
    ],
    "colfile_mpi": [
        ("colfile_mpi_column_open", "c:out, f, comm, name", None,
         "cf_f_mpi_column_open(c%ptr, f%ptr, int(comm, c_int), f_c_string(name), err)", ""),
        ("colfile_mpi_stream_flush", "s:inout", ("s%mpi", NOT_OPEN_W), "cf_mpi_stream_flush(s%mpi, err)",
         "Commit what every rank has appended (collective over the stream's\n"
         "communicator); the first commit makes the stream visible.  The stream\n"
         "stays open: a checkpoint."),
        ("mpi_attr_raw", "c:inout, comm, name, dtype, n, p", None,
         "cf_f_mpi_column_attr_set(c%ptr, int(comm, c_int), f_c_string(name), f_c_string(dtype), n, p, err)",
         "Attributes set collectively (rank 0's value is stored)."),
    ],
}
# Arguments other than handles.
ARGS = {
    "name": "character(len=*), intent(in)",
    "dtype": "character(len=*), intent(in)",
    "value": "character(len=*), intent(in)",
    "comm": "integer, intent(in)",
    "task": "integer(c_int64_t), intent(in)",
    "block": "integer(c_int64_t), intent(in)",
    "rows": "integer(c_int64_t), intent(in)",
    "i": "integer(c_int64_t), intent(in)",
    "n": "integer(c_int64_t), intent(in)",
    "p": "type(c_ptr), intent(in)",
}
# Intents of the handles where they are not intent(in).
INOUT = {"colfile_attr_names", "colfile_close", "colfile_column_close", "writer_close",
         "colfile_stream_discard", "reader_close", "colfile_mpi_stream_discard"}


def comment(text):
    return ["! " + line if line else "" for line in text.split("\n")] if text else []


def arg_decls(name, args):
    out = []
    for a in args.split(", "):
        a, _, intent = a.partition(":")
        if a in HANDLES:
            intent = intent or ("inout" if name in INOUT else "in")
            out.append(f"  {HANDLES[a]}, intent({intent}) :: {a}")
        else:
            out.append(f"  {ARGS[a]} :: {a}")
    return out


def call(name, args, need, c_call, note):
    body = [f"subroutine {name}({', '.join(a.partition(':')[0] for a in args.split(', '))}, stat, errmsg)",
            *arg_decls(name, args), *STAT_ARGS, "  type(cf_error_t) :: err"]
    if need:
        body.append(f"  if (.not. cf_is_open({need[0]}, '{need[1]}', stat, errmsg)) return")
    line = f"  call cf_finish({c_call}, err, stat, errmsg)"
    if len(line) > 110:
        line = f"  call cf_finish({c_call}, &\n    err, stat, errmsg)"
    return comment(note) + body + [line, f"end subroutine {name}"]


def accessor(name, args, ptr, kind, value, note):
    decls = arg_decls(name, args)
    if kind == "is_open":
        body = [f"logical function {name}({args})", *decls, f"  {name} = c_associated({ptr})",
                f"end function {name}"]
    elif kind == "str":
        body = [f"function {name}({args}) result(r)", *decls, "  character(len=:), allocatable :: r",
                "  r = ''", f"  if (c_associated({ptr})) r = c_f_string({value})", f"end function {name}"]
    else:
        body = [f"integer(c_int64_t) function {name}({args})", *decls, f"  {name} = -1",
                f"  if (c_associated({ptr})) {name} = {value}", f"end function {name}"]
    return comment(note) + body


def release(name, h, ptrs, call, outcome, note):
    head = f"subroutine {name}({h})" if outcome == "none" else f"subroutine {name}({h}, stat, errmsg)"
    body = [head, *arg_decls(name, h)]
    if outcome != "none":
        body += STAT_ARGS
    if outcome == "rc":
        body += ["  type(cf_error_t) :: err", "  integer(c_int) :: rc", "  rc = 0",
                 f"  if (c_associated({ptrs[0]})) rc = {call}({ptrs[0]}, err)"]
    else:
        body.append(f"  if (c_associated({ptrs[0]})) call {call}({ptrs[0]})")
    body += [f"  {p} = c_null_ptr" for p in ptrs]
    if outcome == "rc":
        body.append("  call cf_finish(rc, err, stat, errmsg)")
    elif outcome == "ok":
        body.append("  call cf_no_error(stat)")
    body.append(f"end subroutine {name}")
    return comment(note) + body


def names_list(name, args, call, note):
    body = [f"subroutine {name}({args}, names, stat, errmsg)", *arg_decls(name, args),
            "  character(len=:), allocatable, intent(out) :: names(:)", *STAT_ARGS,
            "  type(cf_error_t) :: err", "  type(c_ptr) :: list", "  integer(c_int64_t) :: count",
            f"  call cf_finish_names({call}, list, count, err, names, stat, errmsg)",
            f"end subroutine {name}"]
    return comment(note) + body


def wrap_files(header):
    files = {}
    for module in ("colfile", "colfile_streams", "colfile_integrity", "colfile_mpi"):
        procs = [accessor(*a) for a in ACCESSORS.get(module, [])]
        procs += [release(*r) for r in RELEASES.get(module, [])]
        procs += [names_list(*n) for n in LISTS.get(module, [])]
        procs += [call(*c) for c in CALLS.get(module, [])]
        files[f"{module}_wrap.inc"] = header + "\n".join("\n".join(p) + "\n" for p in procs)
    return files
