"""spool.open's modes follow the built-in open(): "r"/"w" (and "rt"/"wt")
are text with encoding, errors and newline; "rb"/"wb" bytes. Each case is
checked against what the built-in open() does with a local file."""

from __future__ import annotations

import builtins
import gc
import io
import re
from pathlib import Path
from typing import Any, Callable

import pytest

import spool


def _error(call: Callable[[], Any]) -> BaseException:
    try:
        call()
    except BaseException as e:  # noqa: BLE001  (any exception is compared)
        return e
    raise AssertionError("no exception")


TEXT = "héllo wörld\nsecond line\r\nthird\rlast 🚀"


@pytest.mark.parametrize("mode", ["w", "wt"])
@pytest.mark.parametrize("options", [{}, {"encoding": "utf-16"}, {"encoding": "latin-1", "errors": "replace"},
                                     {"newline": "\r\n"}, {"newline": ""}, {"newline": "\r"}],
                         ids=["default", "utf-16", "latin-1-replace", "crlf", "untranslated", "cr"])
def test_text_writes_the_bytes_open_writes(root: str, tmp_path: Path, mode: str, options: dict) -> None:
    local = tmp_path / "builtin.txt"
    with builtins.open(local, mode, **{"encoding": "utf-8", **options}) as f:
        f.write(TEXT)
        f.writelines(["a\n", "b\n"])
    with spool.open(f"{root}/text.txt", mode, **options) as f:
        assert isinstance(f, spool.ObjectTextWriter) and f.mode == mode
        assert f.write(TEXT) == len(TEXT)
        f.writelines(["a\n", "b\n"])
    assert f.info is not None and f.info.size == local.stat().st_size
    with spool.open(f"{root}/text.txt", "rb") as f:
        assert f.read() == local.read_bytes()


@pytest.mark.parametrize("mode", ["r", "rt"])
@pytest.mark.parametrize("options", [{}, {"newline": ""}, {"newline": "\n"}, {"newline": "\r\n"},
                                     {"encoding": "ascii", "errors": "replace"},
                                     {"encoding": "ascii", "errors": "surrogateescape"}],
                         ids=["universal", "untranslated", "lf", "crlf", "replace", "surrogateescape"])
def test_text_reads_what_open_reads(root: str, tmp_path: Path, mode: str, options: dict) -> None:
    data = TEXT.encode() + b"\nend\r\n"
    local = tmp_path / "builtin.txt"
    local.write_bytes(data)
    with spool.open(f"{root}/text.txt", "wb") as f:
        f.write(data)
    with builtins.open(local, mode, **{"encoding": "utf-8", **options}) as mine, \
            spool.open(f"{root}/text.txt", mode, **options) as theirs:
        assert isinstance(theirs, io.TextIOWrapper) and theirs.mode == mode
        assert theirs.readline() == mine.readline()
        position = theirs.tell()
        assert theirs.read(5) == mine.read(5)
        assert list(theirs) == list(mine)
        theirs.seek(position)  # a text position from tell(), as open() allows
        mine.seek(0)
        mine.readline()
        assert theirs.read() == mine.read()


def test_a_decoding_error_is_the_one_open_raises(root: str, tmp_path: Path) -> None:
    (tmp_path / "bad.txt").write_bytes(b"ok \xff\xfe")
    with spool.open(f"{root}/bad.txt", "wb") as f:
        f.write(b"ok \xff\xfe")
    with builtins.open(tmp_path / "bad.txt", encoding="utf-8") as mine, spool.open(f"{root}/bad.txt", "r") as theirs:
        expected, got = _error(mine.read), _error(theirs.read)
    assert type(got) is type(expected) is UnicodeDecodeError and str(got) == str(expected)


def test_binary_modes_are_unchanged(root: str) -> None:
    with spool.open(f"{root}/blob", "wb") as f:
        assert isinstance(f, spool.ObjectWriter) and f.mode == "wb"
        f.write(b"\x00\r\n\xff")
    for mode in ("rb", "br"):
        with spool.open(f"{root}/blob", mode) as f:
            assert isinstance(f, io.BufferedReader) and f.mode == "rb"
            assert f.read() == b"\x00\r\n\xff"
    with spool.open(f"{root}/blob") as f:  # the default is "rb", as fsspec.open's
        assert f.read() == b"\x00\r\n\xff"


@pytest.mark.parametrize("mode, value", [("w", b"bytes"), ("w", 3), ("wb", "text"), ("wb", 3)])
def test_a_wrong_type_written_is_the_typeerror_of_open(root: str, tmp_path: Path, mode: str, value: Any) -> None:
    with builtins.open(tmp_path / "x", mode) as f:
        expected = _error(lambda: f.write(value))
    with spool.open(f"{root}/x", mode) as f:
        got = _error(lambda: f.write(value))
    assert type(got) is TypeError and str(got) == str(expected)


@pytest.mark.parametrize("mode", ["rz", "rtb", "rw", "rr", "", "t", "b"])
def test_an_invalid_mode_is_the_valueerror_of_open(root: str, tmp_path: Path, mode: str) -> None:
    expected = _error(lambda: builtins.open(tmp_path / "x", mode))
    got = _error(lambda: spool.open(f"{root}/x", mode))
    assert type(got) is ValueError and str(got) == str(expected)


@pytest.mark.parametrize("option", ["encoding", "errors", "newline"])
def test_binary_mode_refuses_text_options_as_open_does(root: str, tmp_path: Path, option: str) -> None:
    value = {"encoding": "utf-8", "errors": "strict", "newline": "\n"}[option]
    expected = _error(lambda: builtins.open(tmp_path / "x", "wb", **{option: value}))
    got = _error(lambda: spool.open(f"{root}/x", "wb", **{option: value}))
    assert type(got) is ValueError and str(got) == str(expected)
    with pytest.raises(FileNotFoundError):
        spool.stat(f"{root}/x")


@pytest.mark.parametrize("mode", ["a", "x", "r+", "wb+", "ab"])
def test_modes_an_object_cannot_have_are_refused(root: str, mode: str) -> None:
    with pytest.raises(ValueError, match=re.escape(f"spool.open: mode '{mode}' is not supported")):
        spool.open(f"{root}/x", mode)


def test_unknown_encoding_or_newline_is_refused_before_anything_is_written(root: str) -> None:
    with pytest.raises(LookupError):
        spool.open(f"{root}/x", "w", encoding="no-such-codec")
    with pytest.raises(ValueError, match="illegal newline value"):
        spool.open(f"{root}/x", "w", newline="\t")
    with pytest.raises(FileNotFoundError):
        spool.stat(f"{root}/x")


def test_a_text_writer_publishes_nothing_unless_closed(root: str) -> None:
    with pytest.raises(RuntimeError):
        with spool.open(f"{root}/crashed.txt", "w") as f:
            f.write("x" * (9 << 20))  # past the buffer: parts already sent
            f.write("pending text")
            raise RuntimeError("the trainer crashed")
    f = spool.open(f"{root}/aborted.txt", "w")
    f.write("text")
    f.abort()
    assert f.closed
    f.close()  # closing after abort() does nothing
    f = spool.open(f"{root}/dropped.txt", "w")
    f.write("text")
    del f
    gc.collect()
    for name in ("crashed.txt", "aborted.txt", "dropped.txt"):
        with pytest.raises(FileNotFoundError):
            spool.stat(f"{root}/{name}")
    with spool.open(f"{root}/kept.txt", "w") as f:
        f.write("kept")
    assert spool.stat(f"{root}/kept.txt").size == 4
