"""spool's metrics: what requests, loaders and checkpoint saves did.

Every open :class:`spool.DataLoader` and :class:`spool.CheckpointManager`
of the process reports its counters (docs/metrics.md lists each metric).
Read them as Prometheus text with :func:`text`, serve them for a Prometheus
scrape with :func:`serve`, or take one object's figures as dicts with
``DataLoader.counters()``/``requests()`` and ``CheckpointManager.stats()``.

>>> with spool.metrics.serve(port=9464):   # or SPOOL_METRICS_PORT
...     train()

Fork: a server belongs to the process that started it; in a forked child
(torch DataLoader workers) ``close()`` only forgets it, and the parent keeps
serving.
"""

from __future__ import annotations

import os
from typing import Optional, Union

from spool import _spool

PathLike = Union[str, "os.PathLike[str]"]


def text() -> str:
    """Every metric of this process in the Prometheus text format (version 0.0.4)."""
    return _spool._metrics_text()


class MetricsServer:
    """A running exporter: ``/metrics`` on :attr:`port` and/or a textfile.

    Use it as a context manager, or call :meth:`close`; the textfile gets its
    last values when it closes.
    """

    def __init__(self, native: "_spool._MetricsServer") -> None:
        self._native = native

    @property
    def port(self) -> int:
        """The port served (the one chosen when 0 was asked); 0 when not serving."""
        return self._native.port

    def close(self) -> None:
        """Stops serving and writes the textfile a last time. Idempotent."""
        self._native.close()

    def __enter__(self) -> "MetricsServer":
        return self

    def __exit__(self, exc_type, exc, traceback) -> None:
        self.close()


def serve(port: Optional[int] = None, *, address: Optional[str] = None, file: Optional[PathLike] = None,
          interval: float = 15.0) -> MetricsServer:
    """Serves the metrics on ``http://address:port/metrics`` and/or writes them to ``file``
    every ``interval`` seconds (for the node exporter's textfile collector).

    Unset arguments come from SPOOL_METRICS_PORT, SPOOL_METRICS_ADDRESS (default
    0.0.0.0) and SPOOL_METRICS_FILE. Port 0 picks a free port (see :attr:`MetricsServer.port`).
    Raises ValueError when neither a port nor a file is given, spool.UnavailableError
    when the port cannot be bound.
    """
    if port is None and os.environ.get("SPOOL_METRICS_PORT"):
        try:
            port = int(os.environ["SPOOL_METRICS_PORT"])
        except ValueError:
            raise ValueError(f"SPOOL_METRICS_PORT={os.environ['SPOOL_METRICS_PORT']!r} is not a port number") from None
    if address is None:
        address = os.environ.get("SPOOL_METRICS_ADDRESS") or "0.0.0.0"
    if file is None:
        file = os.environ.get("SPOOL_METRICS_FILE") or None
    if port is None and file is None:
        raise ValueError("spool.metrics.serve needs a port or a file (or SPOOL_METRICS_PORT / SPOOL_METRICS_FILE)")
    if port is not None and not 0 <= port <= 65535:
        raise ValueError(f"metrics port {port} is not in 0..65535")
    return MetricsServer(_spool._MetricsServer(port, address, os.fspath(file) if file else "", interval))


__all__ = ["MetricsServer", "serve", "text"]
