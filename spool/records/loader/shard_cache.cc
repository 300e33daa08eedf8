#include "spool/records/loader/shard_cache.h"

#include <dirent.h>
#include <fcntl.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <utility>

#include "spool/core/bytes.h"
#include "spool/core/crc32c.h"
#include "spool/core/env.h"
#include "spool/core/log.h"
#include "spool/core/storage/local_files.h"
#include "spool/core/storage/local_store.h"

namespace spool::loader {
namespace {

constexpr std::string_view kPart = ".spoolpart-";
constexpr size_t kChunk = 4u << 20;

// What the cache knows of a manifest's shard, its CRC32C included: with it
// a store opens even a shard of more than one part without a metadata
// request (s3_store.h), and a whole read of it is checked against that.
ObjectInfo KnownWithCrc32c(const ShardInfo& info) {
  ObjectInfo known = KnownObjectOf(info);
  known.crc32c = info.crc32c;
  known.crc32c_from_uploader = true;  // the writer's, from its manifest: the store never confirmed it
  return known;
}

// An open file descriptor, closed (and its flock released) on destruction.
class Fd {
 public:
  Fd() = default;
  explicit Fd(int fd) : fd_(fd) {}
  Fd(Fd&& other) noexcept : fd_(std::exchange(other.fd_, -1)) {}
  Fd& operator=(Fd&& other) noexcept {
    std::swap(fd_, other.fd_);
    return *this;
  }
  ~Fd() {
    if (fd_ >= 0) ::close(fd_);
  }
  int get() const { return fd_; }
  int release() { return std::exchange(fd_, -1); }
  bool ok() const { return fd_ >= 0; }

 private:
  int fd_ = -1;
};

std::string Errno(int err) { return std::strerror(err); }

// Opens (creating) `path` and takes an flock on it; blocks unless `try_only`.
Fd Lock(const std::string& path, bool try_only) {
  Fd fd(::open(path.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0644));
  if (!fd.ok()) return fd;
  while (::flock(fd.get(), LOCK_EX | (try_only ? LOCK_NB : 0)) != 0) {
    if (errno != EINTR) return Fd();
  }
  return fd;
}

uint64_t Fnv1a(std::string_view text, uint64_t hash = 1469598103934665603ull) {
  for (unsigned char c : text) hash = (hash ^ c) * 1099511628211ull;
  return hash;
}

// "<16 hex digits of the shard's identity>-<its base name>": the identity
// includes the size and CRC32C the manifest gave and the version a caller
// pinned, so a rewritten shard gets another file.
std::string FileName(const ShardInfo& shard) {
  std::string identity = shard.url + '\n' + (shard.size ? std::to_string(*shard.size) : "") + '\n' +
                         (shard.crc32c ? std::to_string(*shard.crc32c) : "");
  if (!shard.version.empty()) identity += "\n" + shard.version;
  char hex[17];
  std::snprintf(hex, sizeof hex, "%016llx", static_cast<unsigned long long>(Fnv1a(identity)));
  std::string base = shard.key.substr(shard.key.find_last_of('/') + 1);
  for (char& c : base) {
    if (c == '/' || c == '\0') c = '_';
  }
  if (base.empty() || base[0] == '.') base = "shard" + base;
  return std::string(hex) + "-" + base.substr(0, 160);
}

int64_t MtimeNs(const struct stat& st) {
  return static_cast<int64_t>(st.st_mtim.tv_sec) * 1000000000 + st.st_mtim.tv_nsec;
}
int64_t AtimeNs(const struct stat& st) {
  return static_cast<int64_t>(st.st_atim.tv_sec) * 1000000000 + st.st_atim.tv_nsec;
}

// Whether `path` holds exactly what `shard` says: its size and CRC32C, when
// known. Reads the file once.
bool CheckFile(const std::string& path, const ShardInfo& shard) {
  Fd fd(::open(path.c_str(), O_RDONLY | O_CLOEXEC));
  if (!fd.ok()) return false;
  std::vector<char> buffer(kChunk);
  uint32_t crc = 0;
  uint64_t size = 0;
  while (true) {
    ssize_t n = ::read(fd.get(), buffer.data(), buffer.size());
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) return false;
    if (n == 0) break;
    crc = crc32c::Extend(crc, buffer.data(), static_cast<size_t>(n));
    size += static_cast<uint64_t>(n);
  }
  return (!shard.size || size == *shard.size) && (!shard.crc32c || crc == *shard.crc32c);
}

// One entry of the folder, as the scan sees it.
struct Entry {
  std::string name;
  uint64_t size = 0;
  int64_t used_ns = 0;  // last use: the access time
  bool part = false;
};

// The folder's entries that count against the limit. Abandoned ".part" files
// (their shard's lock is free) are removed when `clean`.
Result<std::vector<Entry>> Scan(const std::string& dir, bool clean, const std::string& mine) {
  DIR* d = ::opendir(dir.c_str());
  if (!d) return UnavailableError("cannot read shard cache folder " + dir + ": " + Errno(errno));
  std::vector<Entry> entries;
  while (struct dirent* e = ::readdir(d)) {
    std::string name = e->d_name;
    if (name == "." || name == "..") continue;
    const std::string path = dir + "/" + name;
    if (name[0] == '.') {
      const size_t at = name.rfind(kPart);
      if (name.ends_with(".lock") || at == std::string::npos) continue;  // a lock file
      const std::string shard_name = name.substr(1, at - 1);
      if (shard_name == mine) continue;  // the caller's own, being replaced
      Entry entry{name, std::strtoull(name.c_str() + at + kPart.size(), nullptr, 10), 0, true};
      if (clean) {
        Fd probe = Lock(dir + "/." + shard_name + ".lock", /*try_only=*/true);
        if (probe.ok()) {  // nobody fetches it: left by a killed process
          ::unlink(path.c_str());
          continue;
        }
      }
      entries.push_back(entry);
      continue;
    }
    struct stat st;
    if (::stat(path.c_str(), &st) != 0 || !S_ISREG(st.st_mode)) continue;
    entries.push_back(Entry{name, static_cast<uint64_t>(st.st_size), AtimeNs(st), false});
  }
  ::closedir(d);
  return entries;
}

}  // namespace

Result<ShardCacheOptions> ResolveShardCacheOptions(std::string dir, uint64_t limit) {
  const Env env = CurrentEnv();
  ShardCacheOptions cache;
  cache.dir = dir.empty() ? env.Get("SPOOL_CACHE_DIR").value_or("") : std::move(dir);
  cache.limit = limit;
  if (cache.limit == 0 && !cache.dir.empty()) {
    if (std::optional<std::string> text = env.Get("SPOOL_CACHE_LIMIT")) {
      Result<uint64_t> parsed = ParseByteSize(*text);
      if (!parsed.ok()) {
        return InvalidArgumentError("SPOOL_CACHE_LIMIT=" + *text +
                                    " is not a size (\"200G\", \"512M\"): " + parsed.status().message());
      }
      cache.limit = *parsed;
    }
  }
  return cache;
}

ShardCache::ShardCache(ShardCacheOptions options, std::shared_ptr<const std::vector<ShardInfo>> shards,
                       std::shared_ptr<const CacheSchedule> schedule)
    : options_(std::move(options)),
      shards_(std::move(shards)),
      schedule_(std::move(schedule)),
      local_(std::make_shared<LocalStore>()) {
  for (uint32_t i = 0; i < shards_->size(); ++i) {
    names_.push_back(FileName((*shards_)[i]));
    by_name_.emplace(names_.back(), i);
  }
  std::error_code error;
  std::filesystem::create_directories(options_.dir, error);
  if (error || !std::filesystem::is_directory(options_.dir)) {
    Fault("cannot create the folder" + (error ? ": " + error.message() : std::string(": not a folder")));
    return;
  }
  if (!Lock(options_.dir + "/.lock", /*try_only=*/false).ok()) {
    Fault("cannot lock " + options_.dir + "/.lock: " + Errno(errno));
    return;
  }
  if (options_.fetch_ahead > 0 && schedule_) ahead_thread_ = std::thread([this] { AheadLoop(); });
}

ShardCache::~ShardCache() { Close(); }

void ShardCache::Close() {
  {
    std::lock_guard lock(mu_);
    stopping_ = true;
    ahead_.clear();
  }
  ahead_cv_.notify_all();
  if (ahead_thread_.joinable()) ahead_thread_.join();
}

void ShardCache::Fault(const std::string& what) {
  if (off_.exchange(true)) return;
  // On stderr whatever SPOOL_LOG says (log.h writes only when asked): the
  // job goes on, slower, and whoever runs it should know why.
  const std::string line = "spool warning: shard cache " + options_.dir + " is off for this loader (" + what +
                           "); shards are read from the store\n";
  std::fwrite(line.data(), 1, line.size(), stderr);
}

ShardCacheCounts ShardCache::Counts() const {
  ShardCacheCounts counts;
  counts.hits = hits_.load();
  counts.misses = misses_.load();
  counts.fetched_bytes = fetched_bytes_.load();
  counts.evicted_bytes = evicted_bytes_.load();
  {
    std::lock_guard lock(mu_);
    counts.fetch_ahead = ahead_.size() + static_cast<uint64_t>(ahead_running_);
  }
  counts.off = off_.load();
  return counts;
}

std::optional<std::string> ShardCache::Acquire(uint32_t shard, uint64_t epoch, uint64_t worker) {
  if (off_ || shard >= shards_->size()) return std::nullopt;
  Now now{epoch, worker, schedule_ ? schedule_->Position(worker, epoch, shard) : std::nullopt};
  std::optional<std::string> key = Obtain(shard, now, /*ahead=*/false);
  if (now.position && options_.fetch_ahead > 0) QueueAhead(now);
  return key;
}

bool ShardCache::Verified(const std::string& name, const std::string& path) {
  struct stat st;
  if (::stat(path.c_str(), &st) != 0) return false;
  std::lock_guard lock(mu_);
  auto found = verified_.find(name);
  return found != verified_.end() && found->second == std::make_pair(static_cast<uint64_t>(st.st_ino), MtimeNs(st));
}

std::optional<std::string> ShardCache::Obtain(uint32_t shard, const Now& now, bool ahead) {
  const ShardInfo& info = (*shards_)[shard];
  const std::string& name = names_[shard];
  const std::string path = options_.dir + "/" + name;
  const std::string key = path.substr(path.find_first_not_of('/'));
  auto remember = [&] {
    struct stat st;
    if (::stat(path.c_str(), &st) != 0) return false;
    std::lock_guard lock(mu_);
    verified_[name] = {static_cast<uint64_t>(st.st_ino), MtimeNs(st)};
    return true;
  };
  auto hit = [&]() -> std::optional<std::string> {
    // The use, for LRU: the access time, since readers pin a file by its
    // size and mtime (LocalStore).
    const struct timespec times[2] = {{0, UTIME_NOW}, {0, UTIME_OMIT}};
    ::utimensat(AT_FDCWD, path.c_str(), times, 0);
    if (!ahead) ++hits_;
    remember();
    return key;
  };
  if (Verified(name, path)) return hit();

  // Whoever holds this lock is fetching the shard (or checking it): wait.
  Fd shard_lock = Lock(options_.dir + "/." + name + ".lock", /*try_only=*/false);
  if (!shard_lock.ok()) {
    Fault("cannot lock a shard: " + Errno(errno));
    return std::nullopt;
  }
  if (stopping_ && ahead) return std::nullopt;
  struct stat st;
  if (::stat(path.c_str(), &st) == 0) {
    if (Verified(name, path) || CheckFile(path, info)) return hit();
    log::Write(log::Level::kInfo, "loader", "shard cache: dropping damaged " + path + " (size or CRC32C differ)");
    ::unlink(path.c_str());
  }
  // Any ".part" of this shard was left by a killed fetch: we hold its lock.
  const std::string part_prefix = "." + name + std::string(kPart);
  if (Result<std::vector<Entry>> entries = Scan(options_.dir, false, ""); entries.ok()) {
    for (const Entry& entry : *entries) {
      if (entry.part && entry.name.rfind(part_prefix, 0) == 0) ::unlink((options_.dir + "/" + entry.name).c_str());
    }
  }
  if (!ahead) ++misses_;

  // The size reserves the room: from the manifest or listing, else the open.
  // A manifest's size and CRC32C, which the copy is checked against below,
  // also spare the shard the metadata request (OpenListed); without the CRC32C
  // the open brings the one the store keeps.
  std::unique_ptr<ReadableObject> object;
  auto open = [&] {
    Result<std::unique_ptr<ReadableObject>> opened =
        info.size && info.crc32c ? info.store->OpenListed(KnownWithCrc32c(info)) : info.store->OpenRead(info.key);
    if (opened.ok()) object = std::move(opened).value();
    return object != nullptr;
  };
  if (!info.size && !open()) return std::nullopt;  // the store read reports it
  const uint64_t size = info.size ? *info.size : object->info().size;
  bool bypass = false;
  const std::string part = options_.dir + "/" + part_prefix + std::to_string(size);
  Fd out(Reserve(shard, name, size, now, &bypass));
  if (!out.ok()) return std::nullopt;
  auto abandon = [&]() -> std::optional<std::string> {
    ::unlink(part.c_str());
    return std::nullopt;
  };
  if (!object && !open()) return abandon();
  if (object->info().size != size) return abandon();  // DataLoss from the store read
  if (!info.version.empty() && object->info().version != info.version) return abandon();  // likewise

  std::vector<char> buffer(kChunk);
  uint32_t crc = 0;
  uint64_t at = 0;
  while (at < size) {
    if (stopping_ && ahead) return abandon();
    Result<size_t> n = object->ReadAt(at, std::span<char>(buffer.data(), std::min<uint64_t>(kChunk, size - at)));
    if (!n.ok() || *n == 0) return abandon();  // the store read reports it
    crc = crc32c::Extend(crc, buffer.data(), *n);
    const Status written = WriteToFile(out.get(), std::span<const char>(buffer.data(), *n), std::nullopt, part);
    if (!written.ok()) {
      Fault(written.message());
      return abandon();
    }
    at += *n;
  }
  const std::optional<uint32_t> expected = info.crc32c ? info.crc32c : object->info().crc32c;
  if (expected && crc != *expected) return abandon();  // DataLoss from the store read
  if (::close(out.release()) != 0) {                   // a quota or NFS may say no only now
    Fault("closing " + part + ": " + Errno(errno));
    return abandon();
  }
  if (::rename(part.c_str(), path.c_str()) != 0) {
    Fault("renaming into " + path + ": " + Errno(errno));
    return abandon();
  }
  fetched_bytes_ += size;
  if (!remember()) return std::nullopt;
  return key;
}

int ShardCache::Reserve(uint32_t shard, const std::string& name, uint64_t size, const Now& now, bool* bypass) {
  Fd dir_lock = Lock(options_.dir + "/.lock", /*try_only=*/false);
  if (!dir_lock.ok()) {
    Fault("cannot lock " + options_.dir + "/.lock: " + Errno(errno));
    return -1;
  }
  Result<std::vector<Entry>> scanned = Scan(options_.dir, /*clean=*/true, name);
  if (!scanned.ok()) {
    Fault(scanned.status().message());
    return -1;
  }
  std::vector<Entry> entries = std::move(scanned).value();
  uint64_t used = 0;
  for (const Entry& entry : entries) used += entry.size;
  if (options_.limit > 0 && used + size > options_.limit) {
    if (size > options_.limit) {
      *bypass = true;
      return -1;
    }
    std::erase_if(entries, [](const Entry& e) { return e.part; });
    const bool next_use = options_.policy == CachePolicy::kNextUse && schedule_ && now.position;
    // The next use of a file, in plan steps from now; files of other
    // datasets are never used by this loader.
    auto distance = [&](const Entry& e) {
      auto found = by_name_.find(e.name);
      if (found == by_name_.end()) return CacheSchedule::kNever;
      return schedule_->NextUse(found->second, now.epoch, now.worker, *now.position, *now.position);
    };
    std::vector<std::pair<uint64_t, const Entry*>> ranked;  // (eviction rank, entry): highest goes first
    for (const Entry& e : entries) {
      ranked.emplace_back(next_use ? distance(e) : 0, &e);
    }
    std::sort(ranked.begin(), ranked.end(), [](const auto& a, const auto& b) {
      if (a.first != b.first) return a.first > b.first;
      return a.second->used_ns < b.second->used_ns;  // then least recently used
    });
    uint64_t mine = 0;
    if (next_use) {
      // The shard asked for competes with the victims by its next use after
      // now: asked for now, the use after this one; fetched ahead, the use
      // it is fetched for.
      mine = schedule_->NextUse(shard, now.epoch, now.worker, *now.position, *now.position + 1);
    }
    std::vector<const Entry*> victims;
    uint64_t freed = 0;
    for (const auto& [rank, entry] : ranked) {
      if (used - freed + size <= options_.limit) break;
      if (next_use && rank <= mine) {  // Belady: what we would evict is needed no later than this shard
        *bypass = true;
        return -1;
      }
      victims.push_back(entry);
      freed += entry->size;
    }
    if (used - freed + size > options_.limit) {  // fetches in flight hold the rest
      *bypass = true;
      return -1;
    }
    for (const Entry* victim : victims) {
      if (::unlink((options_.dir + "/" + victim->name).c_str()) == 0) evicted_bytes_ += victim->size;
    }
  }
  const std::string part = options_.dir + "/." + name + std::string(kPart) + std::to_string(size);
  int fd = ::open(part.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
  if (fd < 0) Fault("creating " + part + ": " + Errno(errno));
  return fd;
}

void ShardCache::QueueAhead(const Now& now) {
  std::vector<CacheSchedule::Use> uses =
      schedule_->Upcoming(now.worker, now.epoch, *now.position, static_cast<size_t>(options_.fetch_ahead));
  {
    std::lock_guard lock(mu_);
    if (stopping_) return;
    ahead_.clear();  // what was queued for an older position is done or superseded
    for (const CacheSchedule::Use& use : uses) ahead_.emplace_back(use.shard, now);
  }
  ahead_cv_.notify_all();
}

void ShardCache::AheadLoop() {
  std::unique_lock lock(mu_);
  while (true) {
    ahead_cv_.wait(lock, [&] { return stopping_ || !ahead_.empty(); });
    if (stopping_) return;
    auto [shard, now] = ahead_.front();
    ahead_.pop_front();
    ++ahead_running_;
    lock.unlock();
    if (!off_) {
      // Fetched ahead, the shard competes with the victims by the distance
      // from `now` to the use it is fetched for.
      Obtain(shard, now, /*ahead=*/true);
    }
    lock.lock();
    --ahead_running_;
  }
}

Result<std::vector<CachedFile>> ListShardCache(const std::string& dir) {
  SPOOL_ASSIGN_OR_RETURN(std::vector<Entry> entries, Scan(dir, /*clean=*/false, ""));
  std::vector<CachedFile> files;
  for (const Entry& entry : entries) {
    if (!entry.part) files.push_back(CachedFile{entry.name, entry.size, entry.used_ns});
  }
  std::sort(files.begin(), files.end(), [](const auto& a, const auto& b) { return a.name < b.name; });
  return files;
}

Result<uint64_t> ClearShardCache(const std::string& dir) {
  if (!std::filesystem::is_directory(dir)) return NotFoundError("shard cache folder " + dir + " does not exist");
  Fd dir_lock = Lock(dir + "/.lock", /*try_only=*/false);
  if (!dir_lock.ok()) return PermissionDeniedError("cannot lock " + dir + "/.lock: " + Errno(errno));
  SPOOL_ASSIGN_OR_RETURN(std::vector<Entry> entries, Scan(dir, /*clean=*/true, ""));
  uint64_t removed = 0;
  for (const Entry& entry : entries) {
    if (entry.part) continue;  // a fetch in flight
    if (::unlink((dir + "/" + entry.name).c_str()) == 0) removed += entry.size;
  }
  return removed;
}

}  // namespace spool::loader
