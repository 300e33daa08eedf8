"""Lightning: a CheckpointIO plugin that saves and restores checkpoints
through spool, on ``s3://``, ``gs://``, ``file://`` URLs and local paths.

>>> import lightning.pytorch as pl
>>> import spool.lightning
>>> trainer = pl.Trainer(max_steps=1000, plugins=[spool.lightning.CheckpointIO()])
>>> trainer.fit(model)
>>> trainer.save_checkpoint("s3://bucket/run-7/last.ckpt")
>>> trainer.fit(model, ckpt_path="s3://bucket/run-7/last.ckpt")   # resumes

A checkpoint is one object, written with :func:`spool.open` in ``"wb"``
mode: nothing is visible under its URL until the whole object is uploaded
(multipart or resumable for large ones, within spool's memory budget), a
failed or interrupted save publishes nothing and leaves the previous object
of that URL as it was, and a reader never sees half a checkpoint. Loading
reads the object with parallel ranged GETs.

Needs the ``lightning`` package (``lightning.pytorch``).
"""

from __future__ import annotations

import logging
import os
from typing import Any, Dict, Optional, Union

import torch
from lightning.fabric.plugins.io.checkpoint_io import CheckpointIO as _CheckpointIO

from spool import objects

log = logging.getLogger(__name__)

PathLike = Union[str, "os.PathLike[str]"]


class CheckpointIO(_CheckpointIO):
    """Saves with :func:`torch.save` into a spool object, loads with
    :func:`torch.load` from one, removes with :func:`spool.rm`.

    ``Trainer(plugins=[spool.lightning.CheckpointIO()])``; then
    ``trainer.save_checkpoint(url)`` and ``ckpt_path=url`` take spool URLs.
    ``ModelCheckpoint(dirpath=...)`` works with local folders; for a bucket,
    Lightning's callback lists and checks files through fsspec, which needs
    fsspec's own filesystem for that scheme (s3fs, gcsfs) besides this plugin.
    """

    def save_checkpoint(self, checkpoint: Dict[str, Any], path: PathLike,
                        storage_options: Optional[Any] = None) -> None:
        """Writes ``checkpoint`` to ``path``, atomically: the object appears whole or not at all."""
        if storage_options is not None:
            raise TypeError("spool.lightning.CheckpointIO takes no storage_options: spool reads its endpoints "
                            "and credentials from the environment")
        url = os.fspath(path)
        _make_local_parent(url)
        with objects.open(url, "wb") as stream:
            torch.save(checkpoint, stream)

    def load_checkpoint(self, path: PathLike, map_location: Optional[Any] = None,
                        weights_only: Optional[bool] = None) -> Dict[str, Any]:
        """Reads the checkpoint at ``path`` (FileNotFoundError when there is none)."""
        with objects.open(os.fspath(path), "rb") as stream:
            return torch.load(stream, map_location=map_location, weights_only=weights_only)

    def remove_checkpoint(self, path: PathLike) -> None:
        """Deletes the checkpoint at ``path``; one that is not there is no error."""
        try:
            objects.rm(os.fspath(path))
            log.debug("Removed checkpoint: %s", path)
        except FileNotFoundError:
            pass


def _make_local_parent(url: str) -> None:
    """Creates the folder of a local path, as Lightning's own CheckpointIO does."""
    if url.startswith("file://"):
        url = url[len("file://"):]
    elif "://" in url:
        return
    parent = os.path.dirname(os.path.abspath(url))
    os.makedirs(parent, exist_ok=True)


__all__ = ["CheckpointIO"]
