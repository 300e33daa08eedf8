"""spool.metrics and the per-object figures, read with Debian's Prometheus parser."""

from __future__ import annotations

import gc
import os
import urllib.request

import pytest
from prometheus_client.parser import text_string_to_metric_families

import spool


def _families(text: str) -> dict:
    return {f.name: f for f in text_string_to_metric_families(text)}


def _write(root: str, records: int = 120) -> str:
    with spool.ShardedWriter(f"{root}/train", shards=3) as writer:
        for i in range(records):
            writer.write(b"record-%04d" % i)
    return writer.manifest.url


def test_an_open_loader_and_manager_report_in_the_text(root: str, tmp_path) -> None:
    manifest = _write(root)
    with spool.DataLoader(manifest, batch_size=10) as loader, \
            spool.CheckpointManager(f"{root}/ckpt") as ckpt:
        assert sum(len(batch) for batch in loader) == 120
        ckpt.save(1, {"weights.bin": b"w" * 1000})
        families = _families(spool.metrics.text())
        records = [s.value for s in families["spool_loader_records"].samples]
        assert sum(records) >= 120
        assert families["spool_loader_next_seconds"].type == "histogram"
        saves = [s.value for s in families["spool_checkpoint_saves"].samples]
        assert sum(saves) >= 1
        stats = ckpt.stats()
        assert stats["saves"] == 1 and stats["uploaded_bytes"] == 1000
        assert stats["blocked_seconds"]["count"] == 1
        assert stats["last_saved_step"] == 1
        counters = loader.counters()
        assert counters["next_seconds"]["count"] >= 12
        assert counters["memory_budget"] > 0
        requests = loader.requests()
        if root.startswith("s3://"):
            data = sum(requests.get(op, {}).get("bytes_received", 0) for op in ("get", "ranged_get"))
            assert data > 0
            assert requests["head"]["requests"] >= 1
            assert ckpt.stats()["requests"]["put"]["requests"] >= 1
        else:
            assert requests == {}  # local files: no requests
    # Gone (not only closed), they leave the registry.
    del loader, ckpt
    gc.collect()
    assert "spool_loader_records" not in _families(spool.metrics.text())


def test_serve_answers_on_the_loopback_and_writes_the_textfile(tmp_path) -> None:
    textfile = tmp_path / "spool.prom"
    with spool.metrics.serve(0, address="127.0.0.1", file=textfile) as server:
        assert server.port > 0
        with urllib.request.urlopen(f"http://127.0.0.1:{server.port}/metrics", timeout=10) as response:
            body = response.read().decode()
        assert response.headers["Content-Type"].startswith("text/plain; version=0.0.4")
        assert "spool_build_info" in _families(body)
    assert "spool_build_info" in _families(textfile.read_text())
    with pytest.raises(OSError):
        urllib.request.urlopen(f"http://127.0.0.1:{server.port}/metrics", timeout=2)


def test_serve_needs_a_port_or_a_file(monkeypatch) -> None:
    monkeypatch.delenv("SPOOL_METRICS_PORT", raising=False)
    monkeypatch.delenv("SPOOL_METRICS_FILE", raising=False)
    with pytest.raises(ValueError):
        spool.metrics.serve()
    monkeypatch.setenv("SPOOL_METRICS_PORT", "eighty")
    with pytest.raises(ValueError, match="SPOOL_METRICS_PORT"):
        spool.metrics.serve()


def test_a_forked_child_leaves_the_parents_server_alone() -> None:
    with spool.metrics.serve(0, address="127.0.0.1") as server:
        pid = os.fork()
        if pid == 0:  # the child: closing must neither hang nor stop the parent's server
            server.close()
            os._exit(0)
        _, status = os.waitpid(pid, 0)
        assert os.WIFEXITED(status) and os.WEXITSTATUS(status) == 0
        with urllib.request.urlopen(f"http://127.0.0.1:{server.port}/metrics", timeout=10) as response:
            assert response.status == 200
