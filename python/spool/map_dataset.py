"""A map-style PyTorch dataset over TFRecord shards: ``len()`` and
``dataset[i]``, so torch's samplers (``RandomSampler``,
``DistributedSampler``, ...) choose the records.

>>> dataset = spool.torch.RecordMapDataset("s3://bucket/digits/train.manifest.json",
...                                        features=features)
>>> sampler = torch.utils.data.DistributedSampler(dataset, num_replicas=world_size, rank=rank)
>>> loader = torch.utils.data.DataLoader(dataset, batch_size=64, sampler=sampler, num_workers=2)

Records are numbered across the shards in the loader's order (a manifest's
order, else each input's shards in key order). Where each one starts comes
from the shard's index file (``<shard>.idx``, DALI's format, as
``write_index=True`` or ``spool records index`` write it); a shard without
one is read once when the dataset is made, and the index is kept in memory
(and written beside the shard with ``write_index=True``). DataLoader workers
inherit it: nothing is indexed twice.

A batch (torch's DataLoader calls :meth:`RecordMapDataset.__getitems__`
with a batch's indices) is read in a few ranged requests per shard: records
less than ``max_gap`` bytes apart are fetched together. Every record's CRCs
are checked. Shards must be uncompressed (compressed shards cannot be read
at random: stream them with :class:`spool.torch.StreamingDataset`).

Fork: the dataset opens its shards in the process that reads, on first use,
so forked DataLoader workers never share the parent's connections; under
``spawn`` it pickles without them.
"""

from __future__ import annotations

import operator
import os
from typing import Any, Callable, Dict, List, Optional, Sequence, Tuple, Union

import numpy as np
import torch
import torch.utils.data

from spool import _spool
from spool.loader import FeatureSpec, PathLike, parse_examples

Item = Union[bytes, Dict[str, Any]]


class RecordMapDataset(torch.utils.data.Dataset):
    """The records of TFRecord shards by number: ``dataset[i]``, ``len(dataset)``.

    ``inputs``: a dataset manifest, shard URLs or globs, one or a list (as
    :class:`spool.DataLoader` takes them); uncompressed shards only.

    Items are the records' ``bytes``; with ``features`` (see
    :class:`spool.Feature`), dicts of tensors decoded from each
    ``tf.train.Example`` (bytes features stay ``bytes``). ``transform``, when
    given, is applied to each item after that.

    ``write_index``: write the index of each shard that has none as
    ``<shard>.idx`` beside it, so the next run loads it instead of reading
    the shard (off by default: the dataset does not write into your bucket
    unasked). ``max_gap`` (bytes, default 1 MiB): records of a batch at most
    this far apart in a shard are read in one request, the gap dropped.
    ``max_span`` (default 16 MiB): the most one request reads.
    ``concurrency``: ranged requests in flight per batch.

    ``cache_dir`` (or ``SPOOL_CACHE_DIR``) and ``cache_limit`` (bytes for
    the machine, or ``SPOOL_CACHE_LIMIT``; 0: the disk): the loader's shard
    cache (see :class:`spool.DataLoader`). A shard is fetched whole into the
    folder at its first use, checked, and its records are then read from the
    local file, by every process of the machine and every later run. Access
    is random, so eviction is least recently used. A shard a reader has open
    stays readable after its file is evicted.
    """

    def __init__(self, inputs: Union[PathLike, Sequence[PathLike]], *, features: Optional[FeatureSpec] = None,
                 transform: Optional[Callable[[Item], Any]] = None, write_index: bool = False,
                 max_gap: int = 1 << 20, max_span: int = 16 << 20, concurrency: int = 16,
                 cache_dir: Optional[PathLike] = None, cache_limit: int = 0) -> None:
        super().__init__()
        if isinstance(inputs, (str, os.PathLike)):
            inputs = [inputs]
        if not inputs:
            raise ValueError("RecordMapDataset has no inputs; give shard URLs, a glob or a dataset manifest")
        if max_gap < 0 or max_span < 1 or concurrency < 1:
            raise ValueError(f"RecordMapDataset needs max_gap >= 0, max_span >= 1 and concurrency >= 1 "
                             f"(got {max_gap}, {max_span}, {concurrency})")
        if cache_limit < 0:
            raise ValueError(f"RecordMapDataset needs cache_limit >= 0 (got {cache_limit})")
        self.inputs: List[str] = [os.fspath(i) for i in inputs]
        self.features = features
        self.transform = transform
        self.max_gap = max_gap
        self.max_span = max_span
        self.concurrency = concurrency
        self.cache_dir = "" if cache_dir is None else os.fspath(cache_dir)
        self.cache_limit = cache_limit
        indexed: List[Tuple[str, str, np.ndarray]] = _spool._index_records(self.inputs, write_index)
        #: The shards' URLs; record numbers run through them in this order.
        self.shards: List[str] = [url for url, _, _ in indexed]
        # The versions indexed: a shard replaced since is refused when read.
        self._versions: List[str] = [version for _, version, _ in indexed]
        # Per shard, its record boundaries: record r is bytes [b[r], b[r+1]).
        self._bounds: List[np.ndarray] = [bounds for _, _, bounds in indexed]
        counts = np.array([len(b) - 1 for b in self._bounds], dtype=np.int64)
        # The number of the first record of each shard, and the total last.
        self._starts = np.concatenate([np.zeros(1, dtype=np.int64), np.cumsum(counts)])
        self._fetcher: Optional[Any] = None
        self._fetcher_pid = 0

    def __len__(self) -> int:
        return int(self._starts[-1])

    def __getitem__(self, index: int) -> Any:
        return self.__getitems__([index])[0]

    def __getitems__(self, indices: Sequence[int]) -> List[Any]:
        """The items at ``indices``, fetched together: torch's DataLoader
        calls this with each batch's indices (torch 2's batched fetch)."""
        if len(indices) == 0:
            return []
        shards, offsets, sizes = self._locate(indices)
        records = self._reader().read(shards.tolist(), offsets.tolist(), sizes.tolist())
        items: List[Any] = records
        if self.features is not None:
            columns = parse_examples(records, self.features)
            items = [{name: _tensor(column[i]) for name, column in columns.items()} for i in range(len(records))]
        if self.transform is not None:
            items = [self.transform(item) for item in items]
        return items

    def locate(self, index: int) -> Tuple[str, int]:
        """Which shard record ``index`` is in, and its number there."""
        shard = int(self._locate([index])[0][0])
        return self.shards[shard], self._number(index) - int(self._starts[shard])

    def requests(self) -> Dict[str, Dict[str, Any]]:
        """The requests this process made to read records, by operation (as
        :meth:`spool.DataLoader.requests`); the index loading at construction
        is not counted. Local files make none."""
        return self._reader().requests()

    def cache_counters(self) -> Dict[str, int]:
        """This process's shard cache counts: ``cache_hits`` and
        ``cache_misses`` (per shard opened), ``cache_fetched_bytes`` and
        ``cache_evicted_bytes``; zeros without a cache."""
        return self._reader().cache_counters()

    def _number(self, index: Any) -> int:
        try:
            number = operator.index(index)  # int, NumPy and 0-d tensor integers; not floats or strings
        except TypeError:
            raise TypeError(f"RecordMapDataset indices must be integers, not {type(index).__name__}") from None
        length = len(self)
        if number < 0:
            number += length
        if not 0 <= number < length:
            raise IndexError(f"record {index} is out of range: the dataset has {length} records")
        return number

    def _locate(self, indices: Sequence[Any]) -> Tuple[np.ndarray, np.ndarray, np.ndarray]:
        """(shard, byte offset, framed size) of each index."""
        numbers = np.array([self._number(i) for i in indices], dtype=np.int64)
        shards = np.searchsorted(self._starts, numbers, side="right") - 1
        offsets = np.empty(len(numbers), dtype=np.uint64)
        sizes = np.empty(len(numbers), dtype=np.uint64)
        for k, (shard, number) in enumerate(zip(shards, numbers)):
            bounds = self._bounds[shard]
            r = number - self._starts[shard]
            offsets[k] = bounds[r]
            sizes[k] = bounds[r + 1] - bounds[r]
        return shards, offsets, sizes

    def _reader(self) -> Any:
        """This process's reader: made on first use, again in a forked child."""
        if self._fetcher is None or self._fetcher_pid != os.getpid():
            sizes = [int(b[-1]) for b in self._bounds]
            # A parent's reader dropped in a child is left to the parent (never torn down here).
            self._fetcher = _spool._RecordFetcher(self.shards, self._versions, sizes, self.max_gap, self.max_span,
                                                  self.concurrency, self.cache_dir, self.cache_limit)
            self._fetcher_pid = os.getpid()
        return self._fetcher

    def __getstate__(self) -> Dict[str, Any]:
        state = self.__dict__.copy()
        state["_fetcher"] = None  # spawn: the worker opens its own
        return state


def _tensor(value: Any) -> Any:
    if isinstance(value, np.ndarray):
        return torch.from_numpy(value)
    if isinstance(value, np.generic):
        return torch.from_numpy(np.asarray(value))
    return value


__all__ = ["RecordMapDataset"]
