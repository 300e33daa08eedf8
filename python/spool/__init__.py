"""spool: training data and checkpoints between ML jobs and object storage.

URLs are what the spool command takes: ``s3://bucket/key``,
``gs://bucket/key``, ``file:///path`` or a plain local path. Credentials and
endpoints come from the usual environment (AWS_*, GOOGLE_APPLICATION_CREDENTIALS,
STORAGE_EMULATOR_HOST), as for the spool command.

``spool.torch`` (PyTorch integration) is imported on its own, so that
``import spool`` does not import torch. ``spool.metrics`` serves the
process's metrics for Prometheus.
"""

from __future__ import annotations

import os as _os
import sys as _sys
import types as _types


def _load_extension() -> _types.ModuleType:
    """Imports spool._spool with its own symbols bound first (RTLD_DEEPBIND).

    TensorFlow loads its libraries RTLD_GLOBAL, and they export a protobuf
    runtime of their own (a different version, with TensorFlow's messages
    registered). Loaded after it without DEEPBIND, the extension and its
    protobuf would bind to that runtime and abort on the clash of message
    names; with it they keep their own, whichever is imported first."""
    flags = _sys.getdlopenflags()
    _sys.setdlopenflags(_os.RTLD_NOW | _os.RTLD_LOCAL | getattr(_os, "RTLD_DEEPBIND", 0))
    try:
        from spool import _spool as extension
    finally:
        _sys.setdlopenflags(flags)
    return extension


_spool = _load_extension()

from spool import metrics  # noqa: E402  (after the extension, which they import)
from spool.checkpoints import CheckpointFile, CheckpointManager, CheckpointManifest, SaveHandle
from spool.errors import *  # noqa: F401,F403  (the exception classes)
from spool.errors import Error
from spool.objects import ObjectInfo, ObjectTextWriter, ObjectWriter, copy, ls, open, rm, stat  # noqa: A004
from spool.records import DatasetManifest, RecordFile, RecordReader, RecordWriter, Shard, ShardedWriter
from spool.loader import DataLoader, Feature, FeatureSpec, encode_example, parse_example, parse_examples

__version__: str = _spool.__version__

# Every public name imported above (so a new import line is all a new module needs).
__all__ = sorted(name for name, value in globals().items()
                 if not name.startswith("_") and name != "annotations" and not isinstance(value, _types.ModuleType))
