// Compatibility with TensorFlow, Beam and TFX: every reference file in
// tests/data/tfrecord gives the records, digests, values and reader outcomes
// that expected.json lists; spool's writer reproduces TensorFlow's bytes and
// DALI's index files.
#include <openssl/evp.h>

#include <google/protobuf/struct.pb.h>
#include <google/protobuf/unknown_field_set.h>
#include <google/protobuf/util/json_util.h>

#include <bit>
#include <cmath>
#include <map>

#include <gtest/gtest.h>

#include "spool/core/storage/local_store.h"
#include "spool/core/storage/memory_store.h"
#include "spool/records/example.h"
#include "spool/records/record_index.h"
#include "spool/records/record_reader.h"
#include "spool/records/record_writer.h"
#include "tests/records/test_util.h"

namespace spool::records {
namespace {

using google::protobuf::ListValue;
using google::protobuf::Struct;
using google::protobuf::UnknownField;
using google::protobuf::UnknownFieldSet;
using google::protobuf::Value;

std::string Hex(std::string_view bytes) {
  static const char* digits = "0123456789abcdef";
  std::string out;
  for (unsigned char c : bytes) {
    out.push_back(digits[c >> 4]);
    out.push_back(digits[c & 15]);
  }
  return out;
}

class Sha256 {
 public:
  Sha256() : ctx_(EVP_MD_CTX_new()) { EVP_DigestInit_ex(ctx_, EVP_sha256(), nullptr); }
  ~Sha256() { EVP_MD_CTX_free(ctx_); }
  void Update(std::string_view data) { EVP_DigestUpdate(ctx_, data.data(), data.size()); }
  std::string HexDigest() {
    unsigned char digest[32];
    unsigned int size = 0;
    EVP_DigestFinal_ex(ctx_, digest, &size);
    return Hex(std::string_view(reinterpret_cast<char*>(digest), size));
  }

 private:
  EVP_MD_CTX* ctx_;
};

// expected.json writes +-Infinity as bare words, which JSON (and protobuf's
// parser) does not allow; quote them so they arrive as strings.
std::string QuoteInfinities(std::string json) {
  std::string out;
  for (size_t i = 0; i < json.size(); ++i) {
    if (json.compare(i, 8, "Infinity") == 0 && (i == 0 || json[i - 1] != '"')) {
      const bool negative = !out.empty() && out.back() == '-';
      if (negative) out.pop_back();
      out += negative ? "\"-Infinity\"" : "\"Infinity\"";
      i += 7;
    } else {
      out.push_back(json[i]);
    }
  }
  return out;
}

const Struct& Manifest() {
  static const Struct* manifest = [] {
    auto* parsed = new Struct;
    std::string json = QuoteInfinities(testing::ReadFile(testing::DataDir() / "expected.json"));
    auto status = google::protobuf::util::JsonStringToMessage(json, parsed);
    EXPECT_TRUE(status.ok()) << status.ToString();
    return parsed;
  }();
  return *manifest;
}

const Value* Get(const Struct& s, const std::string& name) {
  auto it = s.fields().find(name);
  return it == s.fields().end() ? nullptr : &it->second;
}
std::string GetString(const Struct& s, const std::string& name) {
  const Value* v = Get(s, name);
  return v ? v->string_value() : "";
}
double ToDouble(const Value& v) {
  if (v.kind_case() == Value::kStringValue) return v.string_value()[0] == '-' ? -INFINITY : INFINITY;
  return v.number_value();
}

struct ReadOutcome {
  std::vector<std::string> records;
  Status status;
};

ReadOutcome ReadFile(ObjectStore& store, const std::string& key, RecordReaderOptions options = {}) {
  ReadOutcome outcome;
  auto reader = RecordReader::Open(store, key, options);
  if (!reader.ok()) {
    outcome.status = reader.status();
    return outcome;
  }
  std::string record;
  while (true) {
    auto more = (*reader)->Next(&record);
    if (!more.ok()) {
      outcome.status = more.status();
      break;
    }
    if (!*more) break;
    outcome.records.push_back(record);
  }
  return outcome;
}

std::string PayloadDigest(const std::vector<std::string>& records) {
  Sha256 sha;
  for (const std::string& record : records) {
    char length[8];
    for (int i = 0; i < 8; ++i) length[i] = static_cast<char>(static_cast<uint64_t>(record.size()) >> (8 * i));
    sha.Update(std::string_view(length, 8));
    sha.Update(record);
  }
  return sha.HexDigest();
}

// ---- decoded-value assertions ----------------------------------------------

const UnknownField* FirstField(const UnknownFieldSet& set, int number) {
  for (int i = 0; i < set.field_count(); ++i) {
    if (set.field(i).number() == number) return &set.field(i);
  }
  return nullptr;
}

std::string FixedBytes(uint64_t value, int size) {
  std::string out;
  for (int i = 0; i < size; ++i) out.push_back(static_cast<char>(value >> (8 * i)));
  return out;
}

// The assertions on a generic protobuf path ([5, 1, 8, 4]: first occurrence
// at each level), as expected.json states them.
std::string CheckFieldPath(const std::string& payload, const Struct& a) {
  std::vector<int> path;
  for (const Value& v : Get(a, "field_path")->list_value().values()) path.push_back(static_cast<int>(v.number_value()));
  std::vector<UnknownFieldSet> levels(path.size());
  std::string buffer = payload;
  const UnknownField* field = nullptr;
  for (size_t depth = 0; depth < path.size(); ++depth) {
    if (!levels[depth].ParseFromString(buffer)) return "cannot parse level " + std::to_string(depth);
    field = FirstField(levels[depth], path[depth]);
    if (field == nullptr) {
      if (Get(a, "absent") && depth + 1 == path.size()) return "";
      return "field path not present";
    }
    if (depth + 1 < path.size()) buffer = field->length_delimited();
  }
  if (const Value* v = Get(a, "string")) {
    return field->type() == UnknownField::TYPE_LENGTH_DELIMITED && field->length_delimited() == v->string_value()
               ? ""
               : "string mismatch";
  }
  if (const Value* v = Get(a, "hex")) {
    std::string bytes;
    if (field->type() == UnknownField::TYPE_LENGTH_DELIMITED) bytes = field->length_delimited();
    if (field->type() == UnknownField::TYPE_FIXED32) bytes = FixedBytes(field->fixed32(), 4);
    if (field->type() == UnknownField::TYPE_FIXED64) bytes = FixedBytes(field->fixed64(), 8);
    return Hex(bytes) == v->string_value() ? "" : "hex " + Hex(bytes) + " != " + v->string_value();
  }
  if (Get(a, "absent")) return "present but expected absent";
  if (const Value* v = Get(a, "varint")) {
    return field->type() == UnknownField::TYPE_VARINT &&
                   static_cast<double>(static_cast<int64_t>(field->varint())) == v->number_value()
               ? ""
               : "varint mismatch";
  }
  if (const Value* v = Get(a, "double")) {
    return field->type() == UnknownField::TYPE_FIXED64 &&
                   std::bit_cast<double>(field->fixed64()) == v->number_value()
               ? ""
               : "double mismatch";
  }
  if (const Value* v = Get(a, "map_entry")) {
    std::map<std::string, std::string> got;
    const UnknownFieldSet& parent = levels[path.size() - 1];
    for (int i = 0; i < parent.field_count(); ++i) {
      if (parent.field(i).number() != path.back()) continue;
      UnknownFieldSet entry;
      entry.ParseFromString(parent.field(i).length_delimited());
      const UnknownField* key = FirstField(entry, 1);
      const UnknownField* value = FirstField(entry, 2);
      got[key ? key->length_delimited() : ""] = value ? value->length_delimited() : "";
    }
    std::map<std::string, std::string> want;
    for (const auto& [k, val] : v->struct_value().fields()) want[k] = val.string_value();
    return got == want ? "" : "map mismatch";
  }
  return "unknown field_path assertion";
}

// tensorflow.Event fields the manifest names: wall_time 1, step 2,
// file_version 3, summary 5 (Summary.value 1 -> Value.tag 1).
std::string CheckEvent(const std::string& payload, const Struct& want) {
  UnknownFieldSet event;
  if (!event.ParseFromString(payload)) return "not a protobuf";
  for (const auto& [name, value] : want.fields()) {
    if (name == "wall_time") {
      const UnknownField* f = FirstField(event, 1);
      if (!f || std::bit_cast<double>(f->fixed64()) != value.number_value()) return "wall_time mismatch";
    } else if (name == "step") {
      const UnknownField* f = FirstField(event, 2);
      if (!f || static_cast<double>(f->varint()) != value.number_value()) return "step mismatch";
    } else if (name == "file_version") {
      const UnknownField* f = FirstField(event, 3);
      if (!f || f->length_delimited() != value.string_value()) return "file_version mismatch";
    } else if (name == "summary") {
      const UnknownField* f = FirstField(event, 5);
      if (!f) return "no summary";
      UnknownFieldSet summary;
      summary.ParseFromString(f->length_delimited());
      std::vector<std::string> tags;
      for (int i = 0; i < summary.field_count(); ++i) {
        UnknownFieldSet summary_value;
        summary_value.ParseFromString(summary.field(i).length_delimited());
        if (const UnknownField* tag = FirstField(summary_value, 1)) tags.push_back(tag->length_delimited());
      }
      std::vector<std::string> want_tags;
      for (const Value& t : Get(value.struct_value(), "tags")->list_value().values()) {
        want_tags.push_back(t.string_value());
      }
      if (tags != want_tags) return "summary tags mismatch";
    } else {
      return "unknown event field " + name;
    }
  }
  return "";
}

std::string CheckFeature(const std::string& payload, const Struct& a) {
  const std::string name = GetString(a, "feature");
  tensorflow::Features features;
  if (GetString(a, "container") == "context") {
    auto example = ParseSequenceExample(payload);
    if (!example.ok()) return example.status().ToString();
    features = example->context();
  } else {
    auto example = ParseExample(payload);
    if (!example.ok()) return example.status().ToString();
    features = example->features();
  }
  auto feature = GetFeature(features, name);
  if (!feature.ok()) return feature.status().ToString();
  const FeatureKind kind = KindOf(**feature);
  if (const Value* want = Get(a, "int64")) {
    auto values = GetInt64s(features, name);
    if (!values.ok() || kind != FeatureKind::kInt64) return "not an int64_list";
    if (values->size() != static_cast<size_t>(want->list_value().values_size())) return "int64 count mismatch";
    for (size_t i = 0; i < values->size(); ++i) {
      if (static_cast<double>((*values)[i]) != want->list_value().values(static_cast<int>(i)).number_value()) {
        return "int64 value mismatch at " + std::to_string(i);
      }
    }
    return "";
  }
  if (const Value* want = Get(a, "float")) {
    auto values = GetFloats(features, name);
    if (!values.ok() || kind != FeatureKind::kFloat) return "not a float_list";
    if (values->size() != static_cast<size_t>(want->list_value().values_size())) return "float count mismatch";
    for (size_t i = 0; i < values->size(); ++i) {
      const float expected = static_cast<float>(ToDouble(want->list_value().values(static_cast<int>(i))));
      if ((*values)[i] != expected || std::signbit((*values)[i]) != std::signbit(expected)) {
        return "float value mismatch at " + std::to_string(i);
      }
    }
    return "";
  }
  for (const char* field : {"bytes_hex", "bytes_utf8"}) {
    if (const Value* want = Get(a, field)) {
      auto values = GetBytes(features, name);
      if (!values.ok() || kind != FeatureKind::kBytes) return "not a bytes_list";
      std::vector<std::string> got;
      for (std::string_view v : *values) got.push_back(std::string(field) == "bytes_hex" ? Hex(v) : std::string(v));
      std::vector<std::string> expected;
      for (const Value& v : want->list_value().values()) expected.push_back(v.string_value());
      return got == expected ? "" : "bytes mismatch";
    }
  }
  if (const Value* want = Get(a, "kind")) {
    const std::string want_kind = want->kind_case() == Value::kNullValue ? "none" : want->string_value();
    if (FeatureKindName(kind) != want_kind) return "kind " + std::string(FeatureKindName(kind)) + " != " + want_kind;
    if (const Value* len = Get(a, "len")) {
      size_t size = 0;
      if (kind == FeatureKind::kBytes) size = (*feature)->bytes_list().value_size();
      if (kind == FeatureKind::kFloat) size = (*feature)->float_list().value_size();
      if (kind == FeatureKind::kInt64) size = (*feature)->int64_list().value_size();
      if (static_cast<double>(size) != len->number_value()) return "len mismatch";
    }
    return "";
  }
  return "unknown feature assertion";
}

// The pattern of TFX's tfrecord_sequence test data, record by record.
std::string CheckTfxSequencePattern(const std::vector<std::string>& records, int64_t base) {
  for (size_t k = 0; k < records.size(); ++k) {
    const int64_t n = base + static_cast<int64_t>(k);
    auto example = ParseSequenceExample(records[k]);
    if (!example.ok()) return example.status().ToString();
    auto steps = GetFeatureList(*example, "s");
    if (!steps.ok() || (*steps)->feature_size() != 2) return "record " + std::to_string(k) + ": bad feature list s";
    for (int step = 0; step < 2; ++step) {
      const auto& feature = (*steps)->feature(step);
      if (KindOf(feature) != FeatureKind::kBytes || feature.bytes_list().value_size() != 1 ||
          feature.bytes_list().value(0) != std::to_string(n + step)) {
        return "record " + std::to_string(k) + ": feature list s step " + std::to_string(step);
      }
    }
    const auto& context = example->context();
    auto i = GetFeature(context, "i");
    auto f = GetFeature(context, "f");
    if (!i.ok() || !f.ok()) return "record " + std::to_string(k) + ": context features missing";
    if (n % 10 == 0) {
      if (KindOf(**i) != FeatureKind::kNone || KindOf(**f) != FeatureKind::kNone) return "kind set at n%10==0";
    } else {
      auto ints = GetInt64s(context, "i");
      auto floats = GetFloats(context, "f");
      if (KindOf(**i) != FeatureKind::kInt64 || ints->size() != 1 || (*ints)[0] != n) return "context i";
      if (KindOf(**f) != FeatureKind::kFloat || floats->size() != 1 || (*floats)[0] != static_cast<float>(n)) {
        return "context f";
      }
    }
  }
  return "";
}

std::string CheckAssertion(const std::vector<std::string>& records, const Struct& a) {
  if (const Value* base = Get(a, "tfx_sequence_pattern_base")) {
    return CheckTfxSequencePattern(records, static_cast<int64_t>(base->number_value()));
  }
  const size_t index = Get(a, "record") ? static_cast<size_t>(Get(a, "record")->number_value()) : 0;
  if (index >= records.size()) return "record " + std::to_string(index) + " does not exist";
  const std::string& payload = records[index];
  if (const Value* v = Get(a, "raw_utf8")) return payload == v->string_value() ? "" : "raw mismatch";
  if (const Value* v = Get(a, "raw_hex")) return Hex(payload) == v->string_value() ? "" : "raw mismatch";
  if (Get(a, "feature")) return CheckFeature(payload, a);
  if (const Value* v = Get(a, "feature_list")) {
    auto example = ParseSequenceExample(payload);
    if (!example.ok()) return example.status().ToString();
    auto list = GetFeatureList(*example, v->string_value());
    if (!list.ok()) return list.status().ToString();
    const Value* len = Get(a, "len");
    return !len || static_cast<double>((*list)->feature_size()) == len->number_value() ? "" : "steps mismatch";
  }
  if (Get(a, "field_path")) return CheckFieldPath(payload, a);
  if (const Value* v = Get(a, "event")) return CheckEvent(payload, v->struct_value());
  return "unknown assertion";
}

// ---- the tests --------------------------------------------------------------

std::string LocalKey(const std::string& relative) { return (testing::DataDir() / relative).string().substr(1); }

void CheckEveryFile(ObjectStore& store, const std::function<std::string(const std::string&)>& key_of,
                    RecordReaderOptions options) {
  int files = 0;
  for (const Value& entry_value : Get(Manifest(), "files")->list_value().values()) {
    const Struct& entry = entry_value.struct_value();
    const std::string path = GetString(entry, "path");
    SCOPED_TRACE(path);
    ++files;
    const std::string key = key_of(path);
    // The extension names the compression expected.json states.
    EXPECT_EQ(CompressionFromExtension(path), ParseCompression(GetString(entry, "compression")).value());

    ReadOutcome outcome = ReadFile(store, key, options);
    const std::string status = GetString(entry, "status");
    if (status == "ok" || status == "eof_partial_header") {
      EXPECT_TRUE(outcome.status.ok()) << outcome.status.ToString();
    } else {
      EXPECT_EQ(outcome.status.code(), StatusCode::kDataLoss);
      const std::string expected = status == "dataloss_truncated" ? "truncated record at " : "corrupted record at ";
      EXPECT_EQ(outcome.status.message().rfind(expected, 0), 0u) << outcome.status.message();
      EXPECT_NE(outcome.status.message().find(store.Describe(key)), std::string::npos);
    }
    EXPECT_EQ(static_cast<double>(outcome.records.size()), Get(entry, "records")->number_value());
    EXPECT_EQ(PayloadDigest(outcome.records), GetString(entry, "payload_digest"));
    if (const Value* asserts = Get(entry, "assert")) {
      for (const Value& a : asserts->list_value().values()) {
        EXPECT_EQ(CheckAssertion(outcome.records, a.struct_value()), "");
      }
    }
  }
  EXPECT_EQ(files, 42);
}

TEST(CompatTest, ReferenceFilesAreIntact) {
  for (const Value& entry_value : Get(Manifest(), "files")->list_value().values()) {
    const Struct& entry = entry_value.struct_value();
    Sha256 sha;
    sha.Update(testing::ReadFile(testing::DataDir() / GetString(entry, "path")));
    EXPECT_EQ(sha.HexDigest(), GetString(entry, "file_sha256")) << GetString(entry, "path");
  }
}

TEST(CompatTest, EveryReferenceFileReadsAsExpectedFromLocalFiles) {
  LocalStore store;
  CheckEveryFile(store, LocalKey, {});
}

TEST(CompatTest, EveryReferenceFileReadsAsExpectedFromMemoryWithSmallChunks) {
  MemoryStore store("records-compat-test");
  for (const Value& entry_value : Get(Manifest(), "files")->list_value().values()) {
    const std::string path = GetString(entry_value.struct_value(), "path");
    ASSERT_TRUE(WriteAll(store, path, testing::ReadFile(testing::DataDir() / path)).ok());
  }
  RecordReaderOptions options;
  options.io.chunk_size = 4096;  // records and gzip members across chunk edges
  options.inflate_block_size = 4096;
  CheckEveryFile(store, [](const std::string& path) { return path; }, options);
}

TEST(CompatTest, BothInflateEnginesAgree) {
  LocalStore store;
  std::vector<Inflater::Engine> engines = {Inflater::Engine::kZlib};
  if (Inflater::HasIsal()) engines.push_back(Inflater::Engine::kIsal);
  for (const Value& entry_value : Get(Manifest(), "files")->list_value().values()) {
    const Struct& entry = entry_value.struct_value();
    if (GetString(entry, "compression") == "none") continue;
    for (Inflater::Engine engine : engines) {
      SCOPED_TRACE(GetString(entry, "path") + (engine == Inflater::Engine::kZlib ? " zlib" : " isal"));
      RecordReaderOptions options;
      options.inflate_engine = engine;
      ReadOutcome outcome = ReadFile(store, LocalKey(GetString(entry, "path")), options);
      EXPECT_TRUE(outcome.status.ok()) << outcome.status.ToString();
      EXPECT_EQ(PayloadDigest(outcome.records), GetString(entry, "payload_digest"));
    }
  }
}

TEST(CompatTest, EdgeCaseMessagesMatchTensorFlow) {
  LocalStore store;
  const std::pair<const char*, const char*> cases[] = {
      {"files/edge_cases/truncated_in_footer.tfrecord", "truncated record at 19 in "},
      {"files/edge_cases/corrupted_length_crc.tfrecord", "corrupted record at 19 in "},
      {"files/edge_cases/corrupted_payload.tfrecord", "corrupted record at 31 in "},
      {"files/edge_cases/not_a_tfrecord_at_offset0.tfrecord", "corrupted record at 0 (Is this even a TFRecord file?)"},
  };
  for (const auto& [path, message] : cases) {
    ReadOutcome outcome = ReadFile(store, LocalKey(path));
    EXPECT_EQ(outcome.status.code(), StatusCode::kDataLoss);
    EXPECT_EQ(outcome.status.message().rfind(message, 0), 0u) << outcome.status.message();
    EXPECT_NE(outcome.status.message().find(store.Describe(LocalKey(path))), std::string::npos);
  }
}

// Writes `records` with spool to memory and returns the bytes.
std::string WriteWithSpool(const std::vector<std::string>& records, Compression compression,
                           bool write_index = false, std::string* index_text = nullptr) {
  MemoryStore store("records-compat-write");
  const std::string key = "out.tfrecord" + std::string(CompressionExtension(compression));
  RecordWriterOptions options;
  options.write_index = write_index;
  auto writer = RecordWriter::Open(store, key, options).value();
  for (const std::string& record : records) EXPECT_TRUE(writer->Write(record).ok());
  auto file = writer->Close();
  EXPECT_TRUE(file.ok()) << file.status().ToString();
  if (index_text) *index_text = ReadAll(store, IndexKeyFor(key)).value();
  return ReadAll(store, key).value();
}

TEST(CompatTest, UncompressedRewritesAreByteIdenticalToTensorFlows) {
  LocalStore store;
  int rewritten = 0;
  for (const Value& entry_value : Get(Manifest(), "files")->list_value().values()) {
    const Struct& entry = entry_value.struct_value();
    const std::string path = GetString(entry, "path");
    if (GetString(entry, "compression") != "none" || GetString(entry, "status") != "ok") continue;
    SCOPED_TRACE(path);
    ReadOutcome outcome = ReadFile(store, LocalKey(path));
    EXPECT_EQ(WriteWithSpool(outcome.records, Compression::kNone), testing::ReadFile(testing::DataDir() / path));
    ++rewritten;
  }
  EXPECT_EQ(rewritten, 13);
}

TEST(CompatTest, CompressedWritesMatchTensorFlowsBytes) {
  LocalStore store;
  // TensorFlow-written GZIP and files made with TensorFlow's recipe: the
  // same records written by spool give the same bytes.
  const char* identical[] = {
      "files/tf_written_gzip/tfx_sequence_train.tfrecord.gz",
      "files/tf_written_gzip/tfx_sequence_eval.tfrecord.gz",
      "files/derived_tf_recipe/beam_foo_bar.tfrecord.gz",
      "files/derived_tf_recipe/beam_foo_bar.tfrecord.zlib",
      "files/derived_tf_recipe/magenta_tfrecord_iterator_test.tfrecord.gz",
      "files/derived_tf_recipe/magenta_tfrecord_iterator_test.tfrecord.zlib",
      "files/derived_tf_recipe/pwnall_singles.tfrecords.gz",
      "files/derived_tf_recipe/pwnall_singles.tfrecords.zlib",
      "files/derived_tf_recipe/nucleus_test_reads.fastq.tfrecord.gz",
      "files/derived_tf_recipe/nucleus_test_reads.fastq.tfrecord.zlib",
      "files/derived_tf_recipe/tensorboard_rustboard_accuracy.tfevents.gz",
      "files/derived_tf_recipe/tensorboard_rustboard_accuracy.tfevents.zlib",
      "files/edge_cases/large_record_300000.tfrecord.gz",
      "files/edge_cases/large_record_300000.tfrecord.zlib",
  };
  for (const char* path : identical) {
    SCOPED_TRACE(path);
    ReadOutcome outcome = ReadFile(store, LocalKey(path));
    ASSERT_TRUE(outcome.status.ok());
    const std::string written = WriteWithSpool(outcome.records, CompressionFromExtension(path));
    const std::string reference = testing::ReadFile(testing::DataDir() / path);
    EXPECT_EQ(written.size(), reference.size());
    EXPECT_TRUE(written == reference);
  }
  // Beam's files (Python zlib, memory level 8) differ in their deflate bytes
  // but decompress to the same records.
  for (const char* path : {"files/beam_gzip/tfx_external_taxi-00001-of-00002.tfrecord.gz",
                           "files/beam_gzip/tfx_penguin_eval.tfrecord.gz"}) {
    SCOPED_TRACE(path);
    ReadOutcome outcome = ReadFile(store, LocalKey(path));
    MemoryStore memory("records-compat-beam");
    ASSERT_TRUE(WriteAll(memory, "x.tfrecord.gz", WriteWithSpool(outcome.records, Compression::kGzip)).ok());
    EXPECT_EQ(ReadFile(memory, "x.tfrecord.gz").records, outcome.records);
  }
}

TEST(CompatTest, DaliIndexFilesAreReproducedByteForByte) {
  LocalStore store;
  const std::pair<const char*, const char*> cases[] = {
      {"files/dali_index/large_record_300000.tfrecord.idx", "files/edge_cases/large_record_300000.tfrecord"},
      {"files/dali_index/magenta_tfrecord_iterator_test.tfrecord.idx",
       "files/tf_written/magenta_tfrecord_iterator_test.tfrecord"},
      {"files/dali_index/pwnall_singles.tfrecords.idx", "files/tf_written/pwnall_singles.tfrecords"},
      {"files/dali_index/tfx_eval_chicago_taxi.tfevents.idx", "files/tf_written/tfx_eval_chicago_taxi.tfevents"},
      {"files/dali_index/zero_length_records.tfrecord.idx", "files/edge_cases/zero_length_records.tfrecord"},
  };
  for (const auto& [idx, shard] : cases) {
    SCOPED_TRACE(shard);
    const std::string reference = testing::ReadFile(testing::DataDir() / idx);
    auto built = RecordIndex::Build(store, LocalKey(shard));
    ASSERT_TRUE(built.ok()) << built.status().ToString();
    EXPECT_EQ(built->Serialize(), reference);
    // The writer's index for the same records is the same file.
    std::string written_index;
    WriteWithSpool(ReadFile(store, LocalKey(shard)).records, Compression::kNone, true, &written_index);
    EXPECT_EQ(written_index, reference);
    // And the reference index parses, and seeks.
    auto parsed = RecordIndex::Load(store, LocalKey(idx), testing::ReadFile(testing::DataDir() / shard).size());
    ASSERT_TRUE(parsed.ok()) << parsed.status().ToString();
    auto reader = RecordReader::Open(store, LocalKey(shard)).value();
    reader->SetIndex(*parsed);
    const uint64_t last = parsed->size() - 1;
    SPOOL_ASSERT_OK(reader->SeekToRecord(last));
    std::string record;
    ASSERT_TRUE(reader->Next(&record).value());
    EXPECT_EQ(record.size() + 16, parsed->entries()[last].size);
  }
}

}  // namespace
}  // namespace spool::records
