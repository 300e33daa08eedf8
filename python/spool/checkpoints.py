"""Checkpoints saved to and restored from any store, atomically.

A step's files are uploaded and verified first; its manifest is written last,
create-only, and a step without a manifest does not exist. See
docs/checkpoints.md for the protocol, retention and several ranks.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from typing import Any, Dict, Mapping, Optional, Union

from spool import _spool

PathLike = Union[str, "os.PathLike[str]"]
#: What to save: a local folder, or ``{path in the checkpoint: bytes | local file}``.
Source = Union[PathLike, Mapping[str, Union[bytes, bytearray, memoryview, PathLike]]]


@dataclass(frozen=True)
class CheckpointFile:
    path: str
    size: int
    crc32c: int
    #: Where the bytes are stored, relative to the same folder as ``path``:
    #: under the folder of the save attempt that wrote them (``save-<id>/...``).
    stored_path: str = ""


@dataclass(frozen=True)
class RankPart:
    """One rank's share of a checkpoint saved by several ranks."""

    rank: int
    files: list[CheckpointFile]
    metadata: dict[str, str]


@dataclass(frozen=True)
class CheckpointManifest:
    """What a committed (or restored) checkpoint step holds."""

    step: int
    wall_time: float  # seconds since the epoch
    files: list[CheckpointFile]
    metadata: dict[str, str]
    world_size: int = 1
    ranks: list[RankPart] = field(default_factory=list)

    @property
    def total_bytes(self) -> int:
        return sum(f.size for f in self.files)


def _manifest(raw: dict) -> CheckpointManifest:
    files = [CheckpointFile(**f) for f in raw["files"]]
    ranks = [RankPart(r["rank"], [CheckpointFile(**f) for f in r["files"]], dict(r["metadata"]))
             for r in raw["ranks"]]
    return CheckpointManifest(raw["step"], raw["wall_time"], files, dict(raw["metadata"]), raw["world_size"], ranks)


def _source(source: Source, follow_symlinks: bool):
    if isinstance(source, (str, os.PathLike)):
        return _spool._checkpoint_source(os.fspath(source), {}, {}, follow_symlinks)
    files, buffers = {}, {}
    for path, value in source.items():
        if isinstance(value, (bytes, bytearray, memoryview)):
            buffers[path] = value  # borrowed, not copied: see python/src/checkpoints.cc
        elif isinstance(value, (str, os.PathLike)):
            files[path] = os.fspath(value)
        else:
            raise TypeError(f"checkpoint entry {path!r}: expected bytes or a local file path, "
                            f"got {type(value).__name__}")
    return _spool._checkpoint_source(None, files, buffers, follow_symlinks)


class SaveHandle:
    """A background save started by :meth:`CheckpointManager.save_async`.

    Saves run one at a time: starting the next one first waits for this one,
    and its outcome stays here for :meth:`wait`.
    """

    def __init__(self, manager: "CheckpointManager", step: int, started: bool) -> None:
        self._manager = manager
        self.step = step
        #: False when the save was skipped because another was in flight.
        self.started = started
        self._finished = not started
        self._manifest: Optional[CheckpointManifest] = None
        self._error: Optional[BaseException] = None

    def done(self) -> bool:
        """Whether the upload finished (successfully or not)."""
        return self._finished or not self._manager._native.save_in_flight()

    def wait(self) -> Optional[CheckpointManifest]:
        """Waits for the save; returns its manifest (None if it was skipped), or raises its error."""
        if not self._finished:
            self._manager._collect()
        if self._error is not None:
            raise self._error
        return self._manifest

    def _finish(self) -> None:
        try:
            self._manifest = _manifest(self._manager._native.wait())
        except BaseException as error:  # noqa: BLE001 (kept for wait())
            self._error = error
        self._finished = True


class CheckpointManager:
    """Saves a training job's checkpoints under ``root`` and restores the latest.

    >>> with spool.CheckpointManager("s3://bucket/run-7/ckpt", keep_last=3, save_every_steps=500) as ckpt:
    ...     start = 0
    ...     if ckpt.latest() is not None:
    ...         start = ckpt.restore("/scratch/ckpt").step   # the steps done before the restart
    ...     for step in range(start + 1, steps + 1):         # step: the steps done after this one
    ...         train_step()
    ...         if ckpt.should_save(step):
    ...             ckpt.save_async(step, {"model.pt": model_bytes}, metadata={"loader": state})

    Several ranks: give every rank's manager its ``rank`` and ``world_size``;
    each saves its own part and rank 0 commits the step once all parts are
    stored. ``restore`` gives each rank its own files and metadata.

    Options: ``keep_last`` keeps the newest N committed steps (None or 0:
    all); ``save_every_steps`` / ``save_every_seconds`` drive
    :meth:`should_save`; ``attempt`` and ``part_timeout_seconds`` are for
    several ranks (docs/checkpoints.md); ``copy_on_capture`` makes
    :meth:`save_async` copy source files instead of hard-linking them;
    ``clean_stale_parts=False`` keeps this rank's parts of uncommitted steps
    that opening would otherwise delete (for a process that saves one step
    of a job whose other saves may still be in flight);
    ``rank_prefix_fanout=N`` (N > 1, the same on every rank) stores the
    ranks' files under N key prefixes, so that many ranks saving at once
    share N prefixes' request rates instead of one (docs/checkpoints.md,
    "Several ranks"); restoring needs no option.

    Leaving the ``with`` block normally waits for a background save; leaving
    it by an exception (or :meth:`close`) cancels it, and the step stays
    uncommitted: a crash mid-step must not publish a checkpoint of a state
    the loop never finished. Fork: a manager belongs to the process that
    opened it; in a child forked afterwards every call raises
    :class:`spool.FailedPreconditionError` (open another one there).
    """

    def __init__(self, root: PathLike, *, keep_last: Optional[int] = None, save_every_steps: int = 0,
                 save_every_seconds: float = 0, rank: int = 0, world_size: int = 1, attempt: str = "",
                 part_timeout_seconds: float = 600, copy_on_capture: bool = False,
                 clean_stale_parts: bool = True, rank_prefix_fanout: int = 0) -> None:
        self.root = os.fspath(root)
        self._native = _spool._CheckpointManager(self.root, rank, world_size, keep_last or 0, save_every_steps,
                                                 save_every_seconds, attempt, part_timeout_seconds,
                                                 copy_on_capture, clean_stale_parts, rank_prefix_fanout)
        self._pending: Optional[SaveHandle] = None  # the last save_async, until waited for

    def should_save(self, step: int) -> bool:
        """Whether ``step`` is due by ``save_every_steps`` (a multiple of it, or
        that many past the last save) or ``save_every_seconds``. ``step``
        counts the training steps done, so step 0 (nothing trained yet) is
        never due, nor is the step this manager saved last."""
        return self._native.should_save(step)

    def save(self, step: int, source: Source, metadata: Optional[Mapping[str, str]] = None, *,
             follow_symlinks: bool = False) -> CheckpointManifest:
        """Uploads ``source`` as ``step`` and commits it (FileExistsError if committed already).

        A folder's symbolic links to files inside it are saved as those files; any
        other link is a ValueError naming it, unless ``follow_symlinks`` saves what
        every link points to, wherever it is. A missing folder is FileNotFoundError.
        Buffers are uploaded in place, not copied: leave them unchanged until this
        returns (a bytearray cannot be resized meanwhile).
        """
        return _manifest(self._native.save(step, _source(source, follow_symlinks), dict(metadata or {})))

    def save_async(self, step: int, source: Source, metadata: Optional[Mapping[str, str]] = None, *,
                   follow_symlinks: bool = False) -> SaveHandle:
        """Captures ``source`` (local files by hard link, buffers by copy) and uploads it
        in the background; the training thread is not blocked by the upload. A save
        still in flight is waited for first, and if it failed its error is raised
        here (the new save is then not started). Symbolic links as for :meth:`save`."""
        captured = _source(source, follow_symlinks)
        self._collect(raise_error=True)
        started = self._native.save_async(step, captured, dict(metadata or {}))
        handle = SaveHandle(self, step, started)
        if started:
            self._pending = handle
        return handle

    def wait(self) -> Optional[CheckpointManifest]:
        """Waits for the last background save; its manifest (None when there was
        none to wait for), or its error."""
        handle = self._pending
        if handle is None:
            return None
        return handle.wait()

    def _collect(self, raise_error: bool = False) -> None:
        """Waits for the pending background save and stores its outcome in its handle."""
        handle, self._pending = self._pending, None
        if handle is None:
            return
        handle._finish()
        if raise_error and handle._error is not None:
            raise handle._error

    def latest(self) -> Optional[int]:
        """The newest committed step, or None."""
        return self._native.latest()

    def list(self) -> list[CheckpointManifest]:
        """Every committed checkpoint, oldest first."""
        return [_manifest(m) for m in self._native.list()]

    def read_manifest(self, step: int) -> CheckpointManifest:
        """The manifest of committed ``step`` (FileNotFoundError when it is not committed)."""
        return _manifest(self._native.read_manifest(step))

    def restore(self, folder: PathLike, step: Optional[int] = None, rank: Optional[int] = None, *,
                replace: bool = False) -> CheckpointManifest:
        """Downloads ``step`` (default: the latest) into ``folder``, put in place only when
        every file arrived intact. ``rank`` picks another rank's part of a multi-rank step.

        The folder is replaced whole, so one that exists must be empty or an earlier restore
        of this root (which leaves a ``.spool-restore`` marker in it); any other folder raises
        :class:`spool.FailedPreconditionError` before anything is downloaded, unless
        ``replace=True`` asks to delete what it holds."""
        return _manifest(self._native.restore(os.fspath(folder), step, rank, replace))

    def stats(self) -> Dict[str, Any]:
        """What this manager did: ``saves``, ``save_failures``, ``uploaded_bytes``,
        ``restores``, and histograms of ``blocked_seconds`` (how long saves held
        the training loop), ``save_seconds``, ``upload_seconds``, ``commit_seconds``,
        ``restore_seconds`` and ``verify_seconds``; ``requests`` by operation."""
        return self._native.stats()

    def close(self) -> None:
        """Cancels a background save still in flight (it is not committed) and waits for it."""
        self._native.close()

    def __enter__(self) -> "CheckpointManager":
        return self

    def __exit__(self, exc_type, exc, traceback) -> None:
        try:
            if exc_type is None:
                self.wait()
        finally:
            self.close()


__all__ = ["CheckpointFile", "CheckpointManager", "CheckpointManifest", "RankPart", "SaveHandle"]
