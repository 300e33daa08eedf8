#!/usr/bin/env python3
"""spool's Python package beside the Python tools a PyTorch user would pick,
on the same S3 server in the same run (and torch.distributed.checkpoint):

- streaming: spool.torch.StreamingDataset (TFRecord shards, 0 and 2 workers)
  vs s3torchconnector's S3IterableDataset over the same shards (raw bytes, and
  records with the TFRecord framing parsed in Python) vs MosaicML Streaming
  over MDS shards its MDSWriter wrote (S3 backend, local cache, epochs 1 and 2)
  vs WebDataset over tar shards streamed with `pipe:aws s3 cp ... -`;
  records of ~100 KB and of ~1 KB;
- checkpoint: a state_dict saved and loaded with spool.torch.save/load vs
  s3torchconnector's S3Checkpoint vs boto3 upload_fileobj/download_fileobj vs
  s3fs (run with its own overlay, --s3fs-site: aiobotocore pins an older botocore);
- dcp: torch.distributed.checkpoint save/load of a state sharded over
  --dcp-ranks processes (gloo) with spool.torch.dcp vs s3torchconnector.dcp vs
  FileSystemWriter to local disk followed by `spool cp -r` (and back);
- tfdata: tf.data TFRecordDataset + parse_example vs spool's RecordReader +
  parse_examples on the same local shards (NONE, GZIP), records per CPU second.

Every measured run is its own process (`--one`), so that peak RSS and client
CPU (user+sys of it and the children it waited for: DataLoader workers, the
AWS CLI) belong to that case alone; the peers alternate within each round and
the figure is the median over rounds with min-max. Time to first batch counts
from constructing the dataset (imports excluded). Prints Markdown, writes --json.

    bench/python/peers.sh <build dir> [--cases streaming,checkpoint,dcp,tfdata] [--full] [--dry-run]
"""

from __future__ import annotations

import argparse
import contextlib
import importlib.util
import io
import json
import os
import random
import resource
import shutil
import statistics
import struct
import subprocess
import sys
import tempfile
import time
import types
from typing import Any, Callable, Dict, Iterator, List, Optional

CASES = ("streaming", "checkpoint", "dcp", "tfdata")
BATCH = 32


# ---------------------------------------------------------------- measuring one run (in its own process)

def _cpu() -> float:
    own, kids = resource.getrusage(resource.RUSAGE_SELF), resource.getrusage(resource.RUSAGE_CHILDREN)
    return own.ru_utime + own.ru_stime + kids.ru_utime + kids.ru_stime


class Clock:
    """Wall and CPU since construction, and the time the first batch arrived."""

    def __init__(self) -> None:
        self.cpu, self.start, self.first = _cpu(), time.monotonic(), None

    def batch(self) -> None:
        if self.first is None:
            self.first = time.monotonic() - self.start

    def result(self, samples: int, nbytes: int) -> Dict[str, float]:
        seconds = time.monotonic() - self.start
        return {"seconds": seconds, "samples": samples, "bytes": nbytes, "cpu_seconds": _cpu() - self.cpu,
                "first_batch_s": self.first if self.first is not None else seconds}


def _peak_rss_mib() -> float:
    """The largest process's peak: this one's (VmHWM: ru_maxrss would carry the
    launcher's peak over exec) or a child's it waited for (a worker, the AWS CLI)."""
    with open("/proc/self/status") as f:
        own = next(int(line.split()[1]) for line in f if line.startswith("VmHWM:"))
    return max(own, resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss) / 1024


def _why(error: BaseException) -> str:
    """One line: the innermost error's type and message (DCP wraps the rank's in its own)."""
    lines = [line.strip() for line in f"{type(error).__name__}: {error}".splitlines() if line.strip()]
    return (lines[-1] if lines else type(error).__name__)[:300]


def _s3() -> Any:
    import boto3
    return boto3.client("s3", endpoint_url=os.environ["AWS_ENDPOINT_URL"], region_name="us-east-1")


def _split(url: str) -> tuple:
    bucket, _, key = url[len("s3://"):].partition("/")
    return bucket, key


def _import_mosaic() -> Any:
    """MosaicML Streaming's package __init__ also imports its vision datasets,
    which need torchvision; PyPI's torchvision is built against CUDA torch and
    fails to load beside the CPU build pinned here. The measured classes live
    in streaming.base, so load that without the package __init__."""
    if "streaming" not in sys.modules:
        spec = importlib.util.find_spec("streaming")
        package = types.ModuleType("streaming")
        package.__path__ = list(spec.submodule_search_locations)
        sys.modules["streaming"] = package
    import streaming.base
    return streaming.base


def _tfrecord_records(body: bytes) -> Iterator[bytes]:
    """TFRecord framing walked in Python (length, its CRC, payload, its CRC; CRCs not checked)."""
    offset, end = 0, len(body)
    while offset < end:
        (length,) = struct.unpack_from("<Q", body, offset)
        yield body[offset + 12:offset + 12 + length]
        offset += 16 + length


def _s3_config() -> Any:
    from s3torchconnector import S3ClientConfig
    return S3ClientConfig(force_path_style=True)


def _batches(iterable: Any, workers: int = 0) -> Any:
    import torch
    return torch.utils.data.DataLoader(iterable, batch_size=BATCH, num_workers=workers, collate_fn=list)


def one_streaming(peer: str, data: Dict[str, Any]) -> Dict[str, Any]:
    endpoint = os.environ["AWS_ENDPOINT_URL"]
    if peer.startswith("spool"):
        import torch
        import spool.torch
        workers = int(peer.split("-w")[1])
        clock = Clock()
        dataset = spool.torch.StreamingDataset(data["manifest"], batch_size=BATCH, shuffle=False)
        samples = nbytes = 0
        for batch in torch.utils.data.DataLoader(dataset, batch_size=None, num_workers=workers):
            clock.batch()
            samples += len(batch)
            nbytes += sum(len(r) for r in batch)
        return clock.result(samples, nbytes)
    if peer.startswith("s3torchconnector"):
        from s3torchconnector import S3IterableDataset
        clock = Clock()
        objects = S3IterableDataset.from_prefix(data["tfrecord_prefix"], region="us-east-1", endpoint=endpoint,
                                                s3client_config=_s3_config())
        samples = nbytes = 0
        if peer == "s3torchconnector-raw":  # whole objects, no framing: the transport alone
            for obj in objects:
                nbytes += len(obj.read())
                clock.batch()
            return clock.result(data["records"], nbytes)

        class Records(torch_iterable()):
            def __iter__(self) -> Iterator[bytes]:
                for obj in objects:
                    yield from _tfrecord_records(obj.read())

        for batch in _batches(Records()):
            clock.batch()
            samples += len(batch)
            nbytes += sum(len(r) for r in batch)
        return clock.result(samples, nbytes)
    if peer == "mosaic":
        base = _import_mosaic()
        base.util.clean_stale_shared_memory()
        cache = data["mosaic_cache"]
        shutil.rmtree(cache, ignore_errors=True)
        results = {}
        clock = Clock()
        dataset = base.StreamingDataset(remote=data["mds_remote"], local=cache, shuffle=False, batch_size=BATCH)
        for epoch in (1, 2):
            if epoch == 2:
                clock = Clock()
            samples = nbytes = 0
            for batch in _batches(dataset):
                clock.batch()
                samples += len(batch)
                nbytes += sum(len(s["data"]) for s in batch)
            results[f"epoch{epoch}"] = clock.result(samples, nbytes)
        shutil.rmtree(cache, ignore_errors=True)
        return results
    if peer == "webdataset":
        import webdataset as wds
        clock = Clock()
        aws = f"aws s3 cp --only-show-errors --endpoint-url {endpoint}"
        urls = [f"pipe:{aws} {u} -" for u in data["tar_urls"]]
        samples = nbytes = 0
        for batch in _batches(wds.WebDataset(urls, shardshuffle=False).to_tuple("bin")):
            clock.batch()
            samples += len(batch)
            nbytes += sum(len(s[0]) for s in batch)
        return clock.result(samples, nbytes)
    raise ValueError(f"unknown streaming peer {peer}")


def torch_iterable() -> type:
    import torch
    return torch.utils.data.IterableDataset


def _state(mib: int) -> Dict[str, Any]:
    import torch
    generator = torch.Generator().manual_seed(1)
    return {f"layer{i}.weight": torch.randn(8 << 20, generator=generator) for i in range(max(1, mib // 32))}


def one_checkpoint(peer: str, data: Dict[str, Any]) -> Dict[str, Any]:
    import torch
    state = _state(data["state_mib"])
    size = sum(t.numel() * t.element_size() for t in state.values())
    url = f"{data['prefix']}/checkpoint/{peer}.pt"
    bucket, key = _split(url)
    out: Dict[str, Any] = {}

    def timed(name: str, run: Callable[[], Any]) -> None:
        clock = Clock()
        try:
            run()
            out[name] = clock.result(1, size)
        except Exception as e:  # a peer that cannot talk to this server: say how, do not stop the bench
            out[name] = {"error": _why(e)}

    if peer == "spool":
        import spool.torch
        timed("save", lambda: spool.torch.save(state, url))
        timed("load", lambda: spool.torch.load(url))
    elif peer == "spool-mmap":
        # A peer of its own, so that its load too follows its own save (a load
        # right after a save runs while the server still writes the save away).
        import spool.torch
        spool.torch.save(state, url)

        def load_mapped() -> None:
            # Mapped tensors are filled when first touched: touch a byte of
            # every page inside the clock, so the state is as materialised as
            # the copies the other loads return.
            for tensor in spool.torch.load(url, mmap=True).values():
                tensor.view(torch.uint8)[::4096].sum()
        timed("load", load_mapped)
    elif peer == "boto3":
        s3 = _s3()

        def save() -> None:
            buffer = io.BytesIO()
            torch.save(state, buffer)
            buffer.seek(0)
            s3.upload_fileobj(buffer, bucket, key)

        def load() -> None:
            buffer = io.BytesIO()
            s3.download_fileobj(bucket, key, buffer)
            buffer.seek(0)
            torch.load(buffer)
        timed("save", save)
        timed("load", load)
    elif peer == "s3fs":
        import s3fs
        fs = s3fs.S3FileSystem(endpoint_url=os.environ["AWS_ENDPOINT_URL"])

        def save() -> None:
            with fs.open(f"{bucket}/{key}", "wb") as f:
                torch.save(state, f)

        def load() -> None:
            with fs.open(f"{bucket}/{key}", "rb") as f:
                torch.load(f)
        timed("save", save)
        timed("load", load)
    elif peer == "s3torchconnector":
        from s3torchconnector import S3Checkpoint
        checkpoint = S3Checkpoint(region="us-east-1", endpoint=os.environ["AWS_ENDPOINT_URL"],
                                  s3client_config=_s3_config())

        def save() -> None:
            with checkpoint.writer(url) as f:
                torch.save(state, f)

        def load() -> None:
            with checkpoint.reader(url) as f:
                torch.load(f)
        timed("save", save)
        if "error" in out["save"]:  # load what boto3 wrote instead (the same torch.save bytes)
            buffer = io.BytesIO()
            torch.save(state, buffer)
            _s3().put_object(Bucket=bucket, Key=key, Body=buffer.getvalue())
            out["load_note"] = "object written by boto3 (its own save failed)"
        timed("load", load)
    else:
        raise ValueError(f"unknown checkpoint peer {peer}")
    return out


def _sharded_state(mib: int, rank: int, ranks: int) -> Dict[str, Any]:
    """`mib` MiB in all, as 64 MiB tensors sharded by rows over the ranks (DTensor,
    Shard(0)): each rank holds and writes only its own rows, as under FSDP."""
    import torch
    from torch.distributed.device_mesh import init_device_mesh
    from torch.distributed.tensor import DTensor, Shard
    mesh = init_device_mesh("cpu", (ranks,))
    generator = torch.Generator().manual_seed(1 + rank)
    rows = (16 << 20) // 1024 // ranks  # a 64 MiB tensor is 16 Mi floats, 1,024 per row
    return {f"layer{i}.weight": DTensor.from_local(torch.randn(rows, 1024, generator=generator), mesh, [Shard(0)],
                                                   run_check=False)
            for i in range(max(1, mib // 64))}


def _spool(*argv: str) -> None:
    """Runs the build's spool command (SPOOL_CLI), quietly; a failure raises."""
    subprocess.run([os.environ.get("SPOOL_CLI", "spool"), "--quiet", *argv], check=True, stdout=subprocess.DEVNULL)


def _spool_cp(source: str, destination: str) -> None:
    _spool("cp", "-r", source, destination)


def _spool_rm(prefix: str) -> None:
    """Deletes what a case wrote under `prefix` once its rounds are over. Kept,
    the cases write about 34 GB at the issue's sizes (each DCP round under a
    new prefix), which with the transfer cases' data fills the bench's 40 GB
    OSD past its full ratio (95%); RGW then holds every write until it times out."""
    _spool("rm", "-r", prefix + "/")


def _dcp_rank(rank: int, peer: str, data: Dict[str, Any], port: int, scratch: str) -> None:
    """One rank of a DCP save and load (gloo). Every operation starts and ends at a
    barrier; rank 0 writes the times, so each is the slowest rank's."""
    import datetime
    import torch
    import torch.distributed as dist
    import torch.distributed.checkpoint as dcp
    ranks = data["ranks"]
    os.environ.update(MASTER_ADDR="127.0.0.1", MASTER_PORT=str(port))
    dist.init_process_group("gloo", rank=rank, world_size=ranks, timeout=datetime.timedelta(minutes=10))
    state = _sharded_state(data["state_mib"], rank, ranks)
    target = {k: v.clone().zero_() for k, v in state.items()}
    size = data["state_mib"] << 20
    out: Dict[str, Any] = {}

    def timed(name: str, run: Callable[[], Any]) -> None:
        dist.barrier()
        clock = Clock()
        try:
            run()
            out[name] = clock.result(1, size)
        except BaseException as e:  # DCP's CheckpointException is a BaseException
            if isinstance(e, (KeyboardInterrupt, SystemExit)):
                raise
            out[name] = {"error": _why(e)}
        # Every rank's CPU (and its children's: spool cp), summed; the slowest
        # rank's time: the clock ends after the barrier.
        cpu = torch.tensor([_cpu() - clock.cpu], dtype=torch.float64)
        dist.all_reduce(cpu)
        if "error" not in out[name]:
            out[name].update(seconds=time.monotonic() - clock.start, cpu_seconds=float(cpu[0]))
        if name.startswith("load") and "error" not in out[name]:  # what was loaded is what was saved
            for key, tensor in state.items():
                if not torch.equal(tensor.to_local(), target[key].to_local()):
                    out[name] = {"error": f"rank {rank} loaded {key} wrong"}
            for tensor in target.values():
                tensor.to_local().zero_()

    def on_rank0(run: Callable[[], Any]) -> Callable[[], None]:
        def both() -> None:
            # The barrier even when rank 0's part fails: the other ranks wait
            # in it (a rank 0 that skipped it hung both until gloo's timeout).
            try:
                if rank == 0:
                    run()
            finally:
                dist.barrier()
        return both

    root = f"{data['prefix']}/dcp/{peer}-{port}"
    if peer == "spool":
        import spool.torch
        timed("save", lambda: dcp.save(state, storage_writer=spool.torch.dcp.StorageWriter(root, 1)))
        timed("load", lambda: dcp.load(target, storage_reader=spool.torch.dcp.StorageReader(root, 1)))
    elif peer == "filesystem+cp":
        saved, loaded = os.path.join(scratch, "saved"), os.path.join(scratch, "loaded")
        timed("save to disk", lambda: dcp.save(state, storage_writer=dcp.FileSystemWriter(saved)))
        timed("save (disk, then spool cp)", lambda: (dcp.save(state, storage_writer=dcp.FileSystemWriter(saved + "2")),
                                                      on_rank0(lambda: _spool_cp(saved + "2", root))()))
        timed("load (spool cp, then disk)", lambda: (on_rank0(lambda: _spool_cp(root, loaded))(),
                                                      dcp.load(target, storage_reader=dcp.FileSystemReader(loaded))))
        timed("load from disk", lambda: dcp.load(target, storage_reader=dcp.FileSystemReader(saved)))
    elif peer == "s3torchconnector":
        from s3torchconnector._s3client import S3Client
        from s3torchconnector.dcp import S3FileSystem, S3StorageReader, S3StorageWriter

        def at_endpoint(storage: Any) -> Any:
            """Its DCP classes take no endpoint: give their file system a client that has one."""
            client = S3Client("us-east-1", endpoint=os.environ["AWS_ENDPOINT_URL"], s3client_config=_s3_config())
            storage.fs = S3FileSystem("us-east-1", s3_client=client)
            storage.path = storage.fs.init_path(root)
            return storage

        timed("save", lambda: dcp.save(state, storage_writer=at_endpoint(
            S3StorageWriter("us-east-1", root, s3client_config=_s3_config()))))
        if "error" in out["save"]:  # load a FileSystemWriter checkpoint uploaded with spool cp instead
            folder = os.path.join(scratch, "for-s3tc")
            dcp.save(state, storage_writer=dcp.FileSystemWriter(folder))
            on_rank0(lambda: _spool_cp(folder, root))()
            out["load_note"] = "a FileSystemWriter checkpoint uploaded with spool cp (its own save failed)"
        timed("load", lambda: dcp.load(target, storage_reader=at_endpoint(
            S3StorageReader("us-east-1", root, s3client_config=_s3_config()))))
    else:
        raise ValueError(f"unknown dcp peer {peer}")
    if rank == 0:
        with open(os.path.join(scratch, "result.json"), "w") as f:
            json.dump(out, f)
    dist.destroy_process_group()


def one_dcp(peer: str, data: Dict[str, Any]) -> Dict[str, Any]:
    """data["ranks"] processes (forked, gloo) save and load a sharded state together."""
    import socket
    import torch.multiprocessing as mp
    with socket.socket() as s:  # a free port for the rendezvous
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    scratch = tempfile.mkdtemp(dir=data["local"])
    try:
        mp.start_processes(_dcp_rank, args=(peer, data, port, scratch), nprocs=data["ranks"], start_method="fork")
        with open(os.path.join(scratch, "result.json")) as f:
            return json.load(f)
    finally:
        shutil.rmtree(scratch, ignore_errors=True)


def one_tfdata(peer: str, data: Dict[str, Any]) -> Dict[str, Any]:
    files = data["tfdata_files"][data["compression"]]
    compression = data["compression"]
    if peer == "tf.data":
        import tensorflow as tf
        spec = {"image": tf.io.FixedLenFeature([], tf.string), "label": tf.io.FixedLenFeature([], tf.int64),
                "embedding": tf.io.FixedLenFeature([16], tf.float32)}
        clock = Clock()
        dataset = tf.data.TFRecordDataset(files, compression_type=compression if compression != "NONE" else "")
        samples = 0
        for batch in dataset.batch(256).map(lambda b: tf.io.parse_example(b, spec)):
            clock.batch()
            samples += int(batch["label"].shape[0])
        return clock.result(samples, 0)
    if peer == "spool":
        import spool
        spec = {"image": "bytes", "label": "int64", "embedding": ("float32", (16,))}
        clock = Clock()
        samples = 0
        for path in files:
            with spool.RecordReader(path) as reader:
                while True:
                    records = reader.read_batch(256)
                    if not records:
                        break
                    clock.batch()
                    samples += len(spool.parse_examples(records, spec)["label"])
        return clock.result(samples, 0)
    raise ValueError(f"unknown tfdata peer {peer}")


ONE = {"streaming": one_streaming, "checkpoint": one_checkpoint, "dcp": one_dcp, "tfdata": one_tfdata}


# ---------------------------------------------------------------- preparing the data (each peer's own writer)

def sample(i: int, size: int) -> bytes:
    """Sample i: `size` pseudo-random (incompressible) bytes, the same for every peer's writer."""
    return random.Random(i).randbytes(size)


def prepare_streaming(args: argparse.Namespace, name: str, records: int, size: int, shards: int) -> Dict[str, Any]:
    import spool
    prefix = f"{args.s3}/{name}"
    bucket, key = _split(prefix)
    with spool.ShardedWriter(f"{prefix}/tfrecord/data", shards) as writer:
        for i in range(records):
            writer.write(sample(i, size))
    data: Dict[str, Any] = {"records": records, "size": size, "manifest": f"{prefix}/tfrecord/data.manifest.json",
                            "tfrecord_prefix": f"{prefix}/tfrecord/data-"}
    mosaic = _import_mosaic()
    local = tempfile.mkdtemp(dir=args.local)
    with mosaic.MDSWriter(out=(local, f"{prefix}/mds"), columns={"data": "bytes"},
                          size_limit=max(1 << 20, records * size // shards)) as writer:
        for i in range(records):
            writer.write({"data": sample(i, size)})
    shutil.rmtree(local, ignore_errors=True)
    data.update(mds_remote=f"{prefix}/mds", mosaic_cache=os.path.join(args.local, f"mosaic-cache-{name}"))
    import webdataset as wds
    s3, per_shard, urls = _s3(), -(-records // shards), []
    for shard in range(shards):
        buffer = io.BytesIO()
        with wds.TarWriter(buffer) as tar:
            for i in range(shard * per_shard, min(records, (shard + 1) * per_shard)):
                tar.write({"__key__": f"{i:09d}", "bin": sample(i, size)})
        s3.put_object(Bucket=bucket, Key=f"{key}/tar/data-{shard:05d}.tar", Body=buffer.getvalue())
        urls.append(f"{prefix}/tar/data-{shard:05d}.tar")
    data["tar_urls"] = urls
    return data


def prepare_tfdata(args: argparse.Namespace, records: int) -> Dict[str, List[str]]:
    import numpy as np
    import spool
    files: Dict[str, List[str]] = {}
    for compression in ("NONE", "GZIP"):
        prefix = os.path.join(args.local, f"tfdata-{compression.lower()}")
        with spool.ShardedWriter(prefix, 4, compression=compression.lower()) as writer:
            for i in range(records):
                writer.write(spool.encode_example({"image": sample(i, 1024), "label": i % 10,
                                                   "embedding": np.full(16, i % 7, dtype=np.float32)}))
        files[compression] = sorted(os.path.join(args.local, f) for f in os.listdir(args.local)
                                    if f.startswith(os.path.basename(prefix) + "-") and ".tfrecord" in f)
    return files


# ---------------------------------------------------------------- running rounds

def run_one(args: argparse.Namespace, case: str, peer: str, data: Dict[str, Any]) -> Dict[str, Any]:
    env = dict(os.environ)
    if peer == "s3fs":  # aiobotocore pins an older botocore than the project's venv: its own overlay first
        env["PYTHONPATH"] = args.s3fs_site + os.pathsep + env.get("PYTHONPATH", "")
    r = subprocess.run([sys.executable, os.path.abspath(__file__), "--one", case, peer, json.dumps(data)],
                       capture_output=True, text=True, env=env, timeout=1800)
    if r.returncode != 0:
        return {"error": (r.stderr.strip().splitlines() or ["exit %d" % r.returncode])[-1][:300]}
    return json.loads(r.stdout.strip().splitlines()[-1])


def summarise(runs: List[Dict[str, Any]]) -> Dict[str, Any]:
    ok = [r for r in runs if "error" not in r]
    if not ok:
        return {"error": runs[0]["error"] if runs else "not run"}
    rate = [r["samples"] / r["seconds"] for r in ok]
    mbps = [r["bytes"] / r["seconds"] / 2**20 for r in ok]
    return {"samples_per_s": statistics.median(rate), "min": min(rate), "max": max(rate),
            "mib_per_s": statistics.median(mbps), "mib_min": min(mbps), "mib_max": max(mbps), "seconds": statistics.median(r["seconds"] for r in ok),
            "cpu_seconds": statistics.median(r["cpu_seconds"] for r in ok),
            "cpu_us_per_sample": statistics.median(1e6 * r["cpu_seconds"] / max(1, r["samples"]) for r in ok),
            "first_batch_s": statistics.median(r["first_batch_s"] for r in ok),
            "peak_rss_mib": max(r["peak_rss_mib"] for r in ok), "rounds": len(ok),
            **({"failed_rounds": len(runs) - len(ok)} if len(ok) < len(runs) else {})}


def rounds(args: argparse.Namespace, case: str, peers: List[str], data: Dict[str, Any], log) -> Dict[str, Any]:
    """Peers alternate within each round (the order rotates), each run a fresh process."""
    runs: Dict[str, List[Dict[str, Any]]] = {}
    for round_ in range(args.rounds):
        order = peers[round_ % len(peers):] + peers[:round_ % len(peers)]
        for peer in order:
            result = run_one(args, case, peer, data)
            parts = {k: v for k, v in result.items() if isinstance(v, dict)} or {"": result}
            for part, r in parts.items():
                name = f"{peer} {part}".strip()
                if "error" not in r:
                    r["peak_rss_mib"] = result.get("peak_rss_mib", 0)
                runs.setdefault(name, []).append(r)
                log(f"    {case} {name}: " + (r["error"] if "error" in r else
                                             f"{r['samples'] / r['seconds']:.0f}/s, {r['seconds']:.2f} s"))
            for k, v in result.items():
                if k.endswith("_note"):
                    runs.setdefault(f"{peer} note", []).append({"note": v})
    out = {}
    for name, rs in runs.items():
        out[name] = {"note": rs[0]["note"]} if name.endswith(" note") else summarise(rs)
    return out


def sizes(args: argparse.Namespace) -> Dict[str, Any]:
    if args.full:
        return {"big": (50_000, 100_000, 32), "small": (1_000_000, 1_000, 32), "state_mib": 1024, "tf": 200_000}
    return {"big": (args.records_100k, 100_000, 8), "small": (args.records_1k, 1_000, 8),
            "state_mib": args.state_mib, "tf": args.tf_records}


STREAMING_PEERS = ["s3torchconnector-raw", "s3torchconnector-parsed", "mosaic", "webdataset"]


def plan(args: argparse.Namespace) -> List[str]:
    s = sizes(args)
    lines = [f"rounds {args.rounds}; server {os.environ.get('AWS_ENDPOINT_URL', '(AWS_ENDPOINT_URL unset)')}; "
             f"s3 {args.s3}; local {args.local}"]
    if "streaming" in args.cases:
        peers = [f"spool-w{w}" for w in args.workers] + STREAMING_PEERS
        for label in ("big", "small"):
            n, size, shards = s[label]
            lines.append(f"streaming {n} x {size} B in {shards} shards: {', '.join(peers)}")
    if "checkpoint" in args.cases:
        lines.append(f"checkpoint {s['state_mib']} MiB: spool, s3torchconnector, boto3, s3fs")
    if "dcp" in args.cases:
        lines.append(f"dcp {s['state_mib']} MiB sharded over {args.dcp_ranks} ranks (gloo): spool, "
                     "s3torchconnector, filesystem+cp (FileSystemWriter to local disk, then spool cp)")
    if "tfdata" in args.cases:
        lines.append(f"tfdata {s['tf']} Examples, NONE and GZIP: tf.data, spool")
    return lines


def main() -> int:
    if len(sys.argv) > 1 and sys.argv[1] == "--one":
        case, peer, data = sys.argv[2], sys.argv[3], json.loads(sys.argv[4])
        result = ONE[case](peer, data)
        result["peak_rss_mib"] = _peak_rss_mib()
        print(json.dumps(result))
        return 0
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--s3", help="s3://bucket/prefix on the bench server")
    p.add_argument("--local", help="a local scratch folder (shards for tf.data, caches, DCP to local disk)")
    p.add_argument("--cases", default=",".join(CASES), type=lambda s: s.split(","))
    p.add_argument("--rounds", type=int, default=3)
    p.add_argument("--workers", default="0,2", type=lambda s: [int(w) for w in s.split(",")])
    p.add_argument("--records-100k", type=int, default=2000)
    p.add_argument("--records-1k", type=int, default=50000)
    p.add_argument("--state-mib", type=int, default=256)
    p.add_argument("--tf-records", type=int, default=50000)
    p.add_argument("--dcp-ranks", type=int, default=2, help="processes that save and load the DCP state together")
    p.add_argument("--full", action="store_true", help="the issue's sizes: 50,000 x 100 KB, 1,000,000 x 1 KB, "
                   "a 1 GiB state, num_workers 0, 2, 4")
    p.add_argument("--s3fs-site", default="", help="folder of s3fs and its pinned dependencies")
    p.add_argument("--json", help="write the results here")
    p.add_argument("--dry-run", action="store_true", help="print the plan and stop")
    args = p.parse_args()
    unknown = set(args.cases) - set(CASES)
    if unknown:
        p.error(f"unknown cases {','.join(sorted(unknown))}; known: {','.join(CASES)}")
    if args.full:
        args.workers = sorted(set(args.workers) | {0, 2, 4})
    if args.dry_run:
        print("\n".join("peers plan: " + line for line in plan(args)))
        return 0
    if not args.s3 or not args.local:
        p.error("--s3 and --local are needed")

    def log(message: str) -> None:
        print(message, file=sys.stderr, flush=True)

    @contextlib.contextmanager
    def phase(name: str) -> Iterator[None]:
        """Logs how long a part of the run took (what the default run's time budget is spent on)."""
        started = time.monotonic()
        yield
        log(f"  peers: {name} took {time.monotonic() - started:.0f} s")

    s = sizes(args)
    import spool  # the package measured: the build's, unless something earlier on sys.path shadows it
    results: Dict[str, Any] = {"plan": plan(args), "cpus": os.cpu_count(), "spool": os.path.dirname(spool.__file__)}
    log(f"  peers: spool from {results['spool']}")
    if "streaming" in args.cases:
        for label in ("big", "small"):
            n, size, shards = s[label]
            log(f"  peers: writing {n} x {size} B for every peer")
            with phase(f"writing {n} x {size} B in every peer's format"):
                data = prepare_streaming(args, f"stream-{label}", n, size, shards)
            peers = [f"spool-w{w}" for w in args.workers] + STREAMING_PEERS
            with phase(f"streaming {n} x {size} B"):
                results[f"streaming {n} x {size} B"] = rounds(args, "streaming", peers, data, log)
            _spool_rm(f"{args.s3}/stream-{label}")
    base = {"prefix": args.s3, "local": args.local, "state_mib": s["state_mib"], "ranks": args.dcp_ranks}
    if "checkpoint" in args.cases:
        with phase("checkpoint"):
            results[f"checkpoint {s['state_mib']} MiB"] = rounds(
                args, "checkpoint", ["spool", "spool-mmap", "s3torchconnector", "boto3", "s3fs"], base, log)
        _spool_rm(f"{args.s3}/checkpoint")
    if "dcp" in args.cases:
        with phase("dcp"):
            results[f"dcp {s['state_mib']} MiB, {args.dcp_ranks} ranks"] = rounds(
                args, "dcp", ["spool", "s3torchconnector", "filesystem+cp"], base, log)
        _spool_rm(f"{args.s3}/dcp")
    if "tfdata" in args.cases:
        with phase("tfdata"):
            files = prepare_tfdata(args, s["tf"])
            for compression in ("NONE", "GZIP"):
                results[f"tfdata {s['tf']} Examples {compression}"] = rounds(
                    args, "tfdata", ["tf.data", "spool"], dict(base, tfdata_files=files, compression=compression),
                    log)
    results["goals"] = goals(results)
    print(markdown(results))
    if args.json:
        with open(args.json, "w") as f:
            json.dump(results, f, indent=2)
    return 0


# Peers that stream from S3 and deliver samples: the ones a streaming goal compares with. Not
# s3torchconnector-raw (whole objects, no records) nor MosaicML's epoch 2 (from its local disk cache).
S3_SAMPLE_PEERS = ("s3torchconnector-parsed", "mosaic epoch1", "webdataset")


def goals(results: Dict[str, Any]) -> List[Dict[str, Any]]:
    """Issue #40 item 1's goals, each as a ratio within this run."""
    out: List[Dict[str, Any]] = []

    def goal(name: str, value: str, met: bool) -> None:
        out.append({"goal": name, "value": value, "met": met})

    def ok(rows: Dict[str, Any], names: Any) -> Dict[str, Any]:
        return {n: r for n, r in rows.items() if n in names and "samples_per_s" in r}

    for section, rows in results.items():
        if not isinstance(rows, dict):
            continue
        if section.startswith("streaming"):
            ours = ok(rows, [n for n in rows if n.startswith("spool")])
            peers = ok(rows, S3_SAMPLE_PEERS)
            if not ours or not peers:
                continue
            mine = max(ours.items(), key=lambda kv: kv[1]["samples_per_s"])
            best = max(peers.items(), key=lambda kv: kv[1]["samples_per_s"])
            ratio = mine[1]["samples_per_s"] / best[1]["samples_per_s"]
            cpu = mine[1]["cpu_us_per_sample"] / best[1]["cpu_us_per_sample"]
            goal(f"{section}: samples/s >= 1.3x the best peer ({best[0]}) at <= its CPU per sample",
                 f"{mine[0]} {ratio:.2f}x at {cpu:.2f}x its CPU/sample", ratio >= 1.3 and cpu <= 1.0)
            first = min(r["first_batch_s"] for r in ours.values())
            peer_first = min(peers.items(), key=lambda kv: kv[1]["first_batch_s"])
            goal(f"{section}: time to first batch <= the best peer's ({peer_first[0]})",
                 f"{first:.3f} s vs {peer_first[1]['first_batch_s']:.3f} s", first <= peer_first[1]["first_batch_s"])
        elif section.startswith("checkpoint"):
            for mine_name, op in (("spool save", "save"), ("spool load", "load"), ("spool-mmap load", "load")):
                mine = rows.get(mine_name, {})
                peers = {n: r for n, r in rows.items() if n.endswith(f" {op}") and not n.startswith("spool")
                         and "mib_per_s" in r}
                if "mib_per_s" not in mine or not peers:
                    continue
                best = max(peers.items(), key=lambda kv: kv[1]["mib_per_s"])
                ratio = mine["mib_per_s"] / best[1]["mib_per_s"]
                call = f"{op}(mmap=True)" if mine_name.startswith("spool-mmap") else op
                goal(f"{section}: spool.torch.{call} >= 1.3x the best peer ({best[0]})",
                     f"{ratio:.2f}x ({mine['mib_per_s']:.0f} vs {best[1]['mib_per_s']:.0f} MiB/s)", ratio >= 1.3)
        elif section.startswith("tfdata"):
            mine, tf = rows.get("spool", {}), rows.get("tf.data", {})
            if mine.get("cpu_us_per_sample") and tf.get("cpu_us_per_sample"):
                per_core = {"spool": 1e6 / mine["cpu_us_per_sample"], "tf": 1e6 / tf["cpu_us_per_sample"]}
                ratio = per_core["spool"] / per_core["tf"]
                goal(f"{section}: read + Example decode >= 1.5x tf.data per core",
                     f"{ratio:.1f}x ({per_core['spool']:.0f} vs {per_core['tf']:.0f} records per CPU s)", ratio >= 1.5)
    return out


def markdown(results: Dict[str, Any]) -> str:
    lines = []
    if results.get("goals"):
        lines += ["", "| goal | measured | |", "|---|---|---|"]
        lines += [f"| {g['goal']} | {g['value']} | {'met' if g['met'] else 'MISSED'} |" for g in results["goals"]]
    for section, rows in results.items():
        if not isinstance(rows, dict):
            continue
        lines += ["", f"### {section}", "",
                  "| peer | samples/s (min-max) | MiB/s (min-max) | s | CPU us/sample | CPU s | first batch s | peak RSS MiB |",
                  "|---|---|---|---|---|---|---|---|"]
        for name, r in rows.items():
            if "note" in r:
                lines.append(f"| {name} | {r['note']} |||||||")
            elif "error" in r:
                lines.append(f"| {name} | blocked: {r['error']} |||||||")
            else:
                lines.append(f"| {name} | {r['samples_per_s']:.0f} ({r['min']:.0f}-{r['max']:.0f}) | "
                             f"{r['mib_per_s']:.0f} ({r['mib_min']:.0f}-{r['mib_max']:.0f}) | {r['seconds']:.2f} | {r['cpu_us_per_sample']:.1f} | "
                             f"{r['cpu_seconds']:.2f} | {r['first_batch_s']:.3f} | {r['peak_rss_mib']:.0f} |")
    return "\n".join(lines)


if __name__ == "__main__":
    sys.exit(main())
