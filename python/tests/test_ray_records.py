"""spool.ray.RecordsDatasink: Parquet -> Ray Data (local) -> TFRecord shards, committed once."""

from __future__ import annotations

import os

import pyarrow as pa
import pyarrow.compute  # noqa: F401  (pa.compute)
import pytest

pytestmark = pytest.mark.engines

import engines_data as data  # noqa: E402

import spool  # noqa: E402

ray = pytest.importorskip("ray")
import spool.ray  # noqa: E402


@pytest.fixture(scope="module", autouse=True)
def local_ray():
    # Workers unpickle this module's batch functions by name.
    here = os.path.dirname(os.path.abspath(__file__))
    os.environ["PYTHONPATH"] = os.pathsep.join(filter(None, [here, os.environ.get("PYTHONPATH")]))
    ray.init(num_cpus=2, include_dashboard=False, log_to_driver=False, _node_ip_address="127.0.0.1")
    ray.data.DataContext.get_current().enable_progress_bars = False
    yield
    ray.shutdown()


@pytest.fixture(scope="module")
def parquet(tmp_path_factory) -> str:
    return data.write_parquet(str(tmp_path_factory.mktemp("parquet")))


def test_parquet_to_shards_every_row_once_with_its_values(parquet, root):
    prefix = f"{root}/ray/train"
    sink = spool.ray.RecordsDatasink(prefix)
    ray.data.read_parquet(parquet).repartition(3).write_datasink(sink)
    manifest = sink.manifest
    assert manifest is not None and len(manifest.shards) >= 1
    data.check_exactly_once(manifest)
    data.check_no_leftovers(manifest, prefix)
    if not prefix.startswith("s3://"):
        data.check_values_with_tensorflow(manifest)


class _FailFirstAttempt:
    """Fails the first time it sees row 999 (a marker file says it did)."""

    def __init__(self, marker: str) -> None:
        self.marker = marker

    def __call__(self, batch: pa.Table) -> pa.Table:
        import os

        if 999 in batch["id"].to_pylist() and not os.path.exists(self.marker):
            open(self.marker, "w").close()
            raise RuntimeError("injected failure of a first attempt")
        return batch


def test_retried_task_leaves_each_row_once(parquet, root, tmp_path):
    prefix = f"{root}/ray-retried/train"
    sink = spool.ray.RecordsDatasink(prefix, compression="gzip", compression_level="fast")
    ds = ray.data.read_parquet(parquet).repartition(3).map_batches(
        _FailFirstAttempt(str(tmp_path / "failed-once")), batch_format="pyarrow", max_retries=3,
        retry_exceptions=True)
    ds.write_datasink(sink)
    data.check_exactly_once(sink.manifest)
    data.check_no_leftovers(sink.manifest, prefix)


def test_failed_write_leaves_nothing(parquet, root):
    prefix = f"{root}/ray-failed/train"

    def fail(batch):
        if 999 in batch["id"].to_pylist():
            raise RuntimeError("injected failure of every attempt")
        return batch

    ds = ray.data.read_parquet(parquet).repartition(3).map_batches(fail, batch_format="pyarrow")
    with pytest.raises(Exception, match="injected failure of every attempt"):
        ds.write_datasink(spool.ray.RecordsDatasink(prefix))
    assert data.files_under(prefix) == []


def test_unsupported_column_is_an_error_and_leaves_nothing(tmp_path):
    prefix = str(tmp_path / "bad" / "train")
    ds = ray.data.from_arrow(pa.table({"id": [1, 2], "when": pa.array([1, 2], pa.timestamp("s"))}))
    with pytest.raises(Exception, match="column 'when' has type timestamp"):
        ds.write_datasink(spool.ray.RecordsDatasink(prefix))
    assert not (tmp_path / "bad").exists() or data.files_under(prefix) == []


def _as_feature(value, type_):
    """A source value as read_records gives it back: a list of the feature's kind, None for null."""
    import numpy as np

    if value is None:
        return None
    values = value if isinstance(value, list) else [value]
    if pa.types.is_string(type_) or (pa.types.is_list(type_) and pa.types.is_string(type_.value_type)):
        return [v.encode() if isinstance(v, str) else v for v in values]
    if pa.types.is_floating(type_) or (pa.types.is_list(type_) and pa.types.is_floating(type_.value_type)):
        return [float(np.float32(v)) for v in values]
    if pa.types.is_binary(type_):
        return values
    return [int(v) for v in values]


def test_read_records_gives_back_every_row_and_value_with_nulls(parquet, root):
    prefix = f"{root}/ray-read/train"
    sink = spool.ray.RecordsDatasink(prefix)
    ray.data.read_parquet(parquet).repartition(3).write_datasink(sink)
    table = spool.ray.read_records(prefix).to_arrow_refs()
    got = pa.concat_tables(ray.get(table))
    ids = [row[0] for row in got["id"].to_pylist()]  # every feature is a list column
    got = got.take(sorted(range(got.num_rows), key=ids.__getitem__))
    source = data.table()
    assert got.num_rows == source.num_rows == data.ROWS
    assert set(got.column_names) == set(source.column_names)
    assert got["i32"].null_count == source["i32"].null_count > 0
    for name in source.column_names:
        want = [_as_feature(v, source.schema.field(name).type) for v in source[name].to_pylist()]
        assert got[name].to_pylist() == want, name


def test_read_records_with_the_tables_schema_gives_back_the_table(parquet, root):
    prefix = f"{root}/ray-read-schema/train"
    source = data.table()
    sink = spool.ray.RecordsDatasink(prefix)
    ray.data.read_parquet(parquet).repartition(3).write_datasink(sink)
    # The source's own types: scalars from the first value, strings decoded,
    # booleans and narrow integers narrowed, nulls where a feature is absent.
    got = pa.concat_tables(ray.get(spool.ray.read_records(prefix, schema=source.schema).to_arrow_refs()))
    got = got.take(pa.compute.sort_indices(got["id"]))
    assert got.schema == source.schema
    assert got["i32"].null_count == source["i32"].null_count > 0
    for name in source.column_names:
        assert got[name].to_pylist() == source[name].to_pylist(), name


def test_read_records_schema_with_a_type_no_feature_has_is_a_type_error_naming_it(parquet, tmp_path):
    prefix = str(tmp_path / "ray-read-bad-schema" / "train")
    ray.data.read_parquet(parquet).write_datasink(spool.ray.RecordsDatasink(prefix))
    with pytest.raises(TypeError, match="'when'"):
        spool.ray.RecordsDatasource(prefix, pa.schema([("id", pa.int64()), ("when", pa.timestamp("s"))]))


def test_read_records_refuses_a_manifest_naming_a_shard_outside_its_folder(tmp_path):
    # The manifest is read and checked as the loader reads it: a shard name
    # with ".." would otherwise read a file outside the dataset's folder.
    import json

    with spool.ShardedWriter(str(tmp_path / "ds" / "train"), 2) as writer:
        for i in range(4):
            writer.write(spool.encode_example({"id": i}))
    manifest = json.loads((tmp_path / "ds" / "train.manifest.json").read_text())
    (tmp_path / "secret.tfrecord").write_bytes(b"")
    manifest["shards"][0]["name"] = "../secret.tfrecord"
    (tmp_path / "ds" / "bad.manifest.json").write_text(json.dumps(manifest))
    with pytest.raises(ValueError, match="outside its folder"):
        spool.ray.RecordsDatasource(str(tmp_path / "ds" / "bad.manifest.json"),
                                    pa.schema([("id", pa.int64())]))


def test_read_records_of_a_dataset_without_a_schema_says_what_to_do(tmp_path):
    # Raw records (a ShardedWriter's manifest records no Example schema).
    with spool.ShardedWriter(str(tmp_path / "raw" / "train"), 2) as writer:
        for i in range(4):
            writer.write(b"record %d" % i)
    with pytest.raises(ValueError, match="has no schema.*RecordsDatasink.*schema="):
        spool.ray.RecordsDatasource(str(tmp_path / "raw" / "train"))
