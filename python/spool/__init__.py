"""spool: training data and checkpoints between ML jobs and object storage.

URLs are what the spool command takes: ``s3://bucket/key``,
``gs://bucket/key``, ``file:///path`` or a plain local path. Credentials and
endpoints come from the usual environment (AWS_*, GOOGLE_APPLICATION_CREDENTIALS,
STORAGE_EMULATOR_HOST), as for the spool command.

``spool.torch`` (PyTorch integration) is imported on its own, so that
``import spool`` does not import torch.
"""

from __future__ import annotations

from spool import _spool
from spool.checkpoints import CheckpointManager, CheckpointManifest, SaveHandle
from spool.errors import *  # noqa: F401,F403  (the exception classes)
from spool.errors import Error
from spool.objects import ObjectInfo, copy, ls, open, rm, stat  # noqa: A004

__version__: str = _spool.__version__

__all__ = [
    "CheckpointManager", "CheckpointManifest", "Error", "ObjectInfo", "SaveHandle",
    "copy", "ls", "open", "rm", "stat",
] + [name for name in dir() if name.endswith("Error") and name != "Error"]
