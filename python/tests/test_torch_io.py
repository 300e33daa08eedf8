"""torch.save / torch.load of a state_dict straight through spool.open, no temporary file."""

from __future__ import annotations

import pytest
import torch

import spool


def test_state_dict_round_trip(root: str) -> None:
    model = torch.nn.Sequential(torch.nn.Linear(256, 512), torch.nn.ReLU(), torch.nn.Linear(512, 10))
    with spool.open(f"{root}/model.pt", "wb") as f:
        torch.save(model.state_dict(), f)
    with spool.open(f"{root}/model.pt", "rb") as f:
        loaded = torch.load(f, map_location="cpu")
    expected = model.state_dict()
    assert loaded.keys() == expected.keys()
    assert all(torch.equal(loaded[name], expected[name]) for name in expected)
