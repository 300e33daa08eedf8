"""Objects in any store spool reaches, as Python file objects.

``spool.open(url, "rb")`` gives a buffered, seekable reader; ``"wb"`` a
writer whose ``close()`` commits the object: until then nothing is visible
under the URL, and leaving a ``with`` block by an exception (or dropping the
writer unclosed) aborts it, so no partial object is ever published. After a
failed write the object is already discarded: ``close()`` then raises
rather than commit what got through. ``"r"`` and ``"w"`` (``"rt"``,
``"wt"``) are the same in text, as the built-in :func:`open` gives it: an
:class:`io.TextIOWrapper` over them, with ``encoding`` (UTF-8 unless
given), ``errors`` and ``newline``.

Fork (``torch.utils.data.DataLoader`` workers): a reader opened before
``fork()`` reopens the same object version in the child on its first read,
through connections of the child's own; a writer opened before the fork
belongs to the parent, and in the child every call on it raises
:class:`spool.FailedPreconditionError` (the child neither commits nor aborts
the parent's upload).
"""

from __future__ import annotations

import codecs
import io
import os
from dataclasses import dataclass
from typing import IO, Any, Literal, Optional, Tuple, Union, overload

from spool import _spool

PathLike = Union[str, "os.PathLike[str]"]

#: How much a reader fetches per request when it is read in small pieces.
DEFAULT_BUFFER_SIZE = 8 << 20


@dataclass(frozen=True)
class ObjectInfo:
    """What a store says about an object (or, from :func:`ls`, a folder)."""

    url: str
    key: str
    size: Optional[int]        # None for a folder
    mtime: Optional[float]     # seconds since the epoch; None for a folder
    version: Optional[str]     # ETag, generation, ...
    crc32c: Optional[int]      # when the store (or spool's uploader) keeps one

    @property
    def is_folder(self) -> bool:
        return self.size is None


def _info(raw: dict) -> ObjectInfo:
    return ObjectInfo(**raw)


class _RawObjectReader(io.RawIOBase):
    """The unbuffered side of a reader: positioned reads of one object version."""

    def __init__(self, url: str) -> None:
        super().__init__()
        self._reader = _spool._Reader(url)
        self._position = 0
        self.name = self._reader.url
        self.mode = "rb"

    @property
    def size(self) -> int:
        return self._reader.size

    def readable(self) -> bool:
        return True

    def seekable(self) -> bool:
        return True

    def readinto(self, buffer) -> int:  # type: ignore[override]
        n = self._reader.read_into(self._position, buffer)
        self._position += n
        return n

    def read_at(self, offset: int, buffer, part_size: int = 0) -> int:
        """Fills ``buffer`` from ``offset`` (the position is left alone) in one
        plan of parallel ranged reads, in parts of at most ``part_size`` bytes
        (0: the store's); returns the bytes read, short only at the end."""
        return self._reader.read_into(offset, buffer, part_size)

    def readall(self) -> bytes:
        # One request plan for the rest of the object (parallel ranged reads),
        # not io.RawIOBase's loop of DEFAULT_BUFFER_SIZE (8 KiB) requests; the
        # bytes are filled in place, so the object is held once, not twice.
        data = self._reader.read_all(self._position)
        self._position += len(data)
        return data

    def seek(self, offset: int, whence: int = io.SEEK_SET) -> int:
        if whence == io.SEEK_SET:
            position = offset
        elif whence == io.SEEK_CUR:
            position = self._position + offset
        elif whence == io.SEEK_END:
            position = self.size + offset
        else:
            raise ValueError(f"invalid whence {whence!r}")
        if position < 0:
            raise ValueError(f"negative seek position {position} in {self.name}")
        self._position = position
        return position

    def tell(self) -> int:
        return self._position


class _RawObjectWriter(io.RawIOBase):
    """The unbuffered side of a writer; close() commits, abort() discards."""

    def __init__(self, url: str) -> None:
        super().__init__()
        self._writer = _spool._Writer(url)
        self._aborted = False
        self._written = 0
        self.name = self._writer.url
        self.mode = "wb"
        self.info: Optional[ObjectInfo] = None

    def writable(self) -> bool:
        return True

    def tell(self) -> int:
        """Bytes written so far (a writer only appends, so this is its position)."""
        self._checkClosed()  # type: ignore[attr-defined]
        return self._written

    def write(self, data) -> int:  # type: ignore[override]
        if self._aborted:
            # What the buffer flushes while an aborted writer closes is dropped.
            return memoryview(data).nbytes
        n = self._writer.write(data)
        self._written += n
        return n

    def abort(self) -> None:
        self._aborted = True
        self._writer.abort()

    def close(self) -> None:
        if self.closed:
            return
        try:
            if not self._aborted:
                self.info = _info(self._writer.close())
        finally:
            super().close()


class _CommitOnClose:
    """``with`` for a writer: leaving normally closes (commits); leaving by
    an exception calls ``abort()``, so nothing half-written is published."""

    def __exit__(self, exc_type, exc, traceback) -> None:
        if exc_type is not None:
            self.abort()
        else:
            self.close()


class ObjectWriter(_CommitOnClose, io.BufferedWriter):
    """A buffered writer that commits on close and aborts on an exception.

    It only appends: ``tell()`` is the number of bytes written so far (as
    for a file from :func:`open`), and it cannot ``seek``.
    """

    raw: _RawObjectWriter

    def abort(self) -> None:
        """Discards everything written; the object is not created or changed."""
        self.raw.abort()
        super().close()

    def __del__(self) -> None:
        # Garbage-collected without close(): discard rather than publish.
        if not self.closed:
            try:
                self.raw.abort()
            finally:
                super().close()

    @property
    def info(self) -> Optional[ObjectInfo]:
        """The committed object's info, once closed."""
        return self.raw.info


class ObjectTextWriter(_CommitOnClose, io.TextIOWrapper):
    """Text written to an object (``spool.open(url, "w")``): an
    :class:`io.TextIOWrapper` over an :class:`ObjectWriter`, and like it,
    ``close()`` commits, while an exception in the ``with`` block,
    :meth:`abort` or dropping it unclosed publishes nothing."""

    buffer: ObjectWriter

    def __init__(self, buffer: ObjectWriter, encoding: str, errors: Optional[str] = None,
                 newline: Optional[str] = None) -> None:
        super().__init__(buffer, encoding=encoding, errors=errors, newline=newline)
        # io.TextIOWrapper writes the byte order mark of UTF-16 and UTF-32
        # only at the start of a seekable stream, and a writer cannot seek:
        # write it here, as open() does on a file, before the first text.
        name = codecs.lookup(self.encoding).name
        self._bom = codecs.getincrementalencoder(name)().encode("") if name in ("utf-16", "utf-32") else b""

    def write(self, text: str) -> int:
        if self._bom and isinstance(text, str):
            self.buffer.write(self._bom)
            self._bom = b""
        return super().write(text)

    def abort(self) -> None:
        """Discards everything written, text not yet encoded included."""
        self.buffer.abort()

    def __del__(self) -> None:
        # Garbage-collected without close(): discard rather than publish.
        try:
            closed = self.closed
        except ValueError:  # __init__ failed: the ObjectWriter aborts itself
            return
        if not closed:
            self.abort()

    @property
    def info(self) -> Optional[ObjectInfo]:
        """The committed object's info, once closed."""
        return self.buffer.info


ReadTextMode = Literal["r", "rt", "tr"]
WriteTextMode = Literal["w", "wt", "tw"]
ReadBinaryMode = Literal["rb", "br"]
WriteBinaryMode = Literal["wb", "bw"]


def _check_mode(mode: str, encoding: Optional[str], errors: Optional[str], newline: Optional[str]) -> Tuple[bool, bool]:
    """(writing, text) for ``mode``, refused as the built-in open() refuses
    it (same checks, order and messages), then the modes an object cannot have."""
    if not isinstance(mode, str):
        raise TypeError(f"open() argument 'mode' must be str, not {type(mode).__name__}")
    if set(mode) - set("rwxabt+") or len(set(mode)) != len(mode):
        raise ValueError(f"invalid mode: {mode!r}")
    if "t" in mode and "b" in mode:
        raise ValueError("can't have text and binary mode at once")
    if sum(c in mode for c in "rwxa") > 1:
        raise ValueError("must have exactly one of create/read/write/append mode")
    if "b" in mode:
        for name, value in (("an encoding", encoding), ("an errors", errors), ("a newline", newline)):
            if value is not None:
                raise ValueError(f"binary mode doesn't take {name} argument")
    if sum(c in mode for c in "rwxa") == 0:
        raise ValueError("Must have exactly one of create/read/write/append mode and at most one plus")
    if set(mode) & set("xa+"):
        raise ValueError(f"spool.open: mode {mode!r} is not supported: an object is read, or written whole; "
                         f"use 'r' or 'w' (text), 'rb' or 'wb' (binary)")
    if newline not in (None, "", "\n", "\r", "\r\n"):
        raise ValueError(f"illegal newline value: {newline!r}")
    return "w" in mode, "b" not in mode


@overload
def open(url: PathLike, mode: ReadTextMode, buffer_size: int = ..., encoding: Optional[str] = ...,  # noqa: A001
         errors: Optional[str] = ..., newline: Optional[str] = ...) -> io.TextIOWrapper: ...
@overload
def open(url: PathLike, mode: WriteTextMode, buffer_size: int = ..., encoding: Optional[str] = ...,  # noqa: A001
         errors: Optional[str] = ..., newline: Optional[str] = ...) -> ObjectTextWriter: ...
@overload
def open(url: PathLike, mode: ReadBinaryMode = ..., buffer_size: int = ..., encoding: None = ...,  # noqa: A001
         errors: None = ..., newline: None = ...) -> io.BufferedReader: ...
@overload
def open(url: PathLike, mode: WriteBinaryMode, buffer_size: int = ..., encoding: None = ...,  # noqa: A001
         errors: None = ..., newline: None = ...) -> ObjectWriter: ...
@overload
def open(url: PathLike, mode: str, buffer_size: int = ..., encoding: Optional[str] = ...,  # noqa: A001
         errors: Optional[str] = ..., newline: Optional[str] = ...) -> IO[Any]: ...


def open(url: PathLike, mode: str = "rb", buffer_size: int = DEFAULT_BUFFER_SIZE,  # noqa: A001
         encoding: Optional[str] = None, errors: Optional[str] = None, newline: Optional[str] = None) -> IO[Any]:
    """Opens an object: ``"r"``/``"w"`` (or ``"rt"``/``"wt"``) for text,
    ``"rb"``/``"wb"`` for bytes, as the built-in :func:`open` does.

    ``url`` is anything spool takes: ``s3://bucket/key``, ``gs://bucket/key``,
    ``file:///path`` or a local path. The default mode is ``"rb"``, as for
    ``fsspec.open`` (a URL usually holds bytes). Text modes return an
    :class:`io.TextIOWrapper` with ``encoding`` (default UTF-8, not the
    locale's: objects move between machines; ``"locale"`` asks for it),
    ``errors`` and ``newline`` as :func:`open` takes them. A writer commits
    the object on ``close()`` and publishes nothing when its ``with`` block
    ends by an exception. Modes ``"a"``, ``"x"`` and ``"+"`` are a
    ``ValueError``: an object cannot be appended to or updated in place.
    """
    url = os.fspath(url)
    writing, text = _check_mode(mode, encoding, errors, newline)
    if encoding is None:
        encoding = "utf-8"
    elif text and encoding != "locale":
        codecs.lookup(encoding)  # LookupError before the object is opened
    if writing:
        writer = ObjectWriter(_RawObjectWriter(url), buffer_size=buffer_size)
        if not text:
            return writer
        wrapper: io.TextIOWrapper = ObjectTextWriter(writer, encoding=encoding, errors=errors, newline=newline)
    else:
        reader = io.BufferedReader(_RawObjectReader(url), buffer_size=buffer_size)
        if not text:
            return reader
        try:
            wrapper = io.TextIOWrapper(reader, encoding=encoding, errors=errors, newline=newline)
        except BaseException:
            reader.close()
            raise
    wrapper.mode = mode  # type: ignore[misc]  (as the built-in open() sets it)
    return wrapper


def stat(url: PathLike) -> ObjectInfo:
    """The object's size, time, version and CRC32C; FileNotFoundError if missing."""
    return _info(_spool.stat(os.fspath(url)))


def ls(url: PathLike, recursive: bool = False) -> list[ObjectInfo]:
    """What ``spool ls`` lists for ``url``, by the same rule, in key order.

    ``"s3://b/dir/"`` lists the folder's objects and subfolders (with
    ``recursive``, every object below it), and so does ``"s3://b/dir"`` when
    no object is named ``dir``; a name that is an object lists that object,
    and a name that is both an object and a folder (keys ``t1`` and
    ``t1/x``) lists the object and then the folder entry ``t1/``.
    Subfolders are entries whose ``size`` is None (``is_folder``).
    """
    return [_info(entry) for entry in _spool.ls(os.fspath(url), recursive)]


def rm(url: PathLike) -> None:
    """Deletes one object; FileNotFoundError if it does not exist."""
    _spool.rm(os.fspath(url))


def copy(src: PathLike, dst: PathLike, *, fsync: bool = False) -> ObjectInfo:
    """Copies one object between any two locations, the fastest way the two ends
    allow (server-side within a store, streamed between stores); returns the copy's info.

    A ``dst`` that is a folder (it ends with ``/``, or is an existing local
    directory) receives the object under its own base name, as
    ``spool cp`` and :func:`shutil.copy` do: ``copy("s3://b/run/model.pt",
    "/scratch/")`` writes ``/scratch/model.pt``.

    A local ``dst`` appears only once complete and checked; with
    ``fsync=True`` it is also on disk (the file and its folder fsync'd) when
    this returns, as ``spool cp --fsync`` does.
    """
    return _info(_spool.copy(os.fspath(src), os.fspath(dst), fsync))


__all__ = ["ObjectInfo", "ObjectTextWriter", "ObjectWriter", "open", "stat", "ls", "rm", "copy"]
