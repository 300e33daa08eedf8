"""spool.lightning.CheckpointIO: a Lightning Trainer saves through spool to
local files, Ceph RGW (marked s3) and the project's GCS server, and resumes
from what it saved with ``ckpt_path=``.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import lightning.pytorch as pl
import pytest
import torch

import spool
import spool.lightning
from gcs_fixture import gcs_prefix  # noqa: F401 (a fixture)


class TinyModel(pl.LightningModule):
    def __init__(self) -> None:
        super().__init__()
        self.layer = torch.nn.Linear(4, 2)

    def training_step(self, batch: Any, batch_index: int) -> torch.Tensor:
        return self.layer(batch[0]).square().mean()

    def configure_optimizers(self) -> torch.optim.Optimizer:
        return torch.optim.Adam(self.parameters(), lr=0.1)

    def train_dataloader(self) -> torch.utils.data.DataLoader:
        inputs = torch.randn(32, 4, generator=torch.Generator().manual_seed(3))
        return torch.utils.data.DataLoader(torch.utils.data.TensorDataset(inputs), batch_size=4)


def trainer(max_steps: int, root_dir: Path) -> pl.Trainer:
    return pl.Trainer(max_steps=max_steps, plugins=[spool.lightning.CheckpointIO()], accelerator="cpu",
                      logger=False, enable_checkpointing=False, enable_progress_bar=False,
                      enable_model_summary=False, default_root_dir=root_dir)


@pytest.fixture(params=["local", pytest.param("s3", marks=pytest.mark.s3), "gcs"])
def checkpoint_url(tmp_path: Path, request: pytest.FixtureRequest) -> str:
    if request.param == "s3":
        return request.getfixturevalue("s3_prefix") + "/last.ckpt"
    if request.param == "gcs":
        return request.getfixturevalue("gcs_prefix") + "/last.ckpt"
    return str(tmp_path / "ckpt" / "last.ckpt")


def test_trainer_saves_and_resumes_through_spool(checkpoint_url: str, tmp_path: Path) -> None:
    """A tiny model trained 3 steps is saved to the URL; a new Trainer resumed
    from it (ckpt_path=) has the same weights, optimizer state and step, and
    goes on training from there."""
    torch.manual_seed(0)
    model = TinyModel()
    first = trainer(3, tmp_path)
    first.fit(model)
    first.save_checkpoint(checkpoint_url)
    saved = spool.stat(checkpoint_url)
    assert saved.size > 0

    torch.manual_seed(1)
    restored = TinyModel()
    assert not torch.equal(restored.layer.weight, model.layer.weight)
    second = trainer(3, tmp_path)
    second.fit(restored, ckpt_path=checkpoint_url)  # restores; max_steps reached already
    assert second.global_step == 3
    for name, value in model.state_dict().items():
        assert torch.equal(restored.state_dict()[name], value), name
    got, want = second.optimizers[0].state_dict(), first.optimizers[0].state_dict()
    for key, values in want["state"].items():
        for name, value in values.items():
            assert torch.equal(torch.as_tensor(got["state"][key][name]), torch.as_tensor(value)), (key, name)

    third = trainer(5, tmp_path)
    third.fit(restored, ckpt_path=checkpoint_url)  # two more steps after the restored three
    assert third.global_step == 5
    assert not torch.equal(restored.layer.weight, model.layer.weight)


def test_failed_save_publishes_nothing(checkpoint_url: str, tmp_path: Path) -> None:
    """A save that fails while writing leaves the previous checkpoint of the URL whole."""
    io = spool.lightning.CheckpointIO()
    io.save_checkpoint({"state": torch.arange(10)}, checkpoint_url)

    class Unpicklable:
        def __reduce__(self):  # noqa: ANN204
            raise RuntimeError("cannot pickle this")

    with pytest.raises(RuntimeError, match="cannot pickle"):
        io.save_checkpoint({"state": torch.zeros(10), "bad": Unpicklable()}, checkpoint_url)
    assert torch.equal(io.load_checkpoint(checkpoint_url)["state"], torch.arange(10))
    io.remove_checkpoint(checkpoint_url)
    io.remove_checkpoint(checkpoint_url)  # gone already: no error
    with pytest.raises(FileNotFoundError):
        io.load_checkpoint(checkpoint_url)
    with pytest.raises(TypeError, match="storage_options"):
        io.save_checkpoint({}, checkpoint_url, storage_options={"x": 1})
