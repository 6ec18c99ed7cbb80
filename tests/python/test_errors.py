"""Exceptions: the class hierarchy and how C failures map onto it."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import numpy as np
import pytest

import colfile
from colfile import errors


@pytest.mark.parametrize("cls, builtin", [
    (colfile.StorageError, OSError),
    (colfile.NoSuchFileError, FileNotFoundError),
    (colfile.ColumnNotFoundError, KeyError),
    (colfile.AttributeNotFoundError, KeyError),
    (colfile.AlreadyExistsError, FileExistsError),
    (colfile.InvalidNameError, ValueError),
    (colfile.DTypeError, TypeError),
    (colfile.RangeError, IndexError),
    (colfile.OutOfMemoryError, MemoryError),
    (colfile.InvalidArgumentError, ValueError),
    (colfile.ReadOnlyError, PermissionError),
    (colfile.ColumnKindError, TypeError),
    (colfile.ClosedError, ValueError),
    (colfile.FormatError, colfile.Error),
    (colfile.ChecksumError, colfile.Error),
])
def test_hierarchy(cls: type, builtin: type) -> None:
    assert issubclass(cls, colfile.Error) and issubclass(cls, builtin)
    exc = cls("some/path: what went wrong", -2)
    assert str(exc) == "some/path: what went wrong"  # no KeyError quoting
    assert exc.code == -2 and exc.code_name == "CF_ENOENT"


def test_code_table() -> None:
    assert errors.error_class(errors.CF_ENOENT) is colfile.NoSuchFileError
    assert errors.error_class(errors.CF_ENOENT, "column") is colfile.ColumnNotFoundError
    assert errors.error_class(errors.CF_ENOENT, "attr") is colfile.AttributeNotFoundError
    assert errors.error_class(errors.CF_ECAST) is colfile.DTypeError
    for code in (errors.CF_EFORMAT, errors.CF_ENOTFILE):
        assert errors.error_class(code) is colfile.FormatError
    assert errors.error_class(errors.CF_ESHORT) is colfile.IncompleteError
    assert issubclass(colfile.IncompleteError, colfile.FormatError)
    assert errors.error_class(errors.CF_EEXIST) is colfile.AlreadyExistsError
    assert errors.error_class(errors.CF_EEXIST, "create") is colfile.ColumnExistsError
    assert errors.error_class(-999) is colfile.Error
    for code in range(-15, 0):
        assert errors.error_class(code) is not colfile.Error, code


def test_c_failures_carry_code_and_path(path: str) -> None:
    with pytest.raises(colfile.NoSuchFileError) as exc:
        colfile.File(path, "r")
    assert exc.value.code == errors.CF_ENOENT and path in str(exc.value)
    with colfile.File(path, "w") as f:
        with pytest.raises(colfile.InvalidNameError) as exc2:
            f.create("a b", "f8")
        assert exc2.value.code == errors.CF_ENAME and "a b" in str(exc2.value)
        with pytest.raises(colfile.DTypeError) as exc3:
            f.create("c", "U4")
        assert exc3.value.code == errors.CF_EDTYPE and "U4" in str(exc3.value)
        with pytest.raises(colfile.ColumnNotFoundError) as exc4:
            f["missing"]
        assert exc4.value.code == errors.CF_ENOENT and "missing" in str(exc4.value)
        col = f.create("c", "i4", size=2)
        with pytest.raises(colfile.DTypeError) as exc5:
            col[:] = np.array([b"ab", b"cd"])
        assert exc5.value.code == errors.CF_ECAST


def test_damaged_header(path: str) -> None:
    with colfile.File(path, "w") as f:
        f.create("c", "i4", size=2)
    Path(path, "c", "header").write_text("DTYPE: <i4\nNMEMB: 1\nNFILE: 3\n000000: 2 : 0 : 0\n")
    with colfile.File(path) as f:
        with pytest.raises(colfile.FormatError) as exc:
            f["c"]
        assert os.path.join(path, "c") in str(exc.value)
        assert exc.value.code == errors.CF_EFORMAT


def test_header_only_data_access(path: str, lib: Any) -> None:
    with colfile.File(path, "w") as f:
        meta = f.create("m", None)
        with pytest.raises(colfile.Error):
            meta.append([1])
