#include "tests/loader/test_dataset.h"

#include <cstdio>

#include "spool/records/manifest.h"
#include "spool/records/record_writer.h"

namespace spool::testing {

using loader::Batch;
using loader::DataLoader;
using loader::LoaderState;

std::string RecordPayload(uint64_t shard, uint64_t record, uint64_t bytes) {
  char head[48];
  std::snprintf(head, sizeof(head), "s%llu-r%llu-", static_cast<unsigned long long>(shard),
                static_cast<unsigned long long>(record));
  std::string payload(head);
  payload.reserve(bytes);
  uint64_t x = shard * 1000003 + record;
  while (payload.size() < bytes) {
    x = x * 6364136223846793005ull + 1442695040888963407ull;
    payload.push_back(static_cast<char>('a' + (x >> 59)));
  }
  return payload;
}

Result<Dataset> WriteDataset(ObjectStore& store, const DatasetSpec& spec) {
  Dataset dataset;
  records::DatasetManifest manifest;
  manifest.set_format_version(records::kManifestFormatVersion);
  manifest.set_record_format("tfrecord");
  manifest.set_compression(std::string(records::CompressionName(spec.compression)));
  const size_t shards = spec.shard_records.size();
  for (size_t s = 0; s < shards; ++s) {
    char name[64];
    std::snprintf(name, sizeof(name), "-%05zu-of-%05zu.tfrecord", s, shards);
    std::string key = spec.prefix + name + std::string(records::CompressionExtension(spec.compression));
    records::RecordWriterOptions options;
    options.write_index = spec.write_index;
    SPOOL_ASSIGN_OR_RETURN(auto writer, records::RecordWriter::Open(store, key, options));
    for (uint64_t r = 0; r < spec.shard_records[s]; ++r) {
      dataset.records.push_back(RecordPayload(s, r, spec.record_bytes));
      SPOOL_RETURN_IF_ERROR(writer->Write(dataset.records.back()));
    }
    SPOOL_ASSIGN_OR_RETURN(records::WrittenFile file, writer->Close());
    auto* entry = manifest.add_shards();
    entry->set_name(key.substr(key.rfind('/') + 1));
    entry->set_records(file.records);
    entry->set_bytes(file.bytes);
    entry->set_crc32c(file.crc32c);
    if (!file.index_key.empty()) entry->set_index(file.index_key.substr(file.index_key.rfind('/') + 1));
    manifest.set_total_records(manifest.total_records() + file.records);
    manifest.set_total_bytes(manifest.total_bytes() + file.bytes);
    dataset.shard_keys.push_back(key);
  }
  dataset.glob = spec.prefix + "-*-of-*.tfrecord" + std::string(records::CompressionExtension(spec.compression));
  if (spec.write_manifest) {
    dataset.manifest_key = records::ManifestKeyFor(spec.prefix);
    SPOOL_ASSIGN_OR_RETURN(std::string json, records::ManifestToJson(manifest));
    SPOOL_RETURN_IF_ERROR(WriteAll(store, dataset.manifest_key, json).status());
  }
  return dataset;
}

Status Drain(DataLoader& loader, std::vector<std::string>* records, std::vector<LoaderState>* states,
             std::optional<size_t> max_batches) {
  for (size_t batches = 0; !max_batches || batches < *max_batches; ++batches) {
    SPOOL_ASSIGN_OR_RETURN(std::optional<Batch> batch, loader.Next());
    if (!batch) break;
    for (std::string_view record : batch->records) records->emplace_back(record);
    if (states) states->push_back(loader.State());
  }
  return OkStatus();
}

Status FlipByte(ObjectStore& store, const std::string& key, uint64_t offset) {
  SPOOL_ASSIGN_OR_RETURN(std::string data, ReadAll(store, key));
  if (offset >= data.size()) return InvalidArgumentError("offset past the end");
  data[offset] = static_cast<char>(data[offset] ^ 0x20);
  return WriteAll(store, key, data).status();
}

Status Truncate(ObjectStore& store, const std::string& key, uint64_t new_size) {
  SPOOL_ASSIGN_OR_RETURN(std::string data, ReadAll(store, key));
  data.resize(std::min<uint64_t>(new_size, data.size()));
  return WriteAll(store, key, data).status();
}

}  // namespace spool::testing
