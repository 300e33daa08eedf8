"""The ranks of test_torch_dcp.py: each scenario runs in every rank of a gloo
process group on CPU, started by :func:`run_ranks` as spawned processes.

Every state is a function of the step alone, so any process can build what a
step must load as: a replicated plain tensor, a tensor sharded over the ranks
(DTensor, Shard(0) on a CPU mesh), a non-tensor value, and a model with its
Adam optimizer after one training step.
"""

from __future__ import annotations

import multiprocessing
import os
import signal
import sys
import traceback
from datetime import timedelta
from typing import Any, Callable, Dict, List, Sequence

import torch
import torch.distributed as dist
import torch.distributed.checkpoint as dcp
from torch.distributed.checkpoint.state_dict import get_state_dict, set_state_dict
from torch.distributed.tensor import DTensor, Shard, distribute_tensor, init_device_mesh

from spool.torch.dcp import StorageReader, StorageWriter

SHARDED_ROWS = 8  # divisible by 1, 2 and 4 ranks


def plain(step: int) -> torch.Tensor:
    return torch.arange(12, dtype=torch.float32).reshape(3, 4) * step


def sharded_full(step: int) -> torch.Tensor:
    return torch.arange(SHARDED_ROWS * 6, dtype=torch.float64).reshape(SHARDED_ROWS, 6) + 1000 * step


def trained(step: int) -> tuple[torch.nn.Module, torch.optim.Optimizer]:
    """A small model and its Adam state after `step` training steps of fixed data."""
    torch.manual_seed(7)
    model = torch.nn.Linear(4, 3)
    optimizer = torch.optim.Adam(model.parameters(), lr=0.1)
    for i in range(step):
        inputs = torch.full((2, 4), float(i + 1))
        model(inputs).square().sum().backward()
        optimizer.step()
        optimizer.zero_grad()
    return model, optimizer


def untrained() -> tuple[torch.nn.Module, torch.optim.Optimizer]:
    torch.manual_seed(99)
    model = torch.nn.Linear(4, 3)
    return model, torch.optim.Adam(model.parameters(), lr=0.1)


def state(step: int, world: int) -> Dict[str, Any]:
    """What a save of `step` on `world` ranks saves."""
    model, optimizer = trained(step)
    model_sd, optim_sd = get_state_dict(model, optimizer)
    sharded: Any = sharded_full(step)
    if world > 1:
        sharded = distribute_tensor(sharded, init_device_mesh("cpu", (world,)), [Shard(0)])
    return {"plain": plain(step), "sharded": sharded, "step": step, "model": model_sd, "optim": optim_sd}


def empty_state(world: int) -> tuple[Dict[str, Any], torch.nn.Module, torch.optim.Optimizer]:
    """Targets to load into: zeros, another model, a fresh optimizer."""
    model, optimizer = untrained()
    model_sd, optim_sd = get_state_dict(model, optimizer)
    sharded: Any = torch.zeros(SHARDED_ROWS, 6, dtype=torch.float64)
    if world > 1:
        sharded = distribute_tensor(sharded, init_device_mesh("cpu", (world,)), [Shard(0)])
    target = {"plain": torch.zeros(3, 4), "sharded": sharded, "step": -1, "model": model_sd, "optim": optim_sd}
    return target, model, optimizer


def check_loaded(target: Dict[str, Any], model: torch.nn.Module, optimizer: torch.optim.Optimizer,
                 step: int) -> None:
    """`target` (loaded by dcp.load) holds what `step` saved, and applies to the model and optimizer."""
    assert torch.equal(target["plain"], plain(step)), target["plain"]
    sharded = target["sharded"]
    if isinstance(sharded, DTensor):
        sharded = sharded.full_tensor()
    assert torch.equal(sharded, sharded_full(step)), sharded
    assert target["step"] == step
    set_state_dict(model, optimizer, model_state_dict=target["model"], optim_state_dict=target["optim"])
    expected_model, expected_optimizer = trained(step)
    for name, value in expected_model.state_dict().items():
        assert torch.equal(model.state_dict()[name], value), name
    got, want = optimizer.state_dict(), expected_optimizer.state_dict()
    assert got["param_groups"] == want["param_groups"]
    for key, values in want["state"].items():
        for name, value in values.items():
            assert torch.equal(torch.as_tensor(got["state"][key][name]), torch.as_tensor(value)), (key, name)


def load_and_check(root: str, step: int, world: int) -> None:
    target, model, optimizer = empty_state(world)
    reader = StorageReader(root, step)
    dcp.load(target, storage_reader=reader)
    check_loaded(target, model, optimizer, step)


# Scenarios: each runs on every rank with (rank, world, root, steps...).

def save_load(rank: int, world: int, root: str, step: int) -> None:
    """dcp.save of `step`, then dcp.load of it on the same ranks."""
    dcp.save(state(step, world), storage_writer=StorageWriter(root, step))
    load_and_check(root, step, world)


def async_save_load(rank: int, world: int, root: str, step: int) -> None:
    """dcp.async_save of `step` (waited for), then dcp.load of it."""
    future = dcp.async_save(state(step, world), storage_writer=StorageWriter(root), checkpoint_id=step)
    future.result()
    load_and_check(root, step, world)


def load_only(rank: int, world: int, root: str, step: int) -> None:
    """dcp.load of `step`, whatever world size saved it."""
    load_and_check(root, step, world)


def steps(rank: int, world: int, root: str, *scenarios: tuple[Callable[..., None], int]) -> None:
    """Several scenarios one after another in the same ranks (saves process start-ups)."""
    for scenario, step in scenarios:
        scenario(rank, world, root, step)
        dist.barrier()


class _KilledAfterUpload(StorageWriter):
    """Rank 1 is SIGKILLed once its items are uploaded and its part written, before the commit."""

    def write_data(self, plan, planner):  # type: ignore[no-untyped-def]
        future = super().write_data(plan, planner)
        if plan.storage_data.rank == 1:
            os.kill(os.getpid(), signal.SIGKILL)
        return future


def save_killed(rank: int, world: int, root: str, step: int) -> None:
    """A save of `step` in which rank 1 dies; the others must see it fail."""
    try:
        dcp.save(state(step, world), storage_writer=_KilledAfterUpload(root, step))
    except Exception:  # noqa: BLE001 (gloo's error for the lost peer)
        return
    raise AssertionError(f"rank {rank}: the save of step {step} succeeded although rank 1 was killed")


def _entry(rank: int, world: int, init_file: str, scenario: Callable[..., None], args: Sequence[Any]) -> None:
    try:
        dist.init_process_group("gloo", init_method=f"file://{init_file}", rank=rank, world_size=world,
                                timeout=timedelta(seconds=120))
        scenario(rank, world, *args)
        if scenario is not save_killed:  # its group lost a member: nothing to synchronise with
            dist.barrier()
    except BaseException:
        traceback.print_exc()
        os._exit(1)
    # Every rank is past its last collective: leave without destroying the
    # group or finalizing the interpreter. On a loaded machine torch's gloo
    # teardown (destroy_process_group, or its threads' destruction at exit,
    # always so in a group that lost a member) aborted ranks that had passed.
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(0)


def run_ranks(world: int, init_file: str, scenario: Callable[..., None], *args: Any,
              timeout: float = 420) -> List[int]:
    """Runs `scenario` on `world` spawned ranks; returns their exit codes."""
    context = multiprocessing.get_context("spawn")
    ranks = [context.Process(target=_entry, args=(rank, world, init_file, scenario, args)) for rank in range(world)]
    for process in ranks:
        process.start()
    for process in ranks:
        process.join(timeout)
    for process in ranks:
        if process.is_alive():
            process.kill()
            process.join()
    return [process.exitcode for process in ranks]
