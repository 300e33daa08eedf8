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
  void* mapped = MAP_FAILED;
  if (::ftruncate(fd, kFileSize) == 0) mapped = ::mmap(nullptr, kFileSize, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
  ::close(fd);
  if (mapped == MAP_FAILED) {
    *why_not = Errno("cannot size or map", temporary);
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

}  // namespace

PacingBlock::PacingBlock(Layout* layout, int fd, std::string path)
    : layout_(layout), fd_(fd), path_(std::move(path)), opener_(::getpid()) {}

std::unique_ptr<PacingBlock> PacingBlock::Private() {
  auto* layout = new Layout;
  pthread_mutex_init(&layout->mu, nullptr);
  return std::unique_ptr<PacingBlock>(new PacingBlock(layout, -1, ""));
}

std::unique_ptr<PacingBlock> PacingBlock::OnHost(const std::string& key, const std::string& dir, std::string* why_not) {
  if (key.size() >= Layout::kKeySize) {
    *why_not = "the store's name is too long for a shared pacing file";
    return nullptr;
  }
  char name[64];
  std::snprintf(name, sizeof(name), "/spool-pacing-v1-%u-%08x", static_cast<unsigned>(::geteuid()),
                static_cast<unsigned>(crc32c::Value(key)));
  const std::string path = dir + name;
  // Each user of the file holds a shared flock on it; the last to close it
  // removes it (the destructor). A file removed between our open and our
  // lock is not used: a new one is made.
  for (int attempt = 0; attempt < 3; ++attempt) {
    int fd = ::open(path.c_str(), O_RDWR | O_NOFOLLOW | O_CLOEXEC);
    if (fd < 0 && errno == ENOENT) {
      // Made whole aside, then published: link(2) fails on an existing
      // name, so of processes racing here one publishes and all map it.
      const std::string temporary =
          dir + "/.spool-pacing-" + std::to_string(::getpid()) + "-" + std::to_string(std::random_device{}());
      if (!WriteFresh(temporary, key, why_not)) return nullptr;
      const bool linked = ::link(temporary.c_str(), path.c_str()) == 0 || errno == EEXIST;
      if (!linked) *why_not = Errno("cannot publish", path);
      ::unlink(temporary.c_str());
      if (!linked) return nullptr;
      fd = ::open(path.c_str(), O_RDWR | O_NOFOLLOW | O_CLOEXEC);
    }
    if (fd < 0) {
      *why_not = Errno("cannot open", path);
      return nullptr;
    }
    struct stat info {};
    if (::flock(fd, LOCK_SH) != 0 || ::fstat(fd, &info) != 0) {
      *why_not = Errno("cannot lock", path);
      ::close(fd);
      return nullptr;
    }
    if (info.st_nlink == 0) {  // removed by its last user meanwhile
      ::close(fd);
      continue;
    }
    const bool ours = S_ISREG(info.st_mode) && info.st_uid == ::geteuid() && (info.st_mode & 077) == 0 &&
                      info.st_size == static_cast<off_t>(kFileSize);
    void* mapped = ours ? ::mmap(nullptr, kFileSize, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0) : MAP_FAILED;
    if (!ours || mapped == MAP_FAILED) {
      *why_not = ours ? Errno("cannot map", path) : path + " is not a private file of this user of the expected size";
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
  *why_not = path + " kept being removed while opened";
  return nullptr;
}

PacingBlock::~PacingBlock() {
  if (on_host()) {
    ::munmap(layout_, kFileSize);
    // The last user removes the file: no other shared lock is left, and the
    // name still is this file. A forked child's descriptor shares the
    // opener's lock (flock(2) locks belong to the open file), so only the
    // opener may try: the child's try would take the lock from under it.
    struct stat ours {
    }, named{};
    if (::getpid() == opener_ && ::flock(fd_, LOCK_EX | LOCK_NB) == 0 && ::fstat(fd_, &ours) == 0 &&
        ::stat(path_.c_str(), &named) == 0 && ours.st_ino == named.st_ino && ours.st_dev == named.st_dev) {
      ::unlink(path_.c_str());
    }
    ::close(fd_);
  } else {
    pthread_mutex_destroy(&layout_->mu);
    delete layout_;
  }
}

PacingBlock::Guard::Guard(PacingBlock& block) : block_(block), state_(&block.layout_->state) {
  // EOWNERDEAD: a process died holding the lock. The state is plain numbers,
  // each written whole, so it is taken as it is.
  if (pthread_mutex_lock(&block_.layout_->mu) == EOWNERDEAD) pthread_mutex_consistent(&block_.layout_->mu);
}

PacingBlock::Guard::~Guard() { pthread_mutex_unlock(&block_.layout_->mu); }

}  // namespace spool
