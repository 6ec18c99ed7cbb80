#!/usr/bin/env python3
"""The interface blocks through which the Fortran modules call C (one
bind(c) interface per function of include/colfile*.h they use), written
from the prototypes below into <module>_bind.inc by gen_rw.py."""
import re

# Argument types: (declaration, attribute, dimension).  `*` marks an
# argument C writes through (intent(out)), `&` one it reads and writes.
ARGS = {
    "ptr": ("type(c_ptr)", "value", ""),
    "ptr*": ("type(c_ptr)", "intent(out)", ""),
    "ptr&": ("type(c_ptr)", "intent(inout)", ""),
    "str": ("character(kind=c_char)", "intent(in)", "(*)"),
    "dt16*": ("character(kind=c_char)", "intent(out)", "(16)"),
    "int": ("integer(c_int)", "value", ""),
    "int*": ("integer(c_int)", "intent(out)", ""),
    "i64": ("integer(c_int64_t)", "value", ""),
    "i64*": ("integer(c_int64_t)", "intent(out)", ""),
    "size*": ("integer(c_size_t)", "intent(out)", ""),
    "err": ("type(cf_error_t)", "intent(inout)", ""),
    "layout": ("type(cf_stream_layout_t)", "intent(in)", ""),
    "layout*": ("type(cf_stream_layout_t)", "intent(out)", ""),
    "stats*": ("type(colfile_stats)", "intent(out)", ""),
}
RESULTS = {"int": "integer(c_int)", "i64": "integer(c_int64_t)", "ptr": "type(c_ptr)",
           "size": "integer(c_size_t)"}
# The names an interface imports from its module, in this order.
IMPORTS = ["c_ptr", "c_char", "c_int", "c_int64_t", "c_size_t", "cf_error_t", "cf_stream_layout_t",
           "colfile_stats"]

# "result fortran_name[=c_name](type arg, ...)", per module; "# ..." lines
# are comments placed before the next interface.
PROTOTYPES = {
    "colfile_c": [
        "size c_strlen=strlen(ptr s)",
        "ptr cf_column_dtype(ptr c)",
        "i64 cf_column_nmemb(ptr c)",
        "i64 cf_column_nfile(ptr c)",
        "void cf_names_free(ptr names, i64 count)",
    ],
    "colfile": [
        "int cf_file_open(ptr* out, str path, int flags, err err)",
        "void cf_file_close(ptr f)",
        "ptr cf_file_path(ptr f)",
        "int cf_file_list(ptr f, ptr* names, i64* count, err err)",
        "int cf_file_remove_group(ptr f, str name, err err)",
        "int cf_column_create(ptr* out, ptr f, str name, str dtype, i64 nmemb, i64 size, i64 nfile, err err)",
        "int cf_column_open(ptr* out, ptr f, str name, err err)",
        "int cf_column_close(ptr c, err err)",
        "int cf_column_flush(ptr c, err err)",
        "i64 cf_column_size(ptr c)",
        "ptr cf_column_name(ptr c)",
        "int cf_column_rw=cf_column_write(ptr c, i64 start, i64 count, ptr buf, str dtype, i64 row_stride, i64 elem_stride, err err)",
        "int cf_column_read(ptr c, i64 start, i64 count, ptr buf, str dtype, i64 row_stride, i64 elem_stride, err err)",
        "int cf_column_read_rows(ptr c, ptr rows, i64 count, ptr buf, str dtype, i64 row_stride, i64 elem_stride, err err)",
        "int cf_column_read_step(ptr c, i64 start, i64 step, i64 count, ptr buf, str dtype, i64 row_stride, i64 elem_stride, err err)",
        "int cf_column_attr_set(ptr c, str name, str dtype, i64 nmemb, ptr data, err err)",
        "int cf_column_attr_set_string(ptr c, str name, str value, err err)",
        "int cf_column_attr_get(ptr c, str name, ptr* dtype, i64* nmemb, ptr* data, err err)",
        "int cf_column_attr_get_as(ptr c, str name, str dtype, ptr buf, i64 capacity, ptr nmemb, err err)",
        "int cf_column_attr_get_string(ptr c, str name, ptr* value, size* len, err err)",
        "int cf_column_attr_delete(ptr c, str name, err err)",
        "int cf_column_attr_names(ptr c, ptr* names, i64* count, err err)",
        "void cf_free(ptr p)",
    ],
    "colfile_streams": [
        "int cf_stream_layout_choose(layout* out, ptr f, i64 tasks, i64 files, i64 chunk, i64 align, err err)",
        "int cf_stream_create(ptr* out, ptr f, str name, str dtype, i64 nmemb, layout layout, err err)",
        "int cf_stream_reopen(ptr* out, ptr f, str name, err err)",
        "void cf_stream_writer_info(ptr w, layout* layout, dt16* dtype, i64* nmemb)",
        "int cf_stream_task_open(ptr* out, ptr w, i64 task, err err)",
        "int cf_stream_flush(ptr w, err err)",
        "int cf_stream_close(ptr w, err err)",
        "void cf_stream_discard(ptr w)",
        "int cf_stream_open(ptr* out, ptr f, str name, err err)",
        "void cf_stream_reader_close(ptr r)",
        "void cf_stream_info(ptr r, layout* layout, dt16* dtype, i64* nmemb, i64* commit)",
        "i64 cf_stream_size(ptr r)",
        "i64 cf_stream_task_size(ptr r, i64 task)",
        "i64 cf_stream_task_start(ptr r, i64 task)",
        "i64 cf_stream_task_rows(ptr t)",
        "int cf_stream_append(ptr t, ptr rows, i64 count, err err)",
        "int cf_stream_read(ptr r, i64 start, i64 count, ptr buf, err err)",
        "int cf_stream_read_task(ptr r, i64 task, i64 start, i64 count, ptr buf, err err)",
        "int cf_file_list_streams(ptr f, ptr* names, i64* count, err err)",
        "int cf_dtype_normalize(str dtype, dt16* out, err err)",
        "int cf_dtype_itemsize(str dtype, i64* itemsize, err err)",
        "int cf_dtype_convert(ptr dst, i64 dst_stride, str to, ptr src, i64 src_stride, str from, i64 count, err err)",
    ],
    "colfile_integrity": [
        "i64 cf_column_chunk_rows(ptr c)",
        "i64 cf_column_chunk_count(ptr c)",
        "int cf_column_chunk_stats(ptr c, i64 k, i64 component, stats* out, err err)",
        "int cf_column_set_chunk_rows(ptr c, i64 rows, err err)",
        "void cf_column_set_statistics(ptr c, int enabled)",
        "void cf_column_set_verify(ptr c, int enabled)",
        "int cf_column_ext_state(ptr c, int* state, err err)",
        # status: unsigned in C; the bits fit
        "int cf_column_verify_blob(ptr c, i64 i, int* status, err err)",
        "int cf_column_index_blob(ptr c, i64 i, err err)",
        "int cf_column_repair(ptr c, int* fixed, err err)",
        "int cf_stream_chunk_stats(ptr r, i64 task, i64 block, i64 component, stats* out, err err)",
        "int cf_stream_check_chunk(ptr r, i64 task, i64 block, err err)",
    ],
    "colfile_mpi": [
        "int cf_f_mpi_column_create_many(ptr f, int comm, ptr specs, i64 n, ptr opt, err err)",
        "int cf_f_mpi_column_write_many(ptr w, i64 n, int comm, ptr opt, err err)",
        "int cf_f_mpi_column_close_many(ptr cols, i64 n, int comm, err err)",
        "int cf_f_mpi_stream_create(ptr* out, ptr* task, dt16* dtype_out, ptr f, int comm, str name, str dtype, i64 nmemb, i64 files, i64 chunk, i64 align, err err)",
        "int cf_f_mpi_stream_reopen(ptr* out, ptr* task, dt16* dtype_out, i64* nmemb, ptr f, int comm, str name, err err)",
        "int cf_mpi_stream_flush(ptr s, err err)",
        "int cf_mpi_stream_close(ptr s, err err)",
        "void cf_mpi_stream_discard(ptr s)",
        "int cf_f_mpi_file_open(ptr* out, int comm, str path, int flags, err err)",
        "int cf_f_mpi_file_list(ptr f, int comm, ptr* names, i64* count, err err)",
        "int cf_f_mpi_column_create(ptr* out, ptr f, int comm, str name, str dtype, i64 nmemb, i64 local_rows, ptr opt, i64* first_row, err err)",
        "int cf_f_mpi_column_open(ptr* out, ptr f, int comm, str name, err err)",
        "int cf_f_mpi_column_write(ptr c, int comm, i64 start, i64 count, ptr buf, str dtype, i64 row_stride, i64 elem_stride, ptr opt, err err)",
        "int cf_f_mpi_column_read(ptr c, int comm, i64 start, i64 count, ptr buf, str dtype, i64 row_stride, i64 elem_stride, ptr opt, err err)",
        "int cf_f_mpi_column_grow(ptr& c, ptr f, int comm, i64 local_rows, ptr opt, i64* first_row, err err)",
        "int cf_f_mpi_column_attr_set(ptr c, int comm, str name, str dtype, i64 nmemb, ptr data, err err)",
        "int cf_f_mpi_column_close(ptr c, int comm, err err)",
    ],
}


def interface(proto):
    m = re.fullmatch(r"(\w+) (\w+)(?:=(\w+))?\((.*)\)", proto)
    result, name, cname, args = m.groups()
    args = [a.split() for a in args.split(", ")] if args else []
    kind = "subroutine" if result == "void" else "function"
    decls = [(ARGS[t], a) for t, a in args]
    used = " ".join(d[0] for d, _ in decls) + " " + RESULTS.get(result, "")
    imports = [n for n in IMPORTS if re.search(r"\b" + n + r"\b", used)]
    head = f"  {kind} {name}({', '.join(a for _, a in args)}) bind(c, name='{cname or name}')"
    if len(head) > 110:
        head = head.replace(") bind(c", ") &\n      bind(c", 1)
    lines = [head, "    import :: " + ", ".join(imports)]
    lines += [f"    {d}, {attr} :: {a}{dim}" for (d, attr, dim), a in decls]
    if kind == "function":
        lines.append(f"    {RESULTS[result]} :: {name}")
    lines.append(f"  end {kind} {name}")
    return lines


def bind_files(header):
    files = {}
    for module, protos in PROTOTYPES.items():
        lines = ["interface"]
        for p in protos:
            if p.startswith("# "):
                lines.append("  ! " + p[2:])
            else:
                lines += interface(p)
        lines.append("end interface")
        files[f"{module}_bind.inc"] = header + "\n".join(lines) + "\n"
    return files
