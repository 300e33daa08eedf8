#include "spool/core/storage/memory_store.h"

#include <atomic>
#include <cstring>
#include <map>
#include <mutex>
#include <utility>

#include "spool/core/crc32c.h"

namespace spool {

namespace {

struct StoredObject {
  std::shared_ptr<const std::string> data;
  ObjectInfo info;
};

// One counter for the whole process, so a version is never reused, even by
// an object deleted and written again.
std::string NextVersion() {
  static std::atomic<uint64_t> counter{0};
  return std::to_string(++counter);
}

Status CheckKey(const MemoryStore& store, std::string_view key) {
  if (key.empty()) return InvalidArgumentError(store.Describe(key) + ": the object key is empty");
  if (key.find('\0') != std::string_view::npos) {
    return InvalidArgumentError(store.Describe(key) + ": the object key contains a NUL byte");
  }
  return OkStatus();
}

}  // namespace

struct MemoryStore::Bucket {
  std::mutex mu;
  std::map<std::string, StoredObject, std::less<>> objects;
};

namespace {

std::mutex& BucketsMutex() {
  static std::mutex mu;
  return mu;
}

std::map<std::string, std::shared_ptr<MemoryStore::Bucket>, std::less<>>& Buckets() {
  static auto* buckets = new std::map<std::string, std::shared_ptr<MemoryStore::Bucket>, std::less<>>();
  return *buckets;
}

std::shared_ptr<MemoryStore::Bucket> FindOrCreateBucket(const std::string& name) {
  std::lock_guard lock(BucketsMutex());
  auto& slot = Buckets()[name];
  if (!slot) slot = std::make_shared<MemoryStore::Bucket>();
  return slot;
}

class MemoryReadable : public ReadableObject {
 public:
  MemoryReadable(std::shared_ptr<MemoryStore::Bucket> bucket, std::string url, StoredObject object)
      : bucket_(std::move(bucket)), url_(std::move(url)), object_(std::move(object)) {}

  const ObjectInfo& info() const override { return object_.info; }
  bool reads_are_local() const override { return true; }

  Result<size_t> ReadAt(uint64_t offset, std::span<char> buffer) override {
    {
      std::lock_guard lock(bucket_->mu);
      auto it = bucket_->objects.find(object_.info.key);
      if (it == bucket_->objects.end() || it->second.info.version != object_.info.version) {
        return FailedPreconditionError(url_ + " was replaced or deleted after it was opened (version " +
                                       object_.info.version + "); open it again");
      }
    }
    const std::string& data = *object_.data;
    if (offset > data.size()) {
      return OutOfRangeError(url_ + ": offset " + std::to_string(offset) + " is past the end (size " +
                             std::to_string(data.size()) + ")");
    }
    size_t n = std::min<uint64_t>(buffer.size(), data.size() - offset);
    std::memcpy(buffer.data(), data.data() + offset, n);
    return n;
  }

 private:
  std::shared_ptr<MemoryStore::Bucket> bucket_;
  std::string url_;
  StoredObject object_;  // keeps the pinned bytes alive
};

class MemoryWritable : public WritableObject {
 public:
  MemoryWritable(std::shared_ptr<MemoryStore::Bucket> bucket, std::string key, std::string url,
                 WriteOptions options)
      : bucket_(std::move(bucket)), key_(std::move(key)), url_(std::move(url)), options_(std::move(options)) {
    if (options_.expected_size) data_.reserve(*options_.expected_size);
  }

  Status Append(std::string_view data) override {
    if (finished_) return FailedPreconditionError(url_ + ": Append after Close or Abort");
    data_.append(data);
    appended_ += data.size();
    return OkStatus();
  }

  Result<ObjectInfo> Close() override {
    if (finished_) return FailedPreconditionError(url_ + ": Close after Close or Abort");
    finished_ = true;
    StoredObject object;
    object.info.key = key_;
    object.info.size = data_.size();
    object.info.crc32c = crc32c::Value(data_);
    object.info.updated = std::chrono::system_clock::now();
    object.data = std::make_shared<const std::string>(std::move(data_));
    std::lock_guard lock(bucket_->mu);
    auto [it, inserted] = bucket_->objects.try_emplace(key_);
    if (!inserted && options_.if_not_exists) {
      return AlreadyExistsError(url_ + " already exists (create-only write)");
    }
    object.info.version = NextVersion();
    it->second = std::move(object);
    return it->second.info;
  }

  void Abort() override {
    finished_ = true;
    data_.clear();
  }

  uint64_t bytes_appended() const override { return appended_; }

 private:
  std::shared_ptr<MemoryStore::Bucket> bucket_;
  std::string key_;
  std::string url_;
  WriteOptions options_;
  std::string data_;
  uint64_t appended_ = 0;
  bool finished_ = false;
};

}  // namespace

MemoryStore::MemoryStore(std::string bucket) : name_(std::move(bucket)), bucket_(FindOrCreateBucket(name_)) {}

MemoryStore::~MemoryStore() = default;

void MemoryStore::ClearBucket(std::string_view bucket) {
  std::shared_ptr<Bucket> found;
  {
    std::lock_guard lock(BucketsMutex());
    auto it = Buckets().find(bucket);
    if (it == Buckets().end()) return;
    found = it->second;
  }
  std::lock_guard lock(found->mu);
  found->objects.clear();
}

std::string MemoryStore::Describe(std::string_view key) const {
  return "mem://" + name_ + "/" + std::string(key);
}

Result<ObjectInfo> MemoryStore::Stat(std::string_view key) {
  SPOOL_RETURN_IF_ERROR(CheckKey(*this, key));
  std::lock_guard lock(bucket_->mu);
  auto it = bucket_->objects.find(key);
  if (it == bucket_->objects.end()) return NotFoundError(Describe(key) + ": no such object");
  return it->second.info;
}

Result<ListPage> MemoryStore::List(const ListOptions& options) {
  if (options.max_keys <= 0) {
    return InvalidArgumentError(Describe(options.prefix) + ": max_keys must be positive");
  }
  const std::string& prefix = options.prefix;
  const std::string& token = options.page_token;
  const size_t max_keys = static_cast<size_t>(options.max_keys);
  ListPage page;
  std::string last_returned;
  size_t returned = 0;
  std::lock_guard lock(bucket_->mu);
  auto it = bucket_->objects.lower_bound(std::max(prefix, token));
  while (it != bucket_->objects.end() && it->first.starts_with(prefix)) {
    const std::string& key = it->first;
    size_t cut = options.delimiter.empty() ? std::string::npos : key.find(options.delimiter, prefix.size());
    std::string common = cut == std::string::npos ? std::string() : key.substr(0, cut + options.delimiter.size());
    const std::string& entry = common.empty() ? key : common;
    if (entry > token) {
      if (returned == max_keys) {
        page.next_page_token = last_returned;
        break;
      }
      if (common.empty()) {
        page.objects.push_back(it->second.info);
      } else {
        page.common_prefixes.push_back(common);
      }
      last_returned = entry;
      ++returned;
    }
    if (common.empty()) {
      ++it;
    } else {
      // Skip every key under this common prefix: they all start with it.
      while (it != bucket_->objects.end() && it->first.starts_with(common)) ++it;
    }
  }
  return page;
}

Result<std::unique_ptr<ReadableObject>> MemoryStore::OpenRead(std::string_view key) {
  SPOOL_RETURN_IF_ERROR(CheckKey(*this, key));
  std::lock_guard lock(bucket_->mu);
  auto it = bucket_->objects.find(key);
  if (it == bucket_->objects.end()) return NotFoundError(Describe(key) + ": no such object");
  return std::unique_ptr<ReadableObject>(std::make_unique<MemoryReadable>(bucket_, Describe(key), it->second));
}

Result<std::unique_ptr<WritableObject>> MemoryStore::OpenWrite(std::string_view key, const WriteOptions& options) {
  SPOOL_RETURN_IF_ERROR(CheckKey(*this, key));
  return std::unique_ptr<WritableObject>(
      std::make_unique<MemoryWritable>(bucket_, std::string(key), Describe(key), options));
}

Status MemoryStore::Delete(std::string_view key) {
  SPOOL_RETURN_IF_ERROR(CheckKey(*this, key));
  std::lock_guard lock(bucket_->mu);
  auto it = bucket_->objects.find(key);
  if (it != bucket_->objects.end()) bucket_->objects.erase(it);
  return OkStatus();
}

Result<ObjectInfo> MemoryStore::Copy(std::string_view from_key, std::string_view to_key) {
  SPOOL_RETURN_IF_ERROR(CheckKey(*this, from_key));
  SPOOL_RETURN_IF_ERROR(CheckKey(*this, to_key));
  std::lock_guard lock(bucket_->mu);
  auto from = bucket_->objects.find(from_key);
  if (from == bucket_->objects.end()) return NotFoundError(Describe(from_key) + ": no such object");
  StoredObject copy = from->second;
  copy.info.key = std::string(to_key);
  copy.info.version = NextVersion();
  copy.info.updated = std::chrono::system_clock::now();
  auto& slot = bucket_->objects[std::string(to_key)];
  slot = std::move(copy);
  return slot.info;
}

}  // namespace spool
