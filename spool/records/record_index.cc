#include "spool/records/record_index.h"

#include <algorithm>
#include <charconv>

#include "spool/records/compression.h"
#include "spool/records/framing.h"
#include "spool/records/record_reader.h"

namespace spool::records {
namespace {

bool IsBlank(char c) { return c == ' ' || c == '\t'; }

// Parses one decimal number at the front of `text`, consuming it.
bool TakeNumber(std::string_view& text, uint64_t* value) {
  auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), *value);
  if (ec != std::errc() || end == text.data()) return false;
  text.remove_prefix(static_cast<size_t>(end - text.data()));
  return true;
}

void SkipBlanks(std::string_view& text) {
  while (!text.empty() && IsBlank(text.front())) text.remove_prefix(1);
}

}  // namespace

Result<RecordIndex> RecordIndex::Parse(std::string_view text, std::string_view what,
                                       std::optional<uint64_t> file_size) {
  const std::string advice = "; rebuild it from its shard";
  std::vector<IndexEntry> entries;
  uint64_t expected_offset = 0;
  size_t line_number = 0;
  while (!text.empty()) {
    ++line_number;
    size_t eol = text.find('\n');
    std::string_view line = text.substr(0, eol);
    text.remove_prefix(eol == std::string_view::npos ? text.size() : eol + 1);
    if (!line.empty() && line.back() == '\r') line.remove_suffix(1);
    const std::string where = std::string(what) + " line " + std::to_string(line_number);
    IndexEntry entry;
    SkipBlanks(line);
    if (!TakeNumber(line, &entry.offset)) {
      return InvalidArgumentError("bad index " + where + ": expected '<offset> <size>'" + advice);
    }
    const size_t before = line.size();
    SkipBlanks(line);
    if (line.size() == before || !TakeNumber(line, &entry.size)) {
      return InvalidArgumentError("bad index " + where + ": expected '<offset> <size>'" + advice);
    }
    SkipBlanks(line);
    if (!line.empty()) {
      return InvalidArgumentError("bad index " + where + ": unexpected text after '<offset> <size>'" + advice);
    }
    if (entry.size < kFramingSize) {
      return InvalidArgumentError("bad index " + where + ": a record takes at least 16 bytes, not " +
                                  std::to_string(entry.size) + advice);
    }
    if (entry.offset != expected_offset) {
      return InvalidArgumentError("bad index " + where + ": record starts at " + std::to_string(entry.offset) +
                                  " but the previous one ends at " + std::to_string(expected_offset) + advice);
    }
    if (entry.offset > UINT64_MAX - entry.size) {
      return InvalidArgumentError("bad index " + where + ": offset + size overflows" + advice);
    }
    expected_offset = entry.offset + entry.size;
    if (file_size && expected_offset > *file_size) {
      return InvalidArgumentError("bad index " + where + ": record ends at " + std::to_string(expected_offset) +
                                  ", past the end of the " + std::to_string(*file_size) + "-byte shard" + advice);
    }
    entries.push_back(entry);
  }
  if (file_size && expected_offset != *file_size) {
    return InvalidArgumentError("index " + std::string(what) + " covers " + std::to_string(expected_offset) +
                                " bytes but the shard has " + std::to_string(*file_size) + advice);
  }
  return RecordIndex(std::move(entries));
}

Result<RecordIndex> RecordIndex::Load(ObjectStore& store, std::string_view index_key,
                                      std::optional<uint64_t> shard_size) {
  SPOOL_ASSIGN_OR_RETURN(std::string text, ReadAll(store, index_key));
  return Parse(text, store.Describe(index_key), shard_size);
}

Result<RecordIndex> RecordIndex::Build(ObjectStore& store, std::string_view shard_key) {
  if (CompressionFromExtension(shard_key) != Compression::kNone) {
    return InvalidArgumentError("cannot index " + store.Describe(shard_key) +
                                ": index files describe uncompressed shards only");
  }
  RecordReaderOptions options;
  options.compression = Compression::kNone;
  SPOOL_ASSIGN_OR_RETURN(auto reader, RecordReader::Open(store, shard_key, options));
  RecordIndex index;
  std::string_view record;
  while (true) {
    SPOOL_ASSIGN_OR_RETURN(bool more, reader->Next(&record));
    if (!more) break;
    index.Add(reader->record_offset(), record.size() + kFramingSize);
  }
  // The reader ends quietly at a fragment too short for a record's header;
  // an index of the records before it would not describe the file (Load
  // refuses it) and its readers would take the fragment for no bytes.
  if (index.end_offset() != reader->object_size()) {
    return DataLossError(store.Describe(shard_key) + " is " + std::to_string(reader->object_size()) +
                         " bytes but its records end at byte " + std::to_string(index.end_offset()) +
                         ": the shard is damaged or being written; index it once it is whole, or rewrite it");
  }
  return index;
}

std::string RecordIndex::Serialize() const {
  std::string text;
  text.reserve(entries_.size() * 16);
  for (const IndexEntry& entry : entries_) {
    text += std::to_string(entry.offset);
    text += ' ';
    text += std::to_string(entry.size);
    text += '\n';
  }
  return text;
}

std::optional<uint64_t> RecordIndex::RecordAt(uint64_t offset) const {
  auto it = std::lower_bound(entries_.begin(), entries_.end(), offset,
                             [](const IndexEntry& entry, uint64_t value) { return entry.offset < value; });
  if (it == entries_.end() || it->offset != offset) return std::nullopt;
  return static_cast<uint64_t>(it - entries_.begin());
}

std::string IndexKeyFor(std::string_view shard_key) { return std::string(shard_key) + ".idx"; }

}  // namespace spool::records
