"""PyTorch integration: a streaming dataset with exact mid-epoch resume, and
``torch.save`` / ``torch.load`` straight to a bucket.

>>> dataset = spool.torch.StreamingDataset("s3://bucket/digits/train.manifest.json",
...                                        batch_size=64, seed=1, features=features)
>>> loader = spool.torch.DataLoader(dataset, num_workers=2)
>>> for epoch in range(3):
...     for batch in loader:            # dicts of tensors, 64 examples each
...         ...
...         checkpoint["data"] = loader.state_dict()
>>> loader.load_state_dict(checkpoint["data"])   # after a restart: the next batch is
...                                              # the one the first run would have had

Batches are made in C++ (decoded, batched, prefetched), so the dataset
yields whole batches: use it with ``batch_size=None`` in
``torch.utils.data.DataLoader`` (:class:`DataLoader` below does so).

Splitting: each rank (``torch.distributed`` when initialised, else the
launcher's environment) reads its own part of every epoch; within a rank,
each DataLoader worker reads its own part. Every record of an epoch reaches
exactly one (rank, worker).

Epochs reach the workers through shared memory: :meth:`StreamingDataset.set_epoch`
and :meth:`StreamingDataset.load_state_dict` in the main process are seen by
every DataLoader worker when its next iteration starts, so
``persistent_workers=True`` works (each worker process is kept, each epoch
still gets its own order).

Resume: torch's DataLoader takes one batch from each worker in turn
(workers whose stream has ended drop out), so the number of batches the
training loop consumed says exactly how many each worker delivered. A state
is (epoch, batches consumed, number of workers); a restarted worker skips
to its own position without reading the records before it when the shards'
record counts are known (manifest or index files; with several workers the
dataset counts them at open otherwise). Resume needs the same inputs, seed,
batch size, world size and ``num_workers``.

Elastic mode (``partitions=``, ``global_batch_size=``): the order is fixed
by the partitions, not by the job's shape; a state is (epoch, steps) and
resumes on any world size and ``num_workers`` dividing the partitions.

torchdata's ``StatefulDataLoader`` works too: it asks each worker for its
dataset's state (this worker's C++ loader state) and gives it back to the
same worker on resume. Every state names its inputs (``fingerprint``) and
is refused by a dataset over other inputs.
"""

from __future__ import annotations

import itertools
import json
import mmap
import os
import warnings
from typing import Any, Dict, Iterator, List, Optional, Sequence, Tuple, Union

import numpy as np
import torch
import torch.utils.data

import spool
from spool._torch_archive import TorchArchiveReader
from spool._worker_batches import SharedRecords
from spool.loader import FeatureSpec, PathLike
from spool.map_dataset import RecordMapDataset  # the map-style dataset (its own module)

_STATE_VERSION = 2
# The shared state of a StreamingDataset: int64 words [epoch, plan length in
# bytes, the resume plan as JSON...]. 64 KiB holds the plan of thousands of
# DataLoader workers.
_SHARED_WORDS = 8192
_PLAN_BYTES = (_SHARED_WORDS - 2) * 8


def save(obj: Any, url: PathLike, **kwargs: Any) -> None:
    """``torch.save(obj)`` to any URL spool takes, streamed (no temporary
    file); the object appears only once complete."""
    with spool.open(url, "wb") as f:
        torch.save(obj, f, **kwargs)


def load(url: PathLike, **kwargs: Any) -> Any:
    """``torch.load`` from any URL spool takes (``map_location`` etc. pass through).

    Each tensor's bytes are read straight into the memory ``torch.load``
    allocates for it, large ones in parallel ranged reads; the archive's
    directory, its pickle and small tensors come from a few windows fetched
    ahead (:mod:`spool._torch_archive`). Nothing holds the object beside the
    loaded state.

    ``mmap=True`` (torch's own keyword, or ``torch.utils.serialization.config.load.mmap``)
    fetches into anonymous shared memory (``memfd_create``) and maps the
    tensors onto it, as ``torch.load(path, mmap=True)`` maps a file: the state
    is held once and not copied after the fetch. As with a mapped file,
    pages a tensor writes in place are copied on write (``mmap.MAP_PRIVATE``,
    torch's default) while the fetched page stays until the tensor is freed:
    load state you will update in place, such as an optimizer's, without it.
    """
    asked = kwargs.pop("mmap", None)
    mapped = _torch_maps_by_default() if asked is None else asked
    if mapped and hasattr(os, "memfd_create") and os.path.isdir("/proc/self/fd"):
        return _load_mapped(url, kwargs)
    if mapped or asked is not None:
        kwargs["mmap"] = False  # from a stream there is nothing to map (torch refuses mmap without a path)
    with spool.open(url, "rb") as f, TorchArchiveReader(f.raw) as archive:
        return torch.load(archive, **kwargs)


def _torch_maps_by_default() -> bool:
    """torch's own default for ``torch.load(mmap=None)``."""
    try:
        from torch.utils.serialization import config
    except ImportError:  # torch before 2.5: no default other than False
        return False
    return bool(config.load.mmap)


def _load_mapped(url: PathLike, kwargs: Dict[str, Any]) -> Any:
    """``load(url, mmap=True)``: the object fetched into a memfd, mapped by torch."""
    with spool.open(url, "rb") as f:
        reader = f.raw  # unbuffered: one readinto is one plan of parallel ranged reads, filling it all
        size = reader.size
        fd = os.memfd_create("spool-torch-load", os.MFD_CLOEXEC)
        try:
            os.ftruncate(fd, size)
            if size:
                with mmap.mmap(fd, size) as pages, memoryview(pages) as view:
                    got = reader.readinto(view)
                if got != size:
                    raise EOFError(f"{reader.name} ended after {got} of its {size} bytes: it was replaced or "
                                   "truncated while being read; load it again")
            kwargs["mmap"] = True
            # torch maps what it opens by name: the memfd's name in /proc, whose
            # pages the loaded tensors keep alive after the descriptor is closed.
            return torch.load(f"/proc/self/fd/{fd}", **kwargs)
        finally:
            os.close(fd)


def _distributed_rank() -> tuple[Optional[int], Optional[int]]:
    if torch.distributed.is_available() and torch.distributed.is_initialized():
        return torch.distributed.get_rank(), torch.distributed.get_world_size()
    return None, None


class _SharedState:
    """The epoch and the resume plan of a dataset, in memory shared with its
    DataLoader workers.

    A worker holds a copy of the dataset made when it started (by fork, or
    by pickling under spawn); with ``persistent_workers`` it keeps that copy
    for every epoch, so attributes set later in the main process never reach
    it. A tensor in shared memory is shared by every copy instead (torch
    pickles it as a handle to the same memory), and a worker reads it when
    each iteration starts. The main process writes only between epochs,
    while no worker is starting an iteration.
    """

    def __init__(self) -> None:
        self._words = torch.zeros(_SHARED_WORDS, dtype=torch.int64)
        try:
            self._words.share_memory_()
            self.shared = True
        except RuntimeError:  # no shared memory here: workers get copies (see StreamingDataset.__iter__)
            self.shared = False

    @property
    def epoch(self) -> int:
        return int(self._words[0])

    @epoch.setter
    def epoch(self, epoch: int) -> None:
        self._words[0] = epoch

    @property
    def plan(self) -> Optional[Dict[str, Any]]:
        length = int(self._words[1])
        if length == 0:
            return None
        data = self._words[2:].view(torch.uint8)[:length].numpy().tobytes()
        return json.loads(data)

    @plan.setter
    def plan(self, plan: Optional[Dict[str, Any]]) -> None:
        if plan is None:
            self._words[1] = 0
            return
        data = json.dumps(plan, separators=(",", ":")).encode()
        if len(data) > _PLAN_BYTES:
            raise ValueError(f"the resume plan of {plan['num_workers']} DataLoader workers is too large "
                             f"({len(data)} bytes, at most {_PLAN_BYTES}); resume with fewer workers")
        self._words[1] = 0
        self._words[2:].view(torch.uint8)[:len(data)] = torch.frombuffer(bytearray(data), dtype=torch.uint8)
        self._words[1] = len(data)


def consumed_per_worker(batches: int, lengths: Sequence[Optional[int]]) -> Tuple[List[int], int]:
    """How many batches each worker delivered when a consumer took ``batches``
    from workers in turn (0, 1, ..., k-1, 0, ...), a worker dropping out once
    its stream of ``lengths[w]`` batches ended (None: not before ``batches``),
    and whose turn is next. This is the order of torch's DataLoader over an
    IterableDataset."""
    workers = len(lengths)
    taken = [0] * workers

    def active() -> List[int]:
        return [w for w in range(workers) if lengths[w] is None or taken[w] < lengths[w]]  # type: ignore[operator]

    remaining = batches
    while remaining > 0:
        turn = active()
        if not turn:
            raise ValueError(f"the state says {batches} batches were consumed, more than the epoch has")
        # Whole rounds until the next stream ends, or as many as are left.
        ends = [lengths[w] - taken[w] for w in turn if lengths[w] is not None]  # type: ignore[operator]
        rounds = min(ends + [remaining // len(turn)])
        if rounds == 0:  # a last, partial round
            for w in turn[:remaining]:
                taken[w] += 1
            return taken, turn[remaining]
        for w in turn:
            taken[w] += rounds
        remaining -= rounds * len(turn)
    turn = active()
    return taken, turn[0] if turn else 0


class StreamingDataset(torch.utils.data.IterableDataset):
    """Batches of a TFRecord dataset from any store, as tensors.

    ``features`` (see :class:`spool.Feature`): each batch is a dict of
    tensors with a leading batch dimension (bytes features stay lists of
    ``bytes``); without it, a list of the records' ``bytes``, or with
    ``record_type="numpy"`` of 1-D ``uint8`` tensors over the loader's
    pooled buffers (no copy; do not write to them; in DataLoader workers
    copied once into a shared-memory segment per batch that the worker
    reuses once the batch is gone, the records views of it). The other
    options are :class:`spool.DataLoader`'s. One epoch per iteration: call
    :meth:`set_epoch` before each (as with ``DistributedSampler``), or use
    :class:`DataLoader`, which does. The epoch and a loaded state reach
    DataLoader workers when their next iteration starts, persistent workers
    included.

    Two modes:

    - fixed (``batch_size``): each rank, and each DataLoader worker within
      it, reads its own part of every epoch in batches of ``batch_size``; a
      state resumes on the same world size and ``num_workers`` only.
    - elastic (``partitions=C, global_batch_size=G``): the order is fixed by
      C partitions, so the job's global batch at each step (every rank's
      batch, in rank order) is the same for any world size x ``num_workers``
      that divides C, and a state saved on one world size resumes on another
      with the rest of the epoch delivered exactly once. A rank's batch at a
      step is G / world_size records (:class:`DataLoader` joins its workers'
      shares; torch's own DataLoader yields each worker's share in turn).

    ``rank`` / ``world_size``: left out, from ``torch.distributed`` when it
    is initialised, else from the launcher's environment (torchrun, Open
    MPI, TF_CONFIG, Indexed Jobs), else rank 0 of 1; the attributes hold
    what was found.

    States: :meth:`state_dict` / :meth:`load_state_dict`, called by
    :class:`DataLoader` and by torchdata's ``StatefulDataLoader`` (which
    keeps one state per worker, taken in the worker). A state names the
    dataset it was taken on (``fingerprint``) and is refused by another.
    """

    def __init__(self, inputs: Union[PathLike, Sequence[PathLike]], *, batch_size: Optional[int] = None,
                 features: Optional[FeatureSpec] = None, seed: int = 0, shuffle: bool = True,
                 drop_remainder: bool = False, rank: Optional[int] = None, world_size: Optional[int] = None,
                 partitions: Optional[int] = None, global_batch_size: Optional[int] = None,
                 **loader_options: Any) -> None:
        super().__init__()
        if isinstance(inputs, (str, os.PathLike)):
            inputs = [inputs]
        if rank is None and world_size is None:
            rank, world_size = _distributed_rank()
        rank, world_size, _ = spool._spool._resolve_worker(rank, world_size)
        if partitions is None:
            if batch_size is None or global_batch_size is not None:
                raise ValueError("give StreamingDataset a batch_size, or partitions and global_batch_size for "
                                 "elastic mode")
        else:
            if batch_size is not None or global_batch_size is None:
                raise ValueError("in elastic mode (partitions=) give global_batch_size, the records of one step "
                                 "over the whole job, instead of batch_size")
            if partitions < 1 or global_batch_size < 1 or global_batch_size % partitions:
                raise ValueError(f"global_batch_size ({global_batch_size}) must be a positive multiple of "
                                 f"partitions ({partitions})")
            if partitions % world_size:
                raise ValueError(f"the world size ({world_size}) must divide partitions ({partitions}); choose "
                                 "partitions as a multiple of every world size the job may run on")
            batch_size = global_batch_size // world_size  # this rank's share of each step
        self.inputs = [os.fspath(i) for i in inputs]
        self.batch_size = batch_size
        self.partitions = partitions or 0
        self.global_batch_size = global_batch_size
        self.features = features
        self.seed = seed
        self.shuffle = shuffle
        self.drop_remainder = drop_remainder
        self.rank = rank
        self.world_size = world_size
        self._count_records = bool(loader_options.pop("count_records", False))
        if loader_options.get("record_type") == "memoryview":
            # torch's DataLoader converts a batch element by element, and a
            # memoryview counts as a sequence: each record would become a
            # list of ints, and workers cannot pickle one anyway.
            raise ValueError("StreamingDataset does not take record_type='memoryview' (torch's DataLoader would "
                             "turn each record into a list of ints); use record_type='numpy' for records without "
                             "a copy (read-only uint8 tensors), or 'bytes'")
        self.loader_options = loader_options
        self._shared = _SharedState()  # epoch and resume plan, seen by the workers
        self._yielded = 0  # batches yielded in this process (num_workers=0)
        self._worker_iterations = 0  # iterations this copy ran in a DataLoader worker
        self._inputs_fingerprint: Optional[str] = None  # computed when a state needs it
        # In a DataLoader worker: where this worker's current iteration is
        # ({"epoch", "batches", "loader": its C++ state}), and a worker state
        # loaded for its next iteration. Never shared: each worker has its own.
        self._stream: Optional[Dict[str, Any]] = None
        self._local_resume: Optional[Dict[str, Any]] = None
        # The record pool of the last iteration that ended in this process,
        # lent to the next one's loader: epochs reuse its blocks (at most
        # memory_budget kept between them) instead of mapping new pages and
        # unmapping them at each epoch's end. It pickles as None; a pool
        # inherited through fork is not used.
        self._record_pool: Any = None

    @property
    def elastic(self) -> bool:
        """Whether the order is fixed by ``partitions`` (elastic mode)."""
        return self.partitions > 0

    @property
    def fingerprint(self) -> str:
        """The identity of the inputs a state carries (16 hex digits): a
        manifest's content, or the shards' URLs and sizes. Reads each
        manifest and lists each glob the first time."""
        if self._inputs_fingerprint is None:
            self._inputs_fingerprint = spool._spool._inputs_fingerprint(self.inputs)
        return self._inputs_fingerprint

    @property
    def epoch(self) -> int:
        """The epoch the next iteration delivers."""
        return self._shared.epoch

    @epoch.setter
    def epoch(self, epoch: int) -> None:
        self._shared.epoch = epoch

    @property
    def _resume(self) -> Optional[Dict[str, Any]]:
        """Where to resume (from :meth:`load_state_dict`); applies to its epoch only."""
        return self._shared.plan

    @_resume.setter
    def _resume(self, plan: Optional[Dict[str, Any]]) -> None:
        self._shared.plan = plan

    def set_epoch(self, epoch: int) -> None:
        """The epoch the next iteration delivers (its order comes from seed + epoch)."""
        if epoch != self.epoch:
            self.epoch = epoch
            self._yielded = 0

    def _open(self, local_workers: int, local_worker: int, epoch: Optional[int] = None,
              **overrides: Any) -> spool.DataLoader:
        epoch = self.epoch if epoch is None else epoch
        options = {**self.loader_options, **overrides}
        if self.elastic:
            options.update(partitions=self.partitions, global_batch_size=self.global_batch_size)
        return spool.DataLoader(
            self.inputs, batch_size=self.batch_size, seed=self.seed, features=self.features, shuffle=self.shuffle,
            epochs=epoch + 1, drop_remainder=self.drop_remainder, rank=self.rank, world_size=self.world_size,
            local_workers=local_workers, local_worker=local_worker,
            count_records=local_workers > 1 or self._count_records, **options)

    def _resume_plan(self, epoch: int, batches: int, workers: int) -> Dict[str, Any]:
        """Each worker's record position after ``batches`` of ``epoch`` were
        consumed, and which worker's turn is next (torch's next iteration
        starts with worker 0, so the workers' roles are rotated to match).
        In elastic mode ``batches`` counts steps, and every partition is at
        the same position whatever the workers."""
        if self.elastic:
            return {"epoch": epoch, "batches": batches, "elastic": True,
                    "position": batches * (self.global_batch_size // self.partitions)}
        # Opened at the epoch (not at epoch 0 and moved there): it reads only what it counts.
        with self._open(workers, 0, epoch=epoch, prefetch_batches=1, read_ahead=1 << 20, _start=(epoch, 0)) as probe:
            first = probe.worker["worker"]  # this rank's worker 0
            records = [probe.epoch_records(epoch, first + w) for w in range(workers)]
        lengths = [None if r is None else (r // self.batch_size if self.drop_remainder else -(-r // self.batch_size))
                   for r in records]
        taken, next_turn = consumed_per_worker(batches, lengths)
        positions = [t * self.batch_size if r is None else min(t * self.batch_size, r) for t, r in zip(taken, records)]
        return {"epoch": epoch, "batches": batches, "num_workers": workers, "positions": positions,
                "rotation": next_turn}

    def __iter__(self) -> Iterator[Union[Dict[str, Any], List[Any]]]:
        # Not a generator: the loader opens and resumes here, when torch's
        # fetcher calls iter(), so that state_dict() in a worker is right
        # from then on (StatefulDataLoader asks for it before the first batch).
        info = torch.utils.data.get_worker_info()
        workers, worker = (info.num_workers, info.id) if info is not None else (1, 0)
        if info is not None:
            self._worker_iterations += 1
            if self._worker_iterations > 1 and not self._shared.shared:
                raise RuntimeError("persistent_workers=True needs shared memory (torch's share_memory_), which this "
                                   "system refused, so a new epoch cannot reach the workers; use "
                                   "persistent_workers=False")
        local, self._local_resume = self._local_resume, None
        epoch = local["epoch"] if local is not None else self.epoch
        resume = None if local is not None else self._resume
        if resume is not None and resume["epoch"] != epoch:
            resume = None
        position = 0
        if resume is not None and not resume.get("elastic"):
            if resume["num_workers"] != workers:
                taken_with = resume["num_workers"]
                raise ValueError(f"the dataset state was taken with {taken_with} DataLoader workers; resume with "
                                 f"num_workers={taken_with if taken_with > 1 else 0} (this DataLoader has {workers})")
            worker = (resume["rotation"] + worker) % workers
            position = resume["positions"][worker]
        elif resume is not None:
            position = resume["position"]
        pool, self._record_pool = self._record_pool, None
        if pool is not None and pool.forked:
            pool = None
        try:
            # Opened where this iteration starts: a loader opened at epoch 0
            # and moved would read ahead in epoch 0 for nothing.
            loader = self._open(workers, worker, epoch=epoch, _record_pool=pool,
                                _start=(0, 0) if local is not None else (epoch, position))
        except BaseException:
            self._record_pool = pool
            raise
        try:
            if local is not None:
                loader.resume(local["loader"])
        except BaseException:
            loader.close()
            self._record_pool = loader._shared_record_pool()
            raise
        if info is None:
            self._yielded = resume["batches"] if resume else 0
        self._stream = {"epoch": epoch, "batches": local["batches"] if local else 0, "loader": loader.state()}
        return self._deliver(loader, self._stream, counts_here=info is None)

    def _deliver(self, loader: spool.DataLoader, stream: Dict[str, Any],
                 counts_here: bool) -> Iterator[Union[Dict[str, Any], List[Any]]]:
        """Yields the loader's batches as tensors, keeping ``stream`` (this
        iteration's place) up to date and, in the main process, ``_yielded``."""
        try:
            with loader:
                for batch in loader:
                    stream["batches"] += 1
                    if counts_here:
                        self._yielded += 1
                    else:
                        # A worker's state (state_dict in the worker) carries
                        # its loader's; the main process's does not, so it is
                        # not made for every batch there.
                        stream["loader"] = loader.state()
                    yield _to_tensors(batch)
        finally:
            self._record_pool = loader._shared_record_pool()

    def state_dict(self, batches: Optional[int] = None, num_workers: int = 0) -> Dict[str, Any]:
        """Where the consumer is in the current epoch: ``batches`` it took from
        a ``torch.utils.data.DataLoader`` with ``num_workers`` workers (in
        elastic mode, steps). Left out, what this process iterated: in the
        main process the batches it yielded itself; in a DataLoader worker
        (torchdata's ``StatefulDataLoader`` asks there) this worker's own
        stream, with ``worker`` and ``loader`` (its C++ loader's state) added.
        :meth:`DataLoader.state_dict` fills both in.

        A dict of plain values (JSON as is): ``version`` (of this layout, 2),
        ``epoch``, ``batches``, ``num_workers`` (at least 1), ``seed``,
        ``batch_size``, ``rank`` and ``world_size`` (0 and 1 in a single
        process), ``partitions`` (0 in fixed mode), ``global_batch_size``
        (None in fixed mode) and ``fingerprint`` (the inputs' identity)."""
        state = {
            "version": _STATE_VERSION,
            "epoch": self.epoch,
            "batches": self._yielded if batches is None else batches,
            "num_workers": max(num_workers, 1),
            "seed": self.seed,
            "batch_size": self.batch_size,
            "world_size": self.world_size,
            "rank": self.rank,
            "partitions": self.partitions,
            "global_batch_size": self.global_batch_size,
            "fingerprint": self.fingerprint,
        }
        info = torch.utils.data.get_worker_info()
        if batches is None and info is not None and self._stream is not None:
            state.update(epoch=self._stream["epoch"], batches=self._stream["batches"], num_workers=info.num_workers,
                         worker=info.id, loader=self._stream["loader"])
        return state

    def load_state_dict(self, state: Dict[str, Any]) -> None:
        """Makes the next iteration continue after ``state`` (from
        :meth:`state_dict`). ``ValueError`` when the state belongs to other
        inputs, another seed, batch size or mode, or (fixed mode) another
        rank or world size. A worker's state (with ``loader``) is loaded in
        that DataLoader worker, as ``StatefulDataLoader`` does."""
        version = state.get("version")
        if version not in (1, _STATE_VERSION):
            raise ValueError(f"not a spool StreamingDataset state (version {version!r})")
        self._check_state(state)
        in_worker = torch.utils.data.get_worker_info() is not None
        if "loader" in state:
            if not in_worker:
                raise ValueError("this state is one DataLoader worker's (taken by torchdata's StatefulDataLoader); "
                                 "load it with the StatefulDataLoader.load_state_dict of the loader that saved it")
            # This worker's next iteration continues that stream; the C++
            # loader checks that it is this worker's (in fixed mode).
            self._local_resume = {"epoch": int(state["epoch"]), "batches": int(state["batches"]),
                                  "loader": state["loader"]}
            return
        if in_worker:
            raise ValueError("load a consumer's state (spool.torch.DataLoader.state_dict) in the main process")
        self.epoch = int(state["epoch"])
        plan = self._resume_plan(self.epoch, int(state["batches"]), int(state["num_workers"]))
        self._resume = plan
        self._yielded = plan["batches"]

    def _check_state(self, state: Dict[str, Any]) -> None:
        """Refuses a state of other inputs, order options or (fixed mode) job shape."""
        fingerprint = state.get("fingerprint")
        if fingerprint is not None and fingerprint != self.fingerprint:
            raise ValueError(f"the dataset state was taken on other inputs (fingerprint {fingerprint}; these inputs "
                             f"have {self.fingerprint}); resume it on the dataset it was saved with")
        partitions = state.get("partitions", 0)
        if partitions != self.partitions:
            def mode(p: int) -> str:
                return f"elastic mode with partitions={p}" if p else "fixed mode"
            raise ValueError(f"the dataset state was saved in {mode(partitions)} but this dataset is in "
                             f"{mode(self.partitions)}; open it with the partitions and global_batch_size it was "
                             "saved with")
        keys = ("seed", "global_batch_size") if self.elastic else ("seed", "batch_size", "world_size", "rank")
        for key in keys:
            if key in ("world_size", "rank") and state[key] is None:
                raise ValueError(f"the dataset state does not say which {key} it was saved on (an earlier version "
                                 f"of spool left it out when the launcher's environment gave it); resume it with "
                                 f"the world size it was saved on after setting its {key} in the state")
            if state[key] != getattr(self, key):
                raise ValueError(f"the dataset state has {key}={state[key]!r} but this dataset has "
                                 f"{key}={getattr(self, key)!r}; resume with the same {key}"
                                 + (" (or save in elastic mode, partitions=, to change the world size)"
                                    if key in ("world_size", "rank") else ""))


_READ_ONLY_WARNING = "The given NumPy array is not writable"
# Whether each conversion of read-only arrays needs the warning filter: torch
# warns once per process that it cannot make such a tensor read-only, and
# the filter costs more than the conversion of a batch. None: not known yet.
_read_only_filter_needed: Optional[bool] = None


def _torch_warns_again_about_read_only_arrays() -> bool:
    """Spends torch's warning about read-only arrays on a 1-byte array (it
    warns once per process); True for a torch that would warn again."""
    dummy = np.zeros(1, np.uint8)
    dummy.flags.writeable = False
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        torch.from_numpy(dummy)
        torch.from_numpy(dummy)
    return sum(_READ_ONLY_WARNING in str(w.message) for w in caught) > 1


def _records_as_tensors(records: List[np.ndarray]) -> List[torch.Tensor]:
    """Read-only arrays as tensors over the same memory, without torch's
    warning that it cannot make them read-only."""
    global _read_only_filter_needed
    if _read_only_filter_needed is None:
        _read_only_filter_needed = _torch_warns_again_about_read_only_arrays()
    if not _read_only_filter_needed:
        return list(map(torch.from_numpy, records))
    with warnings.catch_warnings():
        warnings.filterwarnings("ignore", message=_READ_ONLY_WARNING)
        return list(map(torch.from_numpy, records))


def _to_tensors(batch: Union[Dict[str, Any], List[Any]]) -> Union[Dict[str, Any], List[Any]]:
    if isinstance(batch, list):
        # record_type="numpy": read-only arrays over the loader's pooled
        # buffers, made tensors here without a copy. In a DataLoader worker,
        # copied once into a kept shared-memory segment for the trip to the
        # main process.
        if batch and not isinstance(batch[0], bytes):
            if torch.utils.data.get_worker_info() is not None:
                return SharedRecords(batch)
            return _records_as_tensors(batch)
        return batch
    return {name: torch.from_numpy(value) if not isinstance(value, list) else value for name, value in batch.items()}


def _as_delivered(batch: Any) -> Any:
    """spool.torch.DataLoader's default collate_fn: the dataset's batches are
    tensors already, so torch's default_convert (which walks every record of
    every batch) has nothing to do."""
    return batch


def _join(batches: List[Union[Dict[str, Any], List[Any]]]) -> Union[Dict[str, Any], List[Any]]:
    """One batch from several workers' consecutive shares of a step, in order."""
    if isinstance(batches[0], list):
        return [record for batch in batches for record in batch]  # type: ignore[union-attr]
    joined: Dict[str, Any] = {}
    for name, first in batches[0].items():  # type: ignore[union-attr]
        values = [batch[name] for batch in batches]  # type: ignore[call-overload]
        joined[name] = torch.cat(values) if isinstance(first, torch.Tensor) else [v for value in values for v in value]
    return joined


class DataLoader(torch.utils.data.DataLoader):
    """``torch.utils.data.DataLoader`` over a :class:`StreamingDataset` that
    knows where it is: it advances the dataset's epoch after each full pass
    and counts the batches taken, so :meth:`state_dict` /
    :meth:`load_state_dict` resume exactly, whatever ``num_workers``.

    In elastic mode each worker reads its share of every step and this
    loader joins the ``num_workers`` shares, so each batch is the rank's
    whole share of a global batch (``global_batch_size / world_size``
    records) whatever ``num_workers`` is, and a state resumes on any world
    size and ``num_workers`` whose product divides ``partitions``.

    Takes torch's options except ``batch_size`` (the dataset batches;
    without a ``collate_fn``, a ``StreamingDataset``'s batches, tensors
    already, are taken as they are, where torch's default would walk every
    record again);
    ``persistent_workers=True`` keeps the worker processes from one epoch to
    the next, and each epoch still has its own order.
    """

    def __init__(self, dataset: StreamingDataset, **kwargs: Any) -> None:
        if not isinstance(dataset, StreamingDataset):
            raise TypeError("spool.torch.DataLoader takes a spool.torch.StreamingDataset")
        if kwargs.pop("batch_size", None) is not None:
            raise ValueError("give batch_size to the StreamingDataset; its batches are made in C++")
        if "collate_fn" not in kwargs and type(dataset).__iter__ is StreamingDataset.__iter__:
            kwargs["collate_fn"] = _as_delivered
        super().__init__(dataset, batch_size=None, **kwargs)
        if dataset.elastic and dataset.partitions % (dataset.world_size * max(self.num_workers, 1)):
            raise ValueError(f"in elastic mode world size x num_workers ({dataset.world_size} x "
                             f"{max(self.num_workers, 1)}) must divide partitions ({dataset.partitions})")
        self._batches = 0

    def __iter__(self):  # type: ignore[override]
        dataset: StreamingDataset = self.dataset  # type: ignore[assignment]
        iterator = super().__iter__()
        resumed = dataset._resume
        self._batches = resumed["batches"] if resumed and resumed["epoch"] == dataset.epoch else 0
        shares = max(self.num_workers, 1) if dataset.elastic else 1
        while True:
            # torch takes one batch from each worker in turn; in elastic mode
            # every worker has the same number of steps, so shares come whole.
            parts = list(itertools.islice(iterator, shares))
            if not parts:
                break
            self._batches += 1
            yield parts[0] if shares == 1 else _join(parts)
        dataset._resume = None
        dataset.set_epoch(dataset.epoch + 1)
        self._batches = 0

    def state_dict(self) -> Dict[str, Any]:
        """The dataset's state after the batches this loader handed out."""
        dataset: StreamingDataset = self.dataset  # type: ignore[assignment]
        return dataset.state_dict(batches=self._batches, num_workers=self.num_workers)

    def load_state_dict(self, state: Dict[str, Any]) -> None:
        """The next iteration continues after ``state``."""
        dataset: StreamingDataset = self.dataset  # type: ignore[assignment]
        dataset.load_state_dict(state)
        self._batches = state["batches"]


__all__ = ["DataLoader", "RecordMapDataset", "StreamingDataset", "consumed_per_worker", "load", "save"]

# torch.distributed.checkpoint storage (spool/torch_dcp.py), as spool.torch.dcp:
# registered under that name too, so `from spool.torch.dcp import StorageWriter`
# works. A torch without distributed support, or older than DCP's storage
# interface (2.4), has no spool.torch.dcp; the rest of this module still works.
try:
    from spool import torch_dcp as dcp  # noqa: E402
except ImportError:
    pass
else:
    import sys as _sys

    _sys.modules[__name__ + ".dcp"] = dcp
