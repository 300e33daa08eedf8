// Transfers: checksum verification, budget bounds, progress and clean-up.
#include "spool/core/storage/transfer.h"

#include <gtest/gtest.h>
#include <stdlib.h>

#include <atomic>
#include <filesystem>
#include <fstream>

#include "spool/core/crc32c.h"
#include "spool/core/digest.h"
#include "spool/core/storage/memory_store.h"
#include "tests/support/temp_dir.h"

namespace spool {
namespace {

namespace fs = std::filesystem;

// Reports a wrong crc32c for what it reads, as a corrupting service would.
class WrongChecksumReadable : public ReadableObject {
 public:
  explicit WrongChecksumReadable(std::unique_ptr<ReadableObject> inner) : inner_(std::move(inner)) {
    info_ = inner_->info();
    info_.crc32c = info_.crc32c.value_or(0) ^ 1;
  }
  const ObjectInfo& info() const override { return info_; }
  Result<size_t> ReadAt(uint64_t offset, std::span<char> buffer) override { return inner_->ReadAt(offset, buffer); }

 private:
  std::unique_ptr<ReadableObject> inner_;
  ObjectInfo info_;
};

// Claims a wrong crc32c for what was written.
class WrongChecksumWritable : public WritableObject {
 public:
  explicit WrongChecksumWritable(std::unique_ptr<WritableObject> inner) : inner_(std::move(inner)) {}
  Status Append(std::string_view data) override { return inner_->Append(data); }
  Result<ObjectInfo> Close() override {
    SPOOL_ASSIGN_OR_RETURN(ObjectInfo info, inner_->Close());
    info.crc32c = info.crc32c.value_or(0) ^ 1;
    return info;
  }
  void Abort() override { inner_->Abort(); }
  uint64_t bytes_appended() const override { return inner_->bytes_appended(); }

 private:
  std::unique_ptr<WritableObject> inner_;
};

class CorruptingStore : public MemoryStore {
 public:
  using MemoryStore::MemoryStore;
  Result<std::unique_ptr<ReadableObject>> OpenRead(std::string_view key) override {
    SPOOL_ASSIGN_OR_RETURN(std::unique_ptr<ReadableObject> inner, MemoryStore::OpenRead(key));
    return std::unique_ptr<ReadableObject>(std::make_unique<WrongChecksumReadable>(std::move(inner)));
  }
  Result<std::unique_ptr<WritableObject>> OpenWrite(std::string_view key, const WriteOptions& options) override {
    SPOOL_ASSIGN_OR_RETURN(std::unique_ptr<WritableObject> inner, MemoryStore::OpenWrite(key, options));
    return std::unique_ptr<WritableObject>(std::make_unique<WrongChecksumWritable>(std::move(inner)));
  }
};

// Shows its objects as a store that keeps no CRC32C but another checksum
// would (an S3 object the AWS CLI wrote: the MD5 of its single-part ETag),
// computed over the object's bytes, or over other bytes when `wrong`. Its
// readers do not verify whole reads themselves, so a single-part read is
// checked by the transfer too.
class DigestOnlyStore : public MemoryStore {
 public:
  DigestOnlyStore(std::string bucket, DigestAlgorithm algorithm, bool wrong)
      : MemoryStore(std::move(bucket)), algorithm_(algorithm), wrong_(wrong) {}
  Result<std::unique_ptr<ReadableObject>> OpenRead(std::string_view key) override {
    SPOOL_ASSIGN_OR_RETURN(std::unique_ptr<ReadableObject> inner, MemoryStore::OpenRead(key));
    std::string bytes(inner->info().size, '\0');
    SPOOL_RETURN_IF_ERROR(inner->ReadAt(0, bytes).status());
    if (wrong_) bytes += "x";
    auto reader = std::make_unique<Readable>(std::move(inner));
    reader->info_.crc32c.reset();
    reader->info_.digest = StoredDigest{algorithm_, Base64Encode(DigestOf(algorithm_, bytes)), "ETag"};
    return std::unique_ptr<ReadableObject>(std::move(reader));
  }

 private:
  struct Readable : ReadableObject {
    explicit Readable(std::unique_ptr<ReadableObject> inner) : inner_(std::move(inner)), info_(inner_->info()) {}
    const ObjectInfo& info() const override { return info_; }
    Result<size_t> ReadAt(uint64_t offset, std::span<char> buffer) override { return inner_->ReadAt(offset, buffer); }
    std::unique_ptr<ReadableObject> inner_;
    ObjectInfo info_;
  };
  DigestAlgorithm algorithm_;
  bool wrong_;
};

class TransferTest : public ::testing::Test {
 protected:
  void SetUp() override {
    ASSERT_FALSE(dir_.empty());
    MemoryStore::ClearBucket("transfer-good");
    MemoryStore::ClearBucket("transfer-bad");
    data_.resize(5 * 1024 * 1024 + 3);
    for (size_t i = 0; i < data_.size(); ++i) data_[i] = static_cast<char>((i * 7919) >> 3);
    ASSERT_TRUE(WriteAll(good_, "object", data_).ok());
    ASSERT_TRUE(WriteAll(bad_, "object", data_).ok());
    options_.part_size = 1 << 20;
  }
  size_t EntriesIn(const fs::path& folder) const {
    return static_cast<size_t>(std::distance(fs::directory_iterator(folder), fs::directory_iterator()));
  }

  const test_support::TempDir temp_{"spool-transfer-test"};
  const fs::path dir_ = temp_.path();
  std::string data_;
  MemoryStore good_{"transfer-good"};
  CorruptingStore bad_{"transfer-bad"};
  TransferOptions options_;
};

TEST_F(TransferTest, CopyRejectsASourceWhoseChecksumDoesNotMatch) {
  Result<ObjectInfo> copied = CopyObject(bad_, "object", good_, "copy", options_);
  EXPECT_EQ(copied.status().code(), StatusCode::kDataLoss) << copied.status().ToString();
  EXPECT_NE(copied.status().message().find("mem://transfer-bad/object"), std::string::npos);
  EXPECT_EQ(good_.Stat("copy").status().code(), StatusCode::kNotFound) << "nothing may be committed";
}

TEST_F(TransferTest, CopyRemovesADestinationWhoseChecksumDoesNotMatch) {
  Result<ObjectInfo> copied = CopyObject(good_, "object", bad_, "copy", options_);
  EXPECT_EQ(copied.status().code(), StatusCode::kDataLoss) << copied.status().ToString();
  EXPECT_EQ(bad_.MemoryStore::Stat("copy").status().code(), StatusCode::kNotFound);
}

TEST_F(TransferTest, DownloadRejectsABadChecksumAndLeavesNoFile) {
  Result<ObjectInfo> downloaded = DownloadFile(bad_, "object", dir_ / "out.bin", options_);
  EXPECT_EQ(downloaded.status().code(), StatusCode::kDataLoss) << downloaded.status().ToString();
  EXPECT_EQ(EntriesIn(dir_), 0u) << "neither the file nor its temporary may remain";
}

// Without a CRC32C, downloads and copies check the object's other checksum:
// in several parts (the file is hashed after the parts are written) and in one.
TEST_F(TransferTest, WithoutACrc32cTheStoredDigestIsChecked) {
  for (DigestAlgorithm algorithm : {DigestAlgorithm::kMd5, DigestAlgorithm::kSha256, DigestAlgorithm::kCrc64Nvme}) {
    for (uint64_t part_size : {uint64_t{1} << 20, uint64_t{16} << 20}) {
      SCOPED_TRACE(std::string(DigestName(algorithm)) + ", part size " + std::to_string(part_size));
      MemoryStore::ClearBucket("transfer-digest");
      MemoryStore::ClearBucket("transfer-copies");
      DigestOnlyStore right("transfer-digest", algorithm, /*wrong=*/false);
      DigestOnlyStore wrong("transfer-digest", algorithm, /*wrong=*/true);
      MemoryStore copies("transfer-copies");
      ASSERT_TRUE(WriteAll(right, "object", data_).ok());
      options_.part_size = part_size;

      Result<ObjectInfo> downloaded = DownloadFile(right, "object", dir_ / "out.bin", options_);
      ASSERT_TRUE(downloaded.ok()) << downloaded.status().ToString();
      EXPECT_EQ(fs::file_size(dir_ / "out.bin"), data_.size());
      fs::remove(dir_ / "out.bin");
      ASSERT_TRUE(CopyObject(right, "object", copies, "copy", options_).ok());
      EXPECT_EQ(ReadAll(copies, "copy").value_or(""), data_);
      ASSERT_TRUE(copies.Delete("copy").ok());

      downloaded = DownloadFile(wrong, "object", dir_ / "out.bin", options_);
      ASSERT_EQ(downloaded.status().code(), StatusCode::kDataLoss) << downloaded.status().ToString();
      const std::string message = downloaded.status().message();
      EXPECT_NE(message.find("mem://transfer-digest/object"), std::string::npos) << message;
      EXPECT_NE(message.find(std::string(DigestDisplayName(algorithm)) + " "), std::string::npos) << message;
      EXPECT_NE(message.find("read it again"), std::string::npos) << message;
      EXPECT_EQ(EntriesIn(dir_), 0u) << "neither the file nor its temporary may remain";

      Result<ObjectInfo> copied = CopyObject(wrong, "object", copies, "copy", options_);
      EXPECT_EQ(copied.status().code(), StatusCode::kDataLoss) << copied.status().ToString();
      EXPECT_EQ(copies.Stat("copy").status().code(), StatusCode::kNotFound) << "nothing may be committed";
    }
  }
}

TEST_F(TransferTest, UploadRejectsABadStoredChecksum) {
  { std::ofstream(dir_ / "in.bin", std::ios::binary) << data_; }
  Result<ObjectInfo> uploaded = UploadFile(dir_ / "in.bin", bad_, "uploaded", options_);
  EXPECT_EQ(uploaded.status().code(), StatusCode::kDataLoss) << uploaded.status().ToString();
}

TEST_F(TransferTest, TinyBudgetStillCompletesAndProgressAddsUp) {
  ByteBudget budget(64 * 1024);  // smaller than one part
  options_.budget = &budget;
  std::atomic<uint64_t> progress{0};
  options_.on_progress = [&progress](uint64_t bytes) { progress += bytes; };
  Result<ObjectInfo> copied = CopyObject(good_, "object", good_, "copy", options_);
  ASSERT_TRUE(copied.ok()) << copied.status().ToString();
  EXPECT_EQ(progress.load(), data_.size());
  ASSERT_TRUE(copied->crc32c.has_value());
  EXPECT_EQ(*copied->crc32c, crc32c::Value(data_));
  EXPECT_EQ(ReadAll(good_, "copy").value_or(""), data_);

  progress = 0;
  Result<ObjectInfo> downloaded = DownloadFile(good_, "object", dir_ / "nested/out.bin", options_);
  ASSERT_TRUE(downloaded.ok()) << downloaded.status().ToString();
  EXPECT_EQ(progress.load(), data_.size());
  EXPECT_EQ(budget.in_use(), 0u);
  EXPECT_LE(budget.peak(), budget.capacity());
}

TEST_F(TransferTest, DownloadReplacesAnExistingFile) {
  { std::ofstream(dir_ / "out.bin") << "old content"; }
  Result<ObjectInfo> downloaded = DownloadFile(good_, "object", dir_ / "out.bin", options_);
  ASSERT_TRUE(downloaded.ok()) << downloaded.status().ToString();
  EXPECT_EQ(fs::file_size(dir_ / "out.bin"), data_.size());
  EXPECT_EQ(EntriesIn(dir_), 1u);
}

TEST_F(TransferTest, MissingInputsAreNotFoundAndNamed) {
  Result<ObjectInfo> upload = UploadFile(dir_ / "absent.bin", good_, "k", options_);
  EXPECT_EQ(upload.status().code(), StatusCode::kNotFound);
  EXPECT_NE(upload.status().message().find((dir_ / "absent.bin").string()), std::string::npos);
  EXPECT_EQ(good_.Stat("k").status().code(), StatusCode::kNotFound);

  Result<ObjectInfo> download = DownloadFile(good_, "absent", dir_ / "x", options_);
  EXPECT_EQ(download.status().code(), StatusCode::kNotFound);
  EXPECT_NE(download.status().message().find("mem://transfer-good/absent"), std::string::npos);
  EXPECT_FALSE(fs::exists(dir_ / "x"));
}

TEST_F(TransferTest, DownloadIntoADirectoryIsRefused) {
  Result<ObjectInfo> download = DownloadFile(good_, "object", dir_, options_);
  EXPECT_EQ(download.status().code(), StatusCode::kFailedPrecondition);
}

}  // namespace
}  // namespace spool
