"""``colfile attrs``: show, get, set and delete attributes."""

from __future__ import annotations

import argparse
import json
import re
import sys
import warnings
from typing import Any

import numpy as np

import colfile

from ..attrs import encode_value

from ._common import (CliError, NotFoundError, UsageError, command_parser, dump_json, fmt_value,
                      jsonable, open_file, safe_text, table)

HELP = "show, get, set or delete attributes"

DESCRIPTION = """\
Show, get, set or delete the attributes of the File, of a group or of a
column.  OBJECT is a column name, '.' for the File's own attributes (the
default), or 'group/.' (also 'group/') for a group's.  Without an action
every attribute is printed: name, dtype[nmemb] and value.  Actions may be
repeated and are carried out in the order given; setting or deleting opens
the File for writing."""

EPILOG = """\
VALUE syntax (JSON-ish):
  42, -7              an integer (stored as <i8)
  0.5, 1e10, nan, inf a float (<f8)
  1.5-2j              a complex number (<c16)
  true, false         a boolean (<b1)
  [1, 2, 3]           an array (numpy's dtype: <i8 here, <f8 if any float)
  ["a", "bc"]         a list of strings (<S2, NUL padded)
  "1.0"               a string (<a1); unquoted text that is no number,
                      list or boolean is a string too: Unit=Mpc/h
--type DTYPE forces the stored dtype of every --set in the command: a numpy
dtype such as f4, >i2, u8, c8, b1 (boolean), S10 (byte strings), or 'str'
for text (then VALUE is taken literally: --set Version=1.0 --type str).
Values that do not fit an integer dtype are refused.  NAME may not contain
'=' when set this way.

examples:
  colfile attrs snapshot                      all attributes of the File
  colfile attrs snapshot 1/Position           of a column
  colfile attrs snapshot 1/. --get Count      one value (strings printed raw)
  colfile attrs snapshot . --set BoxSize=1000.0 --set 'Unit="kpc/h"'
  colfile attrs snapshot 1/Mass --set Redshift=[0,0.5] --type '>f4'
  colfile attrs snapshot 1/Mass --delete Obsolete
  colfile attrs snapshot --json"""


class _Action(argparse.Action):
    """Collect --get/--set/--delete in command line order."""

    def __call__(self, parser: argparse.ArgumentParser, namespace: Any, values: Any,
                 option_string: str | None = None) -> None:
        actions = list(getattr(namespace, "actions", None) or [])
        actions.append((self.const, values))
        namespace.actions = actions


def add_parser(sub: Any) -> argparse.ArgumentParser:
    p = command_parser(sub, "attrs", HELP, DESCRIPTION, EPILOG)
    p.add_argument("path", metavar="PATH", help="the File (a directory)")
    p.add_argument("object", metavar="OBJECT", nargs="?", default=None,
                   help="column, '.' (the File, default) or 'group/.'")
    p.add_argument("--get", metavar="NAME", action=_Action, const="get", dest="actions",
                   help="print the value of attribute NAME")
    p.add_argument("--set", metavar="NAME=VALUE", action=_Action, const="set",
                   dest="actions", help="set attribute NAME to VALUE (see below)")
    p.add_argument("--delete", metavar="NAME", action=_Action, const="delete",
                   dest="actions", help="delete attribute NAME")
    p.add_argument("--type", metavar="DTYPE", default=None,
                   help="store the values of --set with this dtype")
    p.add_argument("--json", action="store_true",
                   help="JSON output (listing: name -> {dtype, nmemb, value})")
    p.set_defaults(actions=[], _extra_positionals="object")
    return p


# ---------------------------------------------------------------------------
# VALUE parsing

_SPECIALS = {
    "nan": float("nan"), "+nan": float("nan"), "-nan": float("nan"),
    "inf": float("inf"), "+inf": float("inf"), "infinity": float("inf"),
    "+infinity": float("inf"), "-inf": float("-inf"), "-infinity": float("-inf"),
}

_BARE_SPECIAL = re.compile(r"(?<![\w\"])([+-]?)(nan|inf|infinity)(?![\w\"])", re.I)


def _list_ok(v: list[Any], text: str) -> None:
    flat: list[Any] = []

    def walk(x: Any) -> None:
        if isinstance(x, list):
            for y in x:
                walk(y)
        else:
            flat.append(x)

    walk(v)
    if any(x is None or isinstance(x, dict) for x in flat):
        raise UsageError(f"cannot store {text!r}: lists may hold numbers, booleans "
                         "or strings only")
    nstr = sum(isinstance(x, str) for x in flat)
    if nstr and nstr != len(flat):
        raise UsageError(f"cannot store {text!r}: a list mixes strings and numbers")
    if any(isinstance(x, list) for x in v):
        # attributes are flat: a nested list would read back flattened
        raise UsageError(f"cannot store {text!r}: lists must be flat (attributes have "
                         "one dimension)")


def parse_value(text: str) -> Any:
    """VALUE as a Python value (see the help text for the syntax)."""
    t = text.strip()
    low = t.lower()
    if low in _SPECIALS:
        return _SPECIALS[low]
    if low in ("true", "false"):
        return low == "true"
    try:
        v = json.loads(t)
    except ValueError:
        if t.startswith("["):
            # allow nan/inf inside lists, as printed by `colfile attrs`
            fixed = _BARE_SPECIAL.sub(
                lambda m: ("-" if m.group(1) == "-" else "")
                + ("NaN" if m.group(2).lower() == "nan" else "Infinity"), t)
            try:
                v = json.loads(fixed)
            except ValueError:
                raise UsageError(f"cannot parse list value {text!r} (use JSON syntax: "
                                 "[1, 2.5, 3] or [\"a\", \"b\"])") from None
        elif t.startswith('"'):
            raise UsageError(f"cannot parse quoted string {text!r} (JSON string syntax)")
        else:
            if "j" in low:
                try:
                    return complex(t.replace(" ", ""))
                except ValueError:
                    pass
            return text  # plain text
    if v is None or isinstance(v, dict):
        raise UsageError(f"cannot store {text!r}: null and objects are not attribute values")
    if isinstance(v, list):
        if not v:
            raise UsageError(f"cannot store an empty list {text!r} without --type "
                             "(e.g. --type f8)")
        _list_ok(v, text)
    return v


def _is_text_type(spec: str) -> bool:
    return spec.lower() in ("str", "string", "text", "a", "a1", "<a1", ">a1", "|a1")


def _dtype(spec: str) -> np.dtype[Any]:
    s = spec.strip()
    if re.fullmatch(r"[<>|=]?b1?", s):  # bigfile's b1 is a boolean
        return np.dtype("?")
    if s.lower() == "bytes":
        return np.dtype("S")
    try:
        dt = np.dtype(s)
    except TypeError:
        raise UsageError(f"unknown dtype {spec!r} for --type (e.g. f4, >i2, u8, c16, b1, "
                         "S10, str)") from None
    if dt.kind not in "iufcbS" or dt.names is not None or dt.subdtype is not None:
        raise UsageError(f"--type {spec!r}: attributes are numbers (i u f c), booleans "
                         "(b1), byte strings (S) or text (str)")
    return dt


def _raw_text(text: str) -> str:
    """VALUE as literal text (a JSON quoted string is unquoted)."""
    t = text.strip()
    if t.startswith('"'):
        try:
            v = json.loads(t)
        except ValueError:
            return text
        if isinstance(v, str):
            return v
    return text


def typed_value(text: str, spec: str) -> Any:
    """VALUE converted to the dtype named by ``--type``."""
    if _is_text_type(spec):
        return _raw_text(text)
    dt = _dtype(spec)
    if dt.kind == "S":
        v = parse_value(text) if text.strip().startswith(("[", '"')) else text
        items = v if isinstance(v, list) else [v]
        if not all(isinstance(x, str) for x in items):
            items = [str(x) for x in items]
        raw = [x.encode("utf-8") for x in items]
        if dt.itemsize and any(len(b) > dt.itemsize for b in raw):
            raise UsageError(f"value {text!r} is longer than --type {spec} allows")
        return np.array(raw, dtype=dt if dt.itemsize else None)
    v = parse_value(text)
    try:
        arr = np.asarray(v)
    except ValueError as exc:
        raise UsageError(f"cannot store {text!r} as {spec}: {exc}") from None
    if arr.dtype.kind not in "iufcb":
        raise UsageError(f"cannot store {text!r} as {spec}: not a number")
    if arr.dtype.kind == "c" and dt.kind not in "c" and np.any(arr.imag != 0):
        raise UsageError(f"cannot store complex {text!r} as {spec}")
    with warnings.catch_warnings(), np.errstate(all="ignore"):
        warnings.simplefilter("ignore")
        src = arr.real if arr.dtype.kind == "c" and dt.kind != "c" else arr
        cast = src.astype(dt)
    if dt.kind in "iub":
        ok = src.dtype.kind in "iub" or bool(np.all(np.isfinite(src)))
        if ok:
            ok = src.reshape(-1).tolist() == cast.reshape(-1).tolist()
        if not ok:
            raise UsageError(f"value {text!r} does not fit dtype {dt.str if dt.kind != 'b' else 'b1'}")
    return cast


# ---------------------------------------------------------------------------


def _target(f: Any, obj: str) -> tuple[Any, str]:
    """The attribute manager of OBJECT and a description of it."""
    o = obj.strip()
    if o in (".", "", "/", "./"):
        return f.attrs, "the File"
    if o.endswith("/.") or o.endswith("/"):
        g = o[:-2] if o.endswith("/.") else o.rstrip("/")
        try:
            return f[g + "/"].attrs, f"group {g!r}"
        except colfile.InvalidNameError as exc:
            raise CliError(f"bad name {obj!r}: {exc}") from None
        except KeyError:
            raise NotFoundError(f"{f.path}: no group {g!r}") from None
    try:
        return f[o].attrs, f"column {o!r}"
    except colfile.InvalidNameError as exc:
        raise CliError(f"bad name {obj!r}: {exc}") from None
    except KeyError:
        grp = f.get(o + "/")
        if grp is not None:
            return grp.attrs, f"group {o!r}"
        raise NotFoundError(f"{f.path}: no column or group {obj!r}") from None


def _entry(am: Any, name: str) -> dict[str, Any]:
    tok, nmemb, _raw = am.raw(name)
    return {"dtype": tok, "nmemb": nmemb, "value": am[name]}


def _print_all(am: Any, args: Any, out: Any) -> None:
    names = list(am)
    if args.json:
        dump_json(jsonable({n: _entry(am, n) for n in names}), out)
        return
    rows = []
    for n in names:
        e = _entry(am, n)
        dt = e["dtype"] if e["nmemb"] == 1 else f"{e['dtype']}[{e['nmemb']}]"
        rows.append([safe_text(n), dt, fmt_value(e["value"])])
    for line in table(rows):
        print(line, file=out)


def run(args: Any) -> int:
    actions = args.actions or []
    writes = any(kind in ("set", "delete") for kind, _ in actions)
    if args.type is not None and not any(kind == "set" for kind, _ in actions):
        raise UsageError("--type only applies to --set")
    # Parse every VALUE before touching the File.
    plan = []
    for kind, val in actions:
        if kind == "set":
            name, sep, text = val.partition("=")
            if not sep or not name:
                raise UsageError(f"--set needs NAME=VALUE, not {val!r}")
            value = typed_value(text, args.type) if args.type else parse_value(text)
            plan.append(("set", name, value))
        else:
            plan.append((kind, val, None))
    out = sys.stdout
    with open_file(args.path, "r+" if writes else "r") as f:
        am, what = _target(f, "." if args.object is None else args.object)
        if not plan:
            _print_all(am, args, out)
            return 0
        for kind, name, value in plan:
            try:
                if kind == "get":
                    v = am[name]
                    if args.json:
                        dump_json(jsonable(v), out)
                    elif isinstance(v, str):
                        print(v, file=out)
                    else:
                        print(fmt_value(v), file=out)
                elif kind == "set" and args.type:
                    # the dtype asked for, also S (which reads back as str)
                    am.set_raw(name, *encode_value(value))
                elif kind == "set":
                    am[name] = value
                else:
                    del am[name]
            except colfile.AttributeNotFoundError:
                raise NotFoundError(f"{f.path}: {what} has no attribute {name!r}") from None
            except colfile.InvalidNameError as exc:
                raise CliError(f"bad attribute name {name!r}: {exc}") from None
            except ValueError as exc:
                raise CliError(f"cannot set {name!r}: {exc}") from None
    return 0
