"""torch.distributed.checkpoint (DCP) storage on any store spool reaches,
each checkpoint a step of spool's :class:`~spool.CheckpointManager`.
Imported as ``spool.torch.dcp``.

>>> import torch.distributed.checkpoint as dcp
>>> from spool.torch import dcp as spool_dcp
>>> dcp.save(state_dict, storage_writer=spool_dcp.StorageWriter("s3://bucket/run-7/ckpt", step=1000))
>>> dcp.load(state_dict, storage_reader=spool_dcp.StorageReader("s3://bucket/run-7/ckpt"))  # the latest step

How a DCP checkpoint maps onto a spool step (docs/checkpoints.md, "DCP
checkpoints"): a save by N DCP ranks is a multi-rank step of N + 1 spool
ranks. DCP rank r uploads its items, serialised into a few files, as spool
rank r + 1 (``rank-<r+1>/``) in ``write_data``, all ranks in parallel. Spool
rank 0 holds DCP's ``.metadata`` alone: the coordinator uploads it in
``finish``, once DCP has gathered every rank's results, and then commits the
step by writing its manifest create-only. A save that fails or is killed at
any point before that leaves no manifest, so the step does not exist and the
previous one stays latest.

Every save is an attempt of its own: the coordinator draws an attempt id in
``prepare_global_plan`` and sends it to every rank in its plan; the step
commits only parts of that attempt, and each rank's files go under a
``save-<id>/`` folder of their own. A save that loses the commit of its step
to another writer removes the files it uploaded (never those the committed
manifest names) and raises :class:`FileExistsError`.

Each file is confirmed by CRC32C when uploaded (as every spool checkpoint
file) and each item carries its own CRC32C in the metadata: the reader
fetches only the byte ranges its rank's plan needs (ranged GETs, files in
parallel) and checks every item it reads.

The ``.metadata`` object is unpickled on load, as torch's FileSystemReader
does: load only from a root whose writers you trust.
"""

from __future__ import annotations

import contextlib
import dataclasses
import io
import os
import pickle
import shutil
import tempfile
import uuid
from concurrent.futures import ThreadPoolExecutor, as_completed
from typing import Any, Dict, List, Mapping, Optional, Sequence, Tuple, Union

import torch
from torch.distributed.checkpoint.metadata import Metadata, MetadataIndex, StorageMeta
from torch.distributed.checkpoint.planner import (LoadItemType, LoadPlan, LoadPlanner, ReadItem, SavePlan,
                                                  SavePlanner, WriteItem, WriteItemType)
from torch.distributed.checkpoint.storage import StorageReader as _StorageReader
from torch.distributed.checkpoint.storage import StorageWriter as _StorageWriter
from torch.distributed.checkpoint.storage import WriteResult
from torch.futures import Future

from spool import _spool
from spool.checkpoints import CheckpointFile, CheckpointManager, CheckpointManifest
from spool.errors import DataLossError, InvalidArgumentError, NotFoundError

PathLike = Union[str, "os.PathLike[str]"]

#: The manifest metadata key that marks a step as a DCP checkpoint, and its value.
FORMAT_KEY = "format"
FORMAT = "torch.distributed.checkpoint"
#: The path of DCP's metadata inside the step (spool rank 0's only file).
METADATA_PATH = "rank-00000/.metadata"


def _rank_folder(spool_rank: int) -> str:
    return f"rank-{spool_rank:05d}"


def _step(checkpoint_id: Union[int, str, "os.PathLike[str]"]) -> int:
    """The step a DCP ``checkpoint_id`` names: an int, or a string of digits."""
    text = os.fspath(checkpoint_id) if not isinstance(checkpoint_id, int) else str(checkpoint_id)
    if isinstance(checkpoint_id, bool) or not text.isdigit():
        raise InvalidArgumentError(f"checkpoint_id {checkpoint_id!r}: expected a step number (a non-negative "
                                   "int); the root URL is given to StorageWriter/StorageReader")
    return int(text)


def _step_url(root: str, step: int) -> str:
    """The URL of the step folder, as CheckpointLayout names it."""
    return f"{root.rstrip('/')}/step-{step:012d}/"


@dataclasses.dataclass(frozen=True)
class _SavePlanData:
    """What the coordinator tells every rank in its plan (SavePlan.storage_data)."""

    attempt: str     # this save's attempt id, the same on every rank
    rank: int        # the DCP rank the plan is for
    world_size: int  # DCP ranks


def _bins(items: Sequence[WriteItem], count: int) -> List[List[WriteItem]]:
    """Spreads items over `count` files: tensors largest first onto the
    lightest file, byte items round-robin (they are small), so the files
    upload in parallel with similar sizes."""
    bins: List[List[WriteItem]] = [[] for _ in range(count)]
    sizes = [0] * count
    byte_items = [item for item in items if item.type == WriteItemType.BYTE_IO]
    tensor_items = [item for item in items if item.type != WriteItemType.BYTE_IO]

    def size(item: WriteItem) -> int:
        data = item.tensor_data
        elements = 1
        for extent in data.size:
            elements *= extent
        return elements * torch._utils._element_size(data.properties.dtype)

    for i, item in enumerate(byte_items):
        bins[i % count].append(item)
    for item in sorted(tensor_items, key=size, reverse=True):
        lightest = sizes.index(min(sizes))
        bins[lightest].append(item)
        sizes[lightest] += size(item)
    return bins


def _tensor(data: torch.Tensor) -> torch.Tensor:
    """The tensor DCP's file writer stores for a tensor item: on the CPU, and
    only its own elements (a view of a larger storage is copied out first)."""
    tensor = data.detach()
    if tensor.device.type != "cpu":
        tensor = tensor.cpu()
    if tensor.untyped_storage().nbytes() != tensor.numel() * tensor.element_size():
        tensor = tensor.clone()
    return tensor


def _serialize_into(stream: io.BytesIO, item: WriteItem, data: Any) -> None:
    """Appends an item's bytes as DCP's file writer stores them to `stream`:
    a BYTE_IO item's buffer as it is, a tensor through torch.save, written
    straight into `stream` (no buffer of its own to copy from)."""
    if item.type == WriteItemType.BYTE_IO:
        stream.write(data.getbuffer())
    else:
        torch.save(_tensor(data), stream)


class StorageWriter(_StorageWriter):
    """Saves a DCP checkpoint as step ``step`` of the spool checkpoint root ``root``.

    ``step`` may instead come as ``dcp.save(..., checkpoint_id=step)``. Options:
    ``metadata`` is stored in the step's manifest (``spool ckpt list`` shows
    it; :meth:`spool.CheckpointManager.read_manifest` returns it);
    ``keep_last`` applies spool's retention after the commit (the newest N
    steps are kept); ``files_per_rank`` is how many files each rank's items
    are spread over (uploaded in parallel, each large one in parts);
    ``staging_dir`` makes ranks serialise their items into files there
    instead of memory (removed after the upload); ``part_timeout_seconds``
    bounds the coordinator's wait for the ranks' parts (they are normally
    there already when it commits); ``rank_prefix_fanout`` spreads the
    ranks' files over that many key prefixes (see
    :class:`spool.CheckpointManager`; give every rank the same value).

    One save at a time per writer object; use one writer per concurrent
    ``async_save``. Every rank must be given the same root and step.
    """

    def __init__(self, root: PathLike, step: Optional[int] = None, *, metadata: Optional[Mapping[str, str]] = None,
                 keep_last: Optional[int] = None, files_per_rank: int = 4, staging_dir: Optional[PathLike] = None,
                 part_timeout_seconds: float = 120, rank_prefix_fanout: int = 0) -> None:
        super().__init__()
        if files_per_rank < 1:
            raise InvalidArgumentError(f"files_per_rank {files_per_rank}: must be at least 1")
        self.root = os.fspath(root)
        self.step = None if step is None else _step(step)
        self.metadata = dict(metadata or {})
        if FORMAT_KEY in self.metadata:
            raise InvalidArgumentError(f"metadata key {FORMAT_KEY!r} is reserved for the checkpoint format")
        self.keep_last = keep_last
        self.files_per_rank = files_per_rank
        self.staging_dir = None if staging_dir is None else os.fspath(staging_dir)
        self.part_timeout_seconds = part_timeout_seconds
        self.rank_prefix_fanout = rank_prefix_fanout
        self._plan_data: Optional[_SavePlanData] = None  # the coordinator's, from prepare_global_plan

    def reset(self, checkpoint_id: Union[int, str, "os.PathLike[str]", None] = None) -> None:
        """Starts a new save; ``checkpoint_id`` (when given) is its step."""
        if checkpoint_id is not None:
            self.step = _step(checkpoint_id)
        self._plan_data = None

    @classmethod
    def validate_checkpoint_id(cls, checkpoint_id: Union[str, "os.PathLike[str]"]) -> bool:
        # Never picked automatically: a step number alone does not say where.
        return False

    def storage_meta(self) -> Optional[StorageMeta]:
        if self.step is None:
            return None
        return StorageMeta(checkpoint_id=_step_url(self.root, self.step))

    def set_up_storage_writer(self, is_coordinator: bool, *args: Any, **kwargs: Any) -> None:
        self._require_step()

    def prepare_local_plan(self, plan: SavePlan) -> SavePlan:
        return plan

    def prepare_global_plan(self, plans: List[SavePlan]) -> List[SavePlan]:
        """Refuses a committed step before anything is uploaded, and gives
        every rank this save's attempt id."""
        self._refuse_committed(self._require_step())
        attempt = uuid.uuid4().hex
        self._plan_data = _SavePlanData(attempt, 0, len(plans))
        return [dataclasses.replace(plan, storage_data=_SavePlanData(attempt, rank, len(plans)))
                for rank, plan in enumerate(plans)]

    def _refuse_committed(self, step: int) -> None:
        """FileExistsError when `step` is committed: the cheap check before
        any upload (a writer racing past it still loses at the commit)."""
        with CheckpointManager(self.root) as manager:
            try:
                manager.read_manifest(step)
            except NotFoundError:
                return
        raise FileExistsError(f"step {step} of {self.root} is committed already; checkpoints are "
                              "immutable: save another step")

    def write_data(self, plan: SavePlan, planner: SavePlanner) -> Future:
        """Serialises this rank's items into files and uploads them as its
        part of the step (each file confirmed by CRC32C); the step is not
        committed until the coordinator's :meth:`finish`."""
        step = self._require_step()
        data: _SavePlanData = plan.storage_data
        if not isinstance(data, _SavePlanData):
            raise InvalidArgumentError("the save plan has no spool attempt: the coordinator's storage writer "
                                       "must be a spool.torch.dcp.StorageWriter too")
        folder = _rank_folder(data.rank + 1)
        staging = None
        if self.staging_dir is not None:
            os.makedirs(self.staging_dir, exist_ok=True)
            staging = tempfile.mkdtemp(prefix=f".spool-dcp-{data.rank}-", dir=self.staging_dir)
        try:
            files: Dict[str, Union[memoryview, str]] = {}
            results: List[WriteResult] = []
            for number, items in enumerate(_bins(plan.items, self.files_per_rank)):
                if items or (number == 0 and not plan.items):  # a rank with nothing still writes its part
                    name = f"__{data.rank}_{number}.distcp"
                    files[name] = self._write_file(name, items, planner, f"{folder}/{name}", staging, results)
            with CheckpointManager(self.root, rank=data.rank + 1, world_size=data.world_size + 1,
                                   attempt=data.attempt, clean_stale_parts=False,
                                   rank_prefix_fanout=self.rank_prefix_fanout) as manager:
                part = manager.save(step, files, {"dcp_rank": str(data.rank)})
            stored = {f"{folder}/{f.path}": f"{folder}/{f.stored_path or f.path}" for f in _rank_files(part)}
            for result in results:
                result.storage_data["stored_path"] = stored[result.storage_data["path"]]
        finally:
            if staging is not None:
                shutil.rmtree(staging, ignore_errors=True)
        future: Future = Future()
        future.set_result(results)
        return future

    def _write_file(self, name: str, items: Sequence[WriteItem], planner: SavePlanner, path: str,
                    staging: Optional[str], results: List[WriteResult]) -> Union[memoryview, str]:
        """Writes `items` one after another into one file (in memory, or in
        `staging`), recording each one's offset, length and CRC32C. In
        memory, the file is one buffer each item is serialised into, handed
        on as a view (the upload borrows it): a tensor's bytes are copied
        once, by torch.save."""
        stream = io.BytesIO()
        local = None if staging is None else os.path.join(staging, name)
        with (open(local, "wb") if local is not None else contextlib.nullcontext()) as file:
            for item in items:
                start = stream.tell()
                _serialize_into(stream, item, planner.resolve_data(item))
                with stream.getbuffer() as whole, whole[start:] as payload:
                    length, crc = payload.nbytes, _spool._crc32c(payload)
                    if file is not None:
                        file.write(payload)
                if file is not None:  # one item in memory at a time
                    stream.seek(0)
                    stream.truncate()
                offset = start if file is None else file.tell() - length
                location = {"path": path, "offset": offset, "length": length, "crc32c": crc}
                results.append(WriteResult(index=item.index, size_in_bytes=length, storage_data=location))
        return stream.getbuffer() if local is None else local

    def finish(self, metadata: Metadata, results: List[List[WriteResult]]) -> None:
        """Uploads DCP's metadata as spool rank 0's part and commits the step
        (its manifest, written create-only, last); then retention."""
        step = self._require_step()
        plan = self._plan_data
        if plan is None:
            raise InvalidArgumentError("finish() without prepare_global_plan(): not the coordinator's writer")
        metadata.storage_data = {result.index: result.storage_data for rank in results for result in rank}
        manifest_metadata = {**self.metadata, FORMAT_KEY: FORMAT, "dcp_world_size": str(plan.world_size)}
        with CheckpointManager(self.root, rank=0, world_size=plan.world_size + 1, attempt=plan.attempt,
                               keep_last=self.keep_last, part_timeout_seconds=self.part_timeout_seconds,
                               clean_stale_parts=False, rank_prefix_fanout=self.rank_prefix_fanout) as manager:
            try:
                manager.save(step, {".metadata": pickle.dumps(metadata)}, manifest_metadata)
            except FileExistsError:
                self._remove_lost_files(manager, step, results)
                raise

    def _remove_lost_files(self, manager: CheckpointManager, step: int, results: List[List[WriteResult]]) -> None:
        """After another writer committed `step` first: removes the files this
        save's ranks uploaded, except any the committed manifest names."""
        try:
            committed = {f.stored_path or f.path for f in manager.read_manifest(step).files}
        except NotFoundError:
            return  # nothing stands: leave the files to `spool ckpt gc`
        ours = {result.storage_data["stored_path"] for rank in results for result in rank}
        for stored_path in sorted(ours - committed):
            try:
                _spool.rm(_step_url(self.root, step) + stored_path)
            except FileNotFoundError:
                pass

    def _require_step(self) -> int:
        if self.step is None:
            raise InvalidArgumentError(f"no step to save under {self.root}: pass StorageWriter(root, step=N) "
                                       "or dcp.save(..., checkpoint_id=N)")
        return self.step


def _rank_files(part: CheckpointManifest) -> List[CheckpointFile]:
    """A saved part's own files, paths relative to its rank folder."""
    if len(part.ranks) != 1:
        raise InvalidArgumentError(f"expected one rank in a saved part, got {len(part.ranks)}")
    return part.ranks[0].files


class StorageReader(_StorageReader):
    """Loads a DCP checkpoint from step ``step`` (default: the latest
    committed one) of the spool checkpoint root ``root``.

    ``step`` may instead come as ``dcp.load(..., checkpoint_id=step)``. Each
    rank reads only the byte ranges its load plan needs, ``reads_in_flight``
    files at a time (each large range split into parallel ranged GETs), and
    checks every item's CRC32C (:class:`spool.DataLossError` on a mismatch).
    Any world size loads any checkpoint (DCP reshards).
    """

    def __init__(self, root: PathLike, step: Optional[int] = None, *, reads_in_flight: int = 8) -> None:
        super().__init__()
        if reads_in_flight < 1:
            raise InvalidArgumentError(f"reads_in_flight {reads_in_flight}: must be at least 1")
        self.root = os.fspath(root)
        self.step = None if step is None else _step(step)
        self.reads_in_flight = reads_in_flight
        self._files: Dict[str, CheckpointFile] = {}  # the step's files by path, from its manifest
        self._loaded_step: Optional[int] = None
        self._storage_data: Dict[MetadataIndex, Dict[str, Any]] = {}
        #: Bytes of items this reader fetched since it was made (what the load plans needed).
        self.bytes_read = 0

    def reset(self, checkpoint_id: Union[int, str, "os.PathLike[str]", None] = None) -> None:
        """Starts a new load; ``checkpoint_id`` (when given) is its step."""
        if checkpoint_id is not None:
            self.step = _step(checkpoint_id)
        self._files, self._loaded_step, self._storage_data = {}, None, {}

    @classmethod
    def validate_checkpoint_id(cls, checkpoint_id: Union[str, "os.PathLike[str]"]) -> bool:
        return False

    @property
    def loaded_step(self) -> Optional[int]:
        """The step read by the last :meth:`read_metadata` (the latest one when no step was given)."""
        return self._loaded_step

    def read_metadata(self, *args: Any, **kwargs: Any) -> Metadata:
        """Reads the committed step's manifest and DCP's metadata from it (CRC32C checked)."""
        with CheckpointManager(self.root) as manager:
            step = self.step if self.step is not None else manager.latest()
            if step is None:
                raise NotFoundError(f"no committed checkpoint under {self.root}")
            manifest = manager.read_manifest(step)
        if manifest.metadata.get(FORMAT_KEY) != FORMAT:
            raise InvalidArgumentError(f"step {step} of {self.root} is not a torch.distributed.checkpoint "
                                       "checkpoint: restore it with spool.CheckpointManager.restore")
        self._files = {f.path: f for f in manifest.files}
        self._loaded_step = step
        blob = self._read_whole(METADATA_PATH)
        metadata: Metadata = pickle.loads(blob)
        if getattr(metadata, "storage_meta", None) is None:
            metadata.storage_meta = StorageMeta()
        return metadata

    def set_up_storage_reader(self, metadata: Metadata, is_coordinator: bool, *args: Any, **kwargs: Any) -> None:
        if not isinstance(metadata.storage_data, dict):
            raise InvalidArgumentError(f"step {self._loaded_step} of {self.root}: its metadata has no item locations")
        self._storage_data = metadata.storage_data

    def prepare_local_plan(self, plan: LoadPlan) -> LoadPlan:
        return plan

    def prepare_global_plan(self, plans: List[LoadPlan]) -> List[LoadPlan]:
        return plans

    def read_data(self, plan: LoadPlan, planner: LoadPlanner) -> Future:
        """Reads the byte ranges of the plan's items, files in parallel, and
        hands each item to the planner as its file's reads complete."""
        by_file: Dict[str, List[ReadItem]] = {}
        for item in plan.items:
            by_file.setdefault(self._storage_data[item.storage_index]["path"], []).append(item)
        if by_file:
            with ThreadPoolExecutor(min(self.reads_in_flight, len(by_file)),
                                    thread_name_prefix="spool-dcp-read") as pool:
                reads = [pool.submit(self._read_items, path, items) for path, items in by_file.items()]
                for done in as_completed(reads):
                    for item, payload in done.result():
                        self.bytes_read += len(payload)
                        _load_item(item, payload, planner)
        future: Future = Future()
        future.set_result(None)
        return future

    def _read_items(self, path: str, items: Sequence[ReadItem]) -> List[Tuple[ReadItem, bytearray]]:
        """Each item's range of one file, its CRC32C checked; runs on a pool thread."""
        reader, url = self._open(path)
        out = []
        for item in sorted(items, key=lambda i: self._storage_data[i.storage_index]["offset"]):
            location = self._storage_data[item.storage_index]
            payload = bytearray(location["length"])
            if reader.read_into(location["offset"], payload) != len(payload):
                raise DataLossError(f"{url}: ends before item {item.storage_index.fqn} "
                                    f"(bytes {location['offset']}+{len(payload)})")
            crc = _spool._crc32c(payload)
            if crc != location["crc32c"]:
                raise DataLossError(f"{url}: item {item.storage_index.fqn} (bytes {location['offset']}+"
                                    f"{len(payload)}) has CRC32C {crc:08x}, saved as {location['crc32c']:08x}")
            out.append((item, payload))
        return out

    def _open(self, path: str) -> Tuple[Any, str]:
        """A reader of `path` of the loaded step, whose size the manifest confirms."""
        file = self._files.get(path)
        if file is None:
            raise DataLossError(f"step {self._loaded_step} of {self.root}: its metadata names {path}, "
                                "which its manifest does not list")
        url = _step_url(self.root, self._loaded_step) + (file.stored_path or file.path)
        reader = _spool._Reader(url)
        if reader.size != file.size:
            raise DataLossError(f"{url}: {reader.size} bytes, the manifest says {file.size}")
        return reader, url

    def _read_whole(self, path: str) -> bytearray:
        reader, url = self._open(path)
        payload = bytearray(reader.size)
        if reader.read_into(0, payload) != len(payload) or _spool._crc32c(payload) != self._files[path].crc32c:
            raise DataLossError(f"{url}: does not match the size and CRC32C its manifest records")
        return payload


def _load_item(item: ReadItem, payload: bytearray, planner: LoadPlanner) -> None:
    """Hands one item's bytes to the planner, as DCP's file reader does."""
    if item.type == LoadItemType.BYTE_IO:
        planner.load_bytes(item, io.BytesIO(payload))
        return
    tensor = torch.load(io.BytesIO(payload), map_location="cpu", weights_only=True)
    for dim, (offset, length) in enumerate(zip(item.storage_offsets, item.lengths)):
        if offset != 0 or length != tensor.size(dim):
            tensor = tensor.narrow(dim, offset, length)
    target = planner.resolve_tensor(item).detach()
    if target.size() != tensor.size():
        raise DataLossError(f"item {item.storage_index.fqn}: saved {tuple(tensor.size())}, "
                            f"the load plan expects {tuple(target.size())}")
    target.copy_(tensor)
    planner.commit_tensor(item, target)


__all__ = ["FORMAT", "METADATA_PATH", "StorageReader", "StorageWriter"]
