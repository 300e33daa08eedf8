"""Streaming TFRecord datasets into a training loop, and tf.train.Example.

``spool.DataLoader`` is the C++ loader: shards from any store, split over the
workers of a distributed job, shuffled, batched and prefetched within a
memory budget, resumable mid-epoch from a small state string. With a
feature spec, each batch is a dict of NumPy arrays decoded in C++ (no
Python object per value); without one, a list of the records' bytes.

>>> features = {"pixels": spool.Feature("float32", (64,)), "label": "int64"}
>>> with spool.DataLoader("s3://bucket/digits/train.manifest.json", batch_size=64,
...                       seed=1, features=features) as loader:
...     for batch in loader:
...         train(batch["pixels"], batch["label"])   # (64, 64) float32, (64,) int64
...         if time_to_checkpoint:
...             save(loader.state())
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from typing import Any, Dict, Iterator, List, Mapping, Optional, Sequence, Tuple, Union

import numpy as np

from spool import _spool

PathLike = Union[str, "os.PathLike[str]"]
Batch = Union[Dict[str, Any], List[bytes], List[memoryview], List[Any]]


@dataclass(frozen=True)
class Feature:
    """How one feature of a ``tf.train.Example`` is decoded.

    ``dtype``: ``"float32"`` or ``"float64"`` (from a float_list),
    ``"int64"``, ``"int32"`` or ``"uint8"`` (from an int64_list; a value that
    does not fit is an error), or ``"bytes"`` (a bytes_list). NumPy dtypes are
    accepted too. ``shape``: the fixed shape of one example's values (``()``
    for one value). ``default``: used when an example lacks the feature;
    without it a missing feature is a :class:`ValueError`.
    """

    dtype: Union[str, Any]
    shape: Tuple[int, ...] = ()
    default: Union[int, float, bytes, None] = None


#: A feature spec: name -> Feature, or a dtype, or (dtype, shape).
FeatureSpec = Mapping[str, Union[Feature, str, Any, Tuple[Any, Sequence[int]]]]


def _dtype_name(dtype: Any) -> str:
    if dtype in ("bytes", bytes):
        return "bytes"
    try:
        return np.dtype(dtype).name
    except TypeError:
        raise ValueError(f"feature dtype {dtype!r} is not a NumPy dtype or 'bytes'") from None


def _spec_list(features: Optional[FeatureSpec]) -> list:
    """The spec as the extension takes it: [(name, dtype, shape, default)]."""
    if not features:
        return []
    spec = []
    for name, value in features.items():
        if isinstance(value, Feature):
            feature = value
        elif isinstance(value, tuple):
            feature = Feature(*value)
        else:
            feature = Feature(value)
        spec.append((name, _dtype_name(feature.dtype), [int(d) for d in feature.shape], feature.default))
    return spec


def parse_example(record: bytes, features: FeatureSpec) -> Dict[str, Any]:
    """Decodes one serialized ``tf.train.Example`` by ``features``: a dict of
    NumPy arrays of each feature's shape (bytes features: ``bytes``).
    ``DataLossError`` if ``record`` is not an Example, ``ValueError`` if it
    does not match the spec."""
    batch = _spool._decode_examples([bytes(record)], _spec_list(features))
    return {name: column[0] for name, column in batch.items()}


def parse_examples(records: Sequence[bytes], features: FeatureSpec) -> Dict[str, Any]:
    """Decodes a batch of serialized Examples: arrays with a leading batch dimension."""
    return _spool._decode_examples([bytes(r) for r in records], _spec_list(features))


def encode_example(features: Mapping[str, Any]) -> bytes:
    """Serializes a ``tf.train.Example`` (deterministic bytes) from a dict:
    integers and integer arrays become int64_list, floats float_list, and
    ``bytes``/``str`` (lists of them, or NumPy ``bytes_``/``str_`` arrays,
    empty ones included) bytes_list. An empty list with no dtype (``[]``) is
    an empty float_list.

    >>> spool.encode_example({"label": 3, "pixels": np.zeros(64, np.float32), "id": b"a17"})
    """
    entries = []
    for name, value in features.items():
        if isinstance(value, (bytes, str)):
            value = [value]
        if isinstance(value, (list, tuple)) and value and all(isinstance(v, (bytes, str)) for v in value):
            entries.append((name, "bytes", [v.encode() if isinstance(v, str) else v for v in value]))
            continue
        array = np.asarray(value).reshape(-1)
        if array.dtype.kind in "SU":
            # NumPy bytes or str arrays, empty ones included: a bytes_list
            # (an empty list without a dtype has no kind, and stays a float_list).
            entries.append((name, "bytes", [v.encode() if isinstance(v, str) else bytes(v) for v in array.tolist()]))
        elif array.dtype.kind in "iub":
            entries.append((name, "int64", array.astype(np.int64)))
        elif array.dtype.kind == "f":
            entries.append((name, "float", array.astype(np.float32)))
        elif array.size == 0:
            entries.append((name, "float", np.zeros(0, np.float32)))
        else:
            raise ValueError(f"feature {name!r}: {array.dtype} values cannot go in a tf.train.Example "
                             "(integers, floats, bytes or str)")
    return _spool._encode_example(entries)


def _require_non_negative(**options: int) -> None:
    """ValueError naming the first option given a negative number (the native
    loader takes these as unsigned and would answer with a signature dump)."""
    for name, value in options.items():
        if value < 0:
            raise ValueError(f"{name}={value}: must be 0 or more")


class DataLoader:
    """Streams a TFRecord dataset as batches (see the module's docstring).

    ``inputs``: a dataset manifest (``.../train.manifest.json``), shard URLs
    or globs (``"gs://b/train-*.tfrecord.gz"``; ``**`` crosses folders), one
    or a list. Every option that shapes the sequence (inputs, ``seed``,
    ``shuffle``, ``shuffle_buffer``, ``batch_size``, ``drop_remainder``,
    worker identity) must be the same when resuming.

    Workers: ``rank`` / ``world_size`` default to the launcher's environment
    (torchrun's RANK/WORLD_SIZE, Open MPI, TF_CONFIG, Indexed Jobs); each
    rank may run ``local_workers`` loaders, one per ``local_worker``. Every
    record of an epoch goes to exactly one worker.

    Elastic mode: ``partitions=C`` with ``global_batch_size`` (a multiple of
    C; ``batch_size`` is then not used) fixes the order by C partitions
    instead of the job's shape: the job's global batch at each step is the
    same for every world size (x ``local_workers``) that divides C, and a
    :meth:`state` resumes on any such world size (docs/loader.md, "Elastic
    restarts"). Each batch is this worker's share of the step's global batch.

    Local shard cache (docs/loader.md, "Shard cache"): ``cache_dir`` (default
    ``SPOOL_CACHE_DIR``; unset: no cache) keeps whole shards on local disk,
    shared by every loader of the machine, within ``cache_limit`` bytes for
    the machine (default ``SPOOL_CACHE_LIMIT``; 0: the disk's);
    ``cache_policy`` ``"next_use"`` (evict the shard needed last) or
    ``"lru"``. It changes speed, never the records.

    Records (without ``features``): ``record_type="bytes"`` (the default)
    gives each record as its own ``bytes`` (a copy); ``"memoryview"`` and
    ``"numpy"`` (a read-only 1-D ``uint8`` array) give views of the loader's
    pooled read buffers, without a copy. A view stays valid as long as it is
    referenced (after :meth:`close` too); the buffer goes back to the pool
    once no record of it is referenced, so keep only the records you need
    (``bytes(view)`` copies one out). Views cannot be pickled: in torch
    DataLoader workers use ``"bytes"`` or ``"numpy"``.
    ``fetch_chunk`` is what one fetch task cuts at a time (1 MiB); the
    pool's blocks are a quarter of it (64 KiB to 1 MiB), so with a larger
    one records of 100 KB and more span two blocks less often.

    ``epochs=0`` runs forever. ``bad_shards="skip"`` cuts a damaged shard
    short (counted in :meth:`counters`) instead of failing the epoch.
    Iterating yields batches; each batch's epoch is :attr:`epoch` after it.
    Closing (or leaving the ``with`` block) stops the prefetch and waits for
    it. One thread at a time; opened before ``fork()``, a loader cannot be
    used in the child (open one per DataLoader worker, as
    :class:`spool.torch.StreamingDataset` does).
    """

    def __init__(self, inputs: Union[PathLike, Sequence[PathLike]], *, batch_size: int = 32, seed: int = 0,
                 features: Optional[FeatureSpec] = None, shuffle: bool = True, shuffle_buffer: int = 1024,
                 epochs: int = 1, drop_remainder: bool = False, rank: Optional[int] = None,
                 world_size: Optional[int] = None, local_workers: int = 1, local_worker: int = 0,
                 interleave: int = 4, memory_budget: int = 256 << 20, read_ahead: int = 8 << 20,
                 prefetch_batches: int = 4, bad_shards: str = "fail", count_records: bool = False,
                 partitions: int = 0, global_batch_size: int = 0, cache_dir: Optional[PathLike] = None,
                 cache_limit: int = 0, cache_policy: str = "next_use",
                 record_type: str = "bytes", fetch_chunk: int = 1 << 20, _record_pool: Any = None,
                 _start: Tuple[int, int] = (0, 0)) -> None:
        if isinstance(inputs, (str, os.PathLike)):
            inputs = [inputs]
        self.batch_size = batch_size
        self.seed = seed
        self.epoch: Optional[int] = None  # of the last batch
        _require_non_negative(batch_size=batch_size, shuffle_buffer=shuffle_buffer, epochs=epochs,
                              memory_budget=memory_budget, read_ahead=read_ahead, partitions=partitions,
                              global_batch_size=global_batch_size, cache_limit=cache_limit, fetch_chunk=fetch_chunk)
        # _start: (epoch, position) where the loader starts (DataLoaderOptions::
        # start_epoch, start_position), without starting epoch 0 first.
        self._native = _spool._DataLoader(
            [os.fspath(i) for i in inputs], batch_size, seed, shuffle, shuffle_buffer, epochs, drop_remainder,
            rank, world_size, local_workers, local_worker, interleave, memory_budget, read_ahead,
            prefetch_batches, bad_shards, count_records, _spec_list(features), partitions, global_batch_size,
            os.fspath(cache_dir) if cache_dir is not None else "", cache_limit, cache_policy,
            record_type, fetch_chunk, _record_pool, *_start)

    def __iter__(self) -> Iterator[Batch]:
        return self

    def __next__(self) -> Batch:
        item = self._native.next()
        if item is None:
            raise StopIteration
        self.epoch, batch = item
        return batch

    def state(self) -> str:
        """Where this loader is, as one line of text for a checkpoint
        (``"spool-loader/1 seed=7 epoch=2 position=1536 worker=3 workers=8
        fingerprint=4f0c2a9e81d3b657"``)."""
        return self._native.state()

    def resume(self, state: str) -> None:
        """Continues from a :meth:`state` of a loader with the same inputs,
        options and worker identity (in elastic mode, any worker of any world
        size dividing the partitions): the batches that follow are exactly
        those an uninterrupted run delivers after that point. ``ValueError``
        for a state of other inputs (its fingerprint), another seed or worker."""
        self._native.resume(state)

    @property
    def fingerprint(self) -> str:
        """The identity of the inputs that :meth:`state` carries (16 hex
        digits): a manifest's content, or the shards' URLs and sizes."""
        return self._native.fingerprint()

    @property
    def worker(self) -> Dict[str, Any]:
        """``rank``, ``world_size``, ``source`` (which launcher said so),
        ``worker`` and ``workers`` (counting local workers)."""
        return self._native.worker()

    def epoch_records(self, epoch: int, worker: Optional[int] = None) -> Optional[int]:
        """Records ``worker`` (default: this one) reads in ``epoch``; None when
        some shard's count is unknown (no manifest, no index, ``count_records`` off)."""
        if worker is None:
            worker = self.worker["worker"]
        return self._native.epoch_records(epoch, worker)

    def counters(self) -> Dict[str, Any]:
        """Totals since open: ``records``, ``bytes``, ``records_per_second``,
        ``wait_seconds`` (time spent waiting for data: the input-bound
        figure), ``next_seconds`` (a histogram of each batch's wait),
        ``retries``, ``throttles``, ``skipped_shards``, buffer use against
        ``memory_budget``, and the shard cache's ``cache_hits``,
        ``cache_misses``, ``cache_fetched_bytes``, ``cache_evicted_bytes``,
        ``cache_fetch_ahead``."""
        return self._native.counters()

    def record_pool(self) -> Dict[str, int]:
        """The pool the records live in: ``blocks_made`` since open (flat in
        steady state), ``bytes_live`` (blocks referenced now, by the loader or
        by records you hold) and ``bytes_idle`` (kept for reuse)."""
        return self._native.record_pool()

    def _shared_record_pool(self) -> Any:
        """This loader's record pool, for the loader opened after it
        (``_record_pool=``), which then reuses its blocks instead of mapping
        new ones: one loader at a time, in the process that opened this one
        (None in a forked child)."""
        return self._native.shared_record_pool()

    def requests(self) -> Dict[str, Any]:
        """This loader's requests by operation (``get``, ``ranged_get``, ``head``,
        ``list``, ...): counts, bytes, errors, retries, throttles, stalls and
        latency histograms (docs/metrics.md)."""
        return self._native.requests()

    def close(self) -> None:
        """Stops prefetching and waits for the loader's work. Idempotent."""
        self._native.close()

    def __enter__(self) -> "DataLoader":
        return self

    def __exit__(self, exc_type, exc, traceback) -> None:
        self.close()


__all__ = ["DataLoader", "Feature", "FeatureSpec", "encode_example", "parse_example", "parse_examples"]
