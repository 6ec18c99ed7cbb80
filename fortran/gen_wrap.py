"""The thin procedures of the Fortran modules, one line of table each,
written by gen_rw.py into <module>_wrap.inc: accessors of a handle (-1 or
'' when it is not open), handles released, and lists of names.  What each
does beyond its C call is written by hand in the module."""

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
# Intents of the handles where they are not intent(in).
INOUT = {"colfile_attr_names", "colfile_close", "colfile_column_close", "writer_close",
         "colfile_stream_discard", "reader_close", "colfile_mpi_stream_discard"}


def comment(text):
    return ["! " + line if line else "" for line in text.split("\n")] if text else []


def arg_decls(name, args):
    out = []
    for a in args.split(", "):
        if a in HANDLES:
            intent = "inout" if name in INOUT else "in"
            out.append(f"  {HANDLES[a]}, intent({intent}) :: {a}")
        elif a == "task":
            out.append("  integer(c_int64_t), intent(in) :: task")
        elif a == "comm":
            out.append("  integer, intent(in) :: comm")
    return out


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
        files[f"{module}_wrap.inc"] = header + "\n".join("\n".join(p) + "\n" for p in procs)
    return files
