#include "spool/core/pacing_block.h"

#include <fcntl.h>
#include <pthread.h>
#include <sys/file.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <new>
#include <random>
#include <utility>

#include "spool/core/crc32c.h"

namespace spool {

struct PacingBlock::Layout {
  static constexpr uint64_t kMagic = 0x3176'676e'6963'6170;  // "pacingv1", written before publishing
  static constexpr size_t kKeySize = 512;
  uint64_t magic = 0;
  uint64_t size = 0;  // sizeof(Layout), a second check of the layout
  char key[kKeySize] = {};
  pthread_mutex_t mu;
  PacingState state;
};

namespace {

constexpr size_t kFileSize = 4096;
static_assert(sizeof(PacingBlock::Layout) <= kFileSize);

std::string Errno(const char* what, const std::string& path) {
  return std::string(what) + " " + path + ": " + std::strerror(errno);
}

// A file of kFileSize holding a fresh Layout for `key`, at `temporary`.
bool WriteFresh(const std::string& temporary, const std::string& key, std::string* why_not) {
  const int fd = ::open(temporary.c_str(), O_RDWR | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
  if (fd < 0) {
    *why_not = Errno("cannot create", temporary);
    return false;
  }
  // Reserved, not only sized: on a full tmpfs ftruncate succeeds and the
  // first write through the mapping would be a SIGBUS.
  void* mapped = MAP_FAILED;
  errno = ::posix_fallocate(fd, 0, kFileSize);
  if (errno == 0) mapped = ::mmap(nullptr, kFileSize, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
  ::close(fd);
  if (mapped == MAP_FAILED) {
    *why_not = Errno("cannot reserve or map", temporary);
    ::unlink(temporary.c_str());
    return false;
  }
  auto* layout = new (mapped) PacingBlock::Layout;
  pthread_mutexattr_t attributes;
  pthread_mutexattr_init(&attributes);
  pthread_mutexattr_setpshared(&attributes, PTHREAD_PROCESS_SHARED);
  pthread_mutexattr_setrobust(&attributes, PTHREAD_MUTEX_ROBUST);
  pthread_mutex_init(&layout->mu, &attributes);
  pthread_mutexattr_destroy(&attributes);
  std::memcpy(layout->key, key.data(), key.size());
  layout->size = sizeof(PacingBlock::Layout);
  layout->magic = PacingBlock::Layout::kMagic;
  ::munmap(mapped, kFileSize);
  return true;
}

// Removes the file at `path` when no process uses it: an exclusive lock on
// a fresh open file is had only when nobody holds a shared one, and the
// name must still be that file, of this user.
void RemoveIfUnused(const std::string& path) {
  const int probe = ::open(path.c_str(), O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC);
  if (probe < 0) return;
  struct stat opened {
  }, named{};
  if (::flock(probe, LOCK_EX | LOCK_NB) == 0 && ::fstat(probe, &opened) == 0 && S_ISREG(opened.st_mode) &&
      opened.st_uid == ::geteuid() && ::stat(path.c_str(), &named) == 0 && opened.st_ino == named.st_ino &&
      opened.st_dev == named.st_dev) {
    ::unlink(path.c_str());
  }
  ::close(probe);
}

// This user's pacing files in `dir` that no process uses: left by processes
// killed before they could remove them. Swept when a new file is made, so
// they do not pile up on a host where jobs are killed.
void RemoveAbandoned(const std::string& dir) {
  const std::string mine = "spool-pacing-v1-" + std::to_string(::geteuid()) + "-";
  std::error_code error;
  for (const auto& entry : std::filesystem::directory_iterator(dir, error)) {
    if (entry.path().filename().string().starts_with(mine)) RemoveIfUnused(entry.path().string());
  }
}

}  // namespace

PacingBlock::PacingBlock(Layout* layout, int fd, std::string path) : layout_(layout), fd_(fd), path_(std::move(path)) {}

std::unique_ptr<PacingBlock> PacingBlock::Private() {
  auto* layout = new Layout;
  pthread_mutex_init(&layout->mu, nullptr);
  return std::unique_ptr<PacingBlock>(new PacingBlock(layout, -1, ""));
}

std::string PacingBlock::PathFor(const std::string& key, const std::string& dir) {
  char name[64];
  std::snprintf(name, sizeof(name), "/spool-pacing-v1-%u-%08x", static_cast<unsigned>(::geteuid()),
                static_cast<unsigned>(crc32c::Value(key)));
  return dir + name;
}

std::unique_ptr<PacingBlock> PacingBlock::OnHost(const std::string& key, const std::string& dir, std::string* why_not) {
  if (key.size() >= Layout::kKeySize) {
    *why_not = "the store's name is too long for a shared pacing file";
    return nullptr;
  }
  const std::string path = PathFor(key, dir);
  // Each user of the file holds a shared flock on it; the last to let go
  // removes it (the destructor). A file removed between our open and our
  // lock is not used: a new one is made. Nothing here blocks: the file is
  // checked before it is locked, and a lock that cannot be had at once
  // (its last user removing it) is tried again, then given up.
  for (int attempt = 0; attempt < 5; ++attempt) {
    if (attempt > 0) ::usleep(2000);
    const int flags = O_RDWR | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC;
    int fd = ::open(path.c_str(), flags);
    if (fd < 0 && errno == ENOENT) {
      // Made whole aside, then published: link(2) fails on an existing
      // name, so of processes racing here one publishes and all map it.
      RemoveAbandoned(dir);
      const std::string temporary =
          dir + "/.spool-pacing-" + std::to_string(::getpid()) + "-" + std::to_string(std::random_device{}());
      if (!WriteFresh(temporary, key, why_not)) return nullptr;
      const bool linked = ::link(temporary.c_str(), path.c_str()) == 0 || errno == EEXIST;
      if (!linked) *why_not = Errno("cannot publish", path);
      ::unlink(temporary.c_str());
      if (!linked) return nullptr;
      fd = ::open(path.c_str(), flags);
      if (fd < 0 && errno == ENOENT) continue;  // its last user removed it meanwhile
    }
    if (fd < 0) {
      *why_not = Errno("cannot open", path);
      return nullptr;
    }
    struct stat info {};
    const bool ours = ::fstat(fd, &info) == 0 && S_ISREG(info.st_mode) && info.st_uid == ::geteuid() &&
                      (info.st_mode & 077) == 0 && info.st_size == static_cast<off_t>(kFileSize);
    if (!ours) {
      *why_not = path + " is not a private file of this user of the expected size";
      ::close(fd);
      return nullptr;
    }
    if (::flock(fd, LOCK_SH | LOCK_NB) != 0 || ::fstat(fd, &info) != 0 || info.st_nlink == 0) {
      *why_not = Errno("cannot lock", path);
      ::close(fd);
      continue;  // being removed by its last user: a new one will be made
    }
    void* mapped = ::mmap(nullptr, kFileSize, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
    if (mapped == MAP_FAILED) {
      *why_not = Errno("cannot map", path);
      ::close(fd);
      return nullptr;
    }
    auto* layout = static_cast<Layout*>(mapped);
    if (layout->magic != Layout::kMagic || layout->size != sizeof(Layout) ||
        std::strncmp(layout->key, key.c_str(), Layout::kKeySize) != 0) {
      ::munmap(mapped, kFileSize);
      ::close(fd);
      *why_not = path + " belongs to another store or layout";
      return nullptr;
    }
    return std::unique_ptr<PacingBlock>(new PacingBlock(layout, fd, path));
  }
  if (why_not->empty()) *why_not = path + " kept being removed while it was opened";
  *why_not += " (gave up after 5 tries)";
  return nullptr;
}

PacingBlock::~PacingBlock() {
  if (on_host()) {
    ::munmap(layout_, kFileSize);
    // The last user removes the file. Our descriptor's lock is shared with
    // forked children (flock locks belong to the open file, which fork
    // shares), so it is closed, not converted: the lock stays while any
    // child still holds the open file.
    ::close(fd_);
    RemoveIfUnused(path_);
  } else {
    pthread_mutex_destroy(&layout_->mu);
    delete layout_;
  }
}

PacingBlock::Guard::Guard(PacingBlock& block) : block_(block), state_(&block.layout_->state) {
  // EOWNERDEAD: a process died holding the lock. The state is plain numbers,
  // each written whole, so it is taken as it is. Any other failure (a file
  // another process of this user damaged) leaves the numbers unguarded:
  // at worst a pace is wrong, never a wait forever.
  const int locked = pthread_mutex_lock(&block_.layout_->mu);
  if (locked == EOWNERDEAD) pthread_mutex_consistent(&block_.layout_->mu);
  held_ = locked == 0 || locked == EOWNERDEAD;
}

PacingBlock::Guard::~Guard() {
  if (held_) pthread_mutex_unlock(&block_.layout_->mu);
}

}  // namespace spool
