#include "spool/core/storage/local_store.h"

#include <dirent.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <set>
#include <utility>
#include <vector>

#include "spool/core/storage/local_files.h"

namespace spool {

namespace {

constexpr size_t kWriteBufferSize = 1 << 20;

std::string PathOf(std::string_view key) {
  std::string path("/");
  path.append(key);
  return path;
}

// "'/the/path'" for messages that quote what the user gave.
std::string Quoted(std::string_view key) {
  std::string quoted("'");
  quoted.append(PathOf(key)).append("'");
  return quoted;
}

// Checks the '/'-separated segments of `part`: none may be empty, "." or "..".
Status CheckSegments(std::string_view text, std::string_view part) {
  if (text.find('\0') != std::string_view::npos) {
    return InvalidArgumentError(Quoted(text) + "': the path contains a NUL byte");
  }
  size_t start = 0;
  while (start < part.size()) {
    size_t end = part.find('/', start);
    if (end == std::string_view::npos) end = part.size();
    std::string_view segment = part.substr(start, end - start);
    if (segment.empty() || segment == "." || segment == "..") {
      return InvalidArgumentError(Quoted(text) +
                                  "': a local path may not contain empty, '.' or '..' segments; "
                                  "give it in its plain absolute form");
    }
    start = end + 1;
  }
  return OkStatus();
}

Status CheckFileKey(std::string_view key) {
  if (key.empty()) return InvalidArgumentError("'/' is a directory, not a file");
  if (key.ends_with('/')) {
    return InvalidArgumentError(Quoted(key) + "' names a directory (it ends with '/'), not a file");
  }
  return CheckSegments(key, key);
}

std::string VersionOf(const struct stat& st) {
  uint64_t mtime_ns = static_cast<uint64_t>(st.st_mtim.tv_sec) * 1000000000ull + st.st_mtim.tv_nsec;
  return std::to_string(st.st_size) + "-" + std::to_string(mtime_ns) + "-" + std::to_string(st.st_ino);
}

ObjectInfo InfoOf(std::string key, const struct stat& st) {
  ObjectInfo info;
  info.key = std::move(key);
  info.size = static_cast<uint64_t>(st.st_size);
  info.version = VersionOf(st);
  auto since_epoch = std::chrono::seconds(st.st_mtim.tv_sec) + std::chrono::nanoseconds(st.st_mtim.tv_nsec);
  info.updated = std::chrono::system_clock::time_point(
      std::chrono::duration_cast<std::chrono::system_clock::duration>(since_epoch));
  return info;
}

Status NotAFile(std::string_view key) {
  return NotFoundError(PathOf(key) + " is a directory, not a file");
}

class FileDescriptor {
 public:
  explicit FileDescriptor(int fd = -1) : fd_(fd) {}
  FileDescriptor(FileDescriptor&& other) noexcept : fd_(std::exchange(other.fd_, -1)) {}
  FileDescriptor& operator=(FileDescriptor&& other) noexcept {
    Reset();
    fd_ = std::exchange(other.fd_, -1);
    return *this;
  }
  ~FileDescriptor() { Reset(); }
  int get() const { return fd_; }
  void Reset() {
    if (fd_ >= 0) ::close(fd_);
    fd_ = -1;
  }

 private:
  int fd_;
};

class LocalReadable : public ReadableObject {
 public:
  LocalReadable(FileDescriptor fd, std::string path, ObjectInfo info, struct timespec mtime)
      : fd_(std::move(fd)), path_(std::move(path)), info_(std::move(info)), mtime_(mtime) {}

  const ObjectInfo& info() const override { return info_; }
  bool reads_are_local() const override { return true; }

  Result<size_t> ReadAt(uint64_t offset, std::span<char> buffer) override {
    // The handle keeps the inode it opened, so a file replaced by rename
    // still reads as it was; only a change in place is detected here.
    struct stat st;
    if (::fstat(fd_.get(), &st) != 0) return ErrnoStatus(errno, path_, "stat");
    if (static_cast<uint64_t>(st.st_size) != info_.size || st.st_mtim.tv_sec != mtime_.tv_sec ||
        st.st_mtim.tv_nsec != mtime_.tv_nsec) {
      return FailedPreconditionError(path_ + " was modified in place after it was opened; open it again");
    }
    if (offset > info_.size) {
      return OutOfRangeError(path_ + ": offset " + std::to_string(offset) + " is past the end (size " +
                             std::to_string(info_.size) + ")");
    }
    size_t want = std::min<uint64_t>(buffer.size(), info_.size - offset);
    size_t done = 0;
    while (done < want) {
      ssize_t n = ::pread(fd_.get(), buffer.data() + done, want - done, static_cast<off_t>(offset + done));
      if (n < 0) {
        if (errno == EINTR) continue;
        return ErrnoStatus(errno, path_, "read at offset " + std::to_string(offset + done));
      }
      if (n == 0) return ShortReadError(path_, offset, done, want);  // truncated since the check above
      done += static_cast<size_t>(n);
    }
    return done;
  }

 private:
  FileDescriptor fd_;
  std::string path_;
  ObjectInfo info_;
  struct timespec mtime_;
};

// Moves `from` to `to`, failing with EEXIST when `to` exists (atomically).
int RenameNoReplace(const std::string& from, const std::string& to) {
  if (::renameat2(AT_FDCWD, from.c_str(), AT_FDCWD, to.c_str(), RENAME_NOREPLACE) == 0) return 0;
  if (errno != EINVAL && errno != ENOSYS) return errno;
  // Filesystems without RENAME_NOREPLACE: link() is atomic and exclusive too.
  if (::link(from.c_str(), to.c_str()) != 0) return errno;
  ::unlink(from.c_str());
  return 0;
}

class LocalWritable : public WritableObject {
 public:
  LocalWritable(std::string key, std::string dir, std::string temp_path, FileDescriptor fd, WriteOptions options)
      : key_(std::move(key)),
        path_(PathOf(key_)),
        dir_(std::move(dir)),
        temp_path_(std::move(temp_path)),
        fd_(std::move(fd)),
        options_(std::move(options)) {}

  ~LocalWritable() override {
    if (!finished_) Abort();
  }

  Status Append(std::string_view data) override {
    if (finished_) return FailedPreconditionError(path_ + ": Append after Close or Abort");
    appended_ += data.size();
    if (buffer_.size() + data.size() <= kWriteBufferSize) {
      buffer_.append(data);
      return OkStatus();
    }
    SPOOL_RETURN_IF_ERROR(Flush());
    if (data.size() >= kWriteBufferSize) return WriteToFile(fd_.get(), data, std::nullopt, path_);
    buffer_.append(data);
    return OkStatus();
  }

  Result<ObjectInfo> Close() override {
    if (finished_) return FailedPreconditionError(path_ + ": Close after Close or Abort");
    Result<ObjectInfo> info = Commit();
    if (!info.ok()) Abort();
    finished_ = true;
    return info;
  }

  void Abort() override {
    finished_ = true;
    buffer_.clear();
    fd_.Reset();
    if (!temp_path_.empty()) ::unlink(temp_path_.c_str());
    temp_path_.clear();
  }

  uint64_t bytes_appended() const override { return appended_; }

 private:
  Status Flush() {
    Status status = WriteToFile(fd_.get(), buffer_, std::nullopt, path_);
    buffer_.clear();
    return status;
  }

  Result<ObjectInfo> Commit() {
    SPOOL_RETURN_IF_ERROR(Flush());
    if (::fsync(fd_.get()) != 0) return ErrnoStatus(errno, path_, "fsync");
    struct stat st;
    if (::fstat(fd_.get(), &st) != 0) return ErrnoStatus(errno, path_, "stat");
    fd_.Reset();
    if (options_.if_not_exists) {
      int error = RenameNoReplace(temp_path_, path_);
      if (error == EEXIST) return AlreadyExistsError(path_ + " already exists (create-only write)");
      if (error != 0) return ErrnoStatus(error, path_, "rename into place");
    } else if (::rename(temp_path_.c_str(), path_.c_str()) != 0) {
      return ErrnoStatus(errno, path_, "rename into place");
    }
    temp_path_.clear();
    SyncFolder(dir_).IgnoreError();  // the object is in place either way; only its durability is lost
    return InfoOf(key_, st);
  }

  std::string key_;
  std::string path_;
  std::string dir_;
  std::string temp_path_;  // empty once renamed or removed
  FileDescriptor fd_;
  WriteOptions options_;
  std::string buffer_;
  uint64_t appended_ = 0;
  bool finished_ = false;
};

// One page of a listing, filled by walking folders in key order.
class Lister {
 public:
  explicit Lister(const ListOptions& options) : options_(options) {}

  // Visits the folder `folder_key` ("" or ending in '/'), keeping only names
  // that start with `name_prefix`. Returns false once the page is full.
  Result<bool> Walk(const std::string& folder_key, std::string_view name_prefix) {
    std::string dir_path = PathOf(folder_key);
    FileDescriptor dir_fd(::open(dir_path.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC));
    if (dir_fd.get() < 0) {
      // A prefix whose folder does not exist simply matches nothing, and a
      // folder removed while we walk has nothing left to list. An unreadable
      // folder is an error: a listing must not silently miss files.
      if (errno == ENOENT || errno == ENOTDIR) return true;
      return ErrnoStatus(errno, dir_path, "list");
    }
    struct stat dir_stat;
    if (::fstat(dir_fd.get(), &dir_stat) != 0) return ErrnoStatus(errno, dir_path, "stat");
    auto identity = std::make_pair(dir_stat.st_dev, dir_stat.st_ino);
    if (!ancestors_.insert(identity).second) return true;  // a symbolic link loop
    Result<std::vector<Entry>> entries = ReadEntries(dir_fd.get(), dir_path, name_prefix);
    Result<bool> more = entries.ok() ? Visit(folder_key, *entries, dir_fd.get()) : Result<bool>(entries.status());
    ancestors_.erase(identity);
    return more;
  }

  ListPage TakePage() { return std::move(page_); }

 private:
  struct Entry {
    std::string sort_name;  // the name, plus '/' for folders
    bool is_dir = false;
    std::string skipped;  // neither a file nor a folder: what it is (ListPage::skipped)
  };

  static Result<std::vector<Entry>> ReadEntries(int dir_fd, const std::string& dir_path,
                                                std::string_view name_prefix) {
    int fd = ::dup(dir_fd);
    if (fd < 0) return ErrnoStatus(errno, dir_path, "list");
    DIR* dir = ::fdopendir(fd);
    if (dir == nullptr) {
      ::close(fd);
      return ErrnoStatus(errno, dir_path, "list");
    }
    std::vector<Entry> entries;
    while (struct dirent* entry = ::readdir(dir)) {
      std::string_view name = entry->d_name;
      if (name == "." || name == ".." || !name.starts_with(name_prefix) || IsTemporaryName(name)) continue;
      bool is_dir = entry->d_type == DT_DIR;
      std::string skipped;
      if (entry->d_type != DT_REG && !is_dir) {
        // A link, a special file, or a file system that does not say: look.
        struct stat st;
        if (::fstatat(dir_fd, entry->d_name, &st, 0) == 0) {
          is_dir = S_ISDIR(st.st_mode);
          if (!is_dir && !S_ISREG(st.st_mode)) skipped = DescribeSpecialFile(st.st_mode);
        } else {
          int error = errno;
          struct stat link;
          if (::fstatat(dir_fd, entry->d_name, &link, AT_SYMLINK_NOFOLLOW) != 0 || !S_ISLNK(link.st_mode)) {
            continue;  // removed while we list
          }
          skipped = error == ENOENT ? "a symbolic link to nothing"
                                    : "a symbolic link whose target cannot be reached (" +
                                          std::string(std::strerror(error)) + ")";
        }
      }
      entries.push_back({std::string(name) + (is_dir ? "/" : ""), is_dir, std::move(skipped)});
    }
    ::closedir(dir);
    // Sorting folders as "name/" makes the depth-first walk yield full keys
    // in byte order ("a-c" < "a/b" < "a0").
    std::sort(entries.begin(), entries.end(),
              [](const Entry& a, const Entry& b) { return a.sort_name < b.sort_name; });
    return entries;
  }

  Result<bool> Visit(const std::string& folder_key, const std::vector<Entry>& entries, int dir_fd) {
    const std::string& token = options_.page_token;
    for (const Entry& entry : entries) {
      std::string key = folder_key + entry.sort_name;
      if (!entry.skipped.empty()) {
        if (key > token && !Skip(key, entry.skipped)) return false;
        continue;
      }
      if (entry.is_dir) {
        if (!options_.delimiter.empty()) {
          if (key > token && !Emit(key, nullptr)) return false;
          continue;
        }
        // Every key below starts with `key`: skip the folder when all of
        // them sort before the token.
        if (key < token && !std::string_view(token).starts_with(key)) continue;
        SPOOL_ASSIGN_OR_RETURN(bool more, Walk(key, ""));
        if (!more) return false;
        continue;
      }
      if (key <= token) continue;
      struct stat st;
      std::string name = entry.sort_name;
      if (::fstatat(dir_fd, name.c_str(), &st, 0) != 0 || !S_ISREG(st.st_mode)) continue;
      if (!Emit(key, &st)) return false;
    }
    return true;
  }

  // Adds a key (a file when `st` is set, else a common prefix); false when
  // the page was already full, which ends the walk.
  bool Emit(const std::string& key, const struct stat* st) {
    if (emitted_ == static_cast<size_t>(options_.max_keys)) {
      page_.next_page_token = last_key_;
      return false;
    }
    if (st != nullptr) {
      page_.objects.push_back(InfoOf(key, *st));
    } else {
      page_.common_prefixes.push_back(key);
    }
    last_key_ = key;
    ++emitted_;
    return true;
  }

  // Notes an entry that is neither a file nor a folder; false when the page
  // was already full (the next page, which starts after the last key
  // emitted, notes it then).
  bool Skip(const std::string& key, const std::string& what) {
    if (emitted_ == static_cast<size_t>(options_.max_keys)) {
      page_.next_page_token = last_key_;
      return false;
    }
    page_.skipped.push_back({key, what});
    return true;
  }

  const ListOptions& options_;
  ListPage page_;
  std::string last_key_;
  size_t emitted_ = 0;
  std::set<std::pair<dev_t, ino_t>> ancestors_;
};

}  // namespace

std::string LocalStore::Describe(std::string_view key) const { return PathOf(key); }

Result<ObjectInfo> LocalStore::Stat(std::string_view key) {
  SPOOL_RETURN_IF_ERROR(CheckFileKey(key));
  std::string path = PathOf(key);
  struct stat st;
  if (::stat(path.c_str(), &st) != 0) {
    if (errno == ENOENT || errno == ENOTDIR) return NotFoundError(path + ": no such file");
    return ErrnoStatus(errno, path, "stat");
  }
  if (S_ISDIR(st.st_mode)) return NotAFile(key);
  if (!S_ISREG(st.st_mode)) return NotFoundError(path + " is not a regular file");
  return InfoOf(std::string(key), st);
}

Result<ListPage> LocalStore::List(const ListOptions& options) {
  if (options.max_keys <= 0) return InvalidArgumentError(PathOf(options.prefix) + ": max_keys must be positive");
  if (!options.delimiter.empty() && options.delimiter != "/") {
    return InvalidArgumentError(PathOf(options.prefix) + ": local listings support the delimiter '/' only");
  }
  const std::string& prefix = options.prefix;
  size_t slash = prefix.rfind('/');
  std::string folder_key = slash == std::string::npos ? "" : prefix.substr(0, slash + 1);
  std::string_view folder_part = folder_key;
  if (!folder_part.empty()) folder_part.remove_suffix(1);  // the trailing '/'
  SPOOL_RETURN_IF_ERROR(CheckSegments(prefix, folder_part));
  Lister lister(options);
  std::string_view name_prefix = std::string_view(prefix).substr(folder_key.size());
  SPOOL_RETURN_IF_ERROR(lister.Walk(folder_key, name_prefix).status());
  return lister.TakePage();
}

Result<std::vector<IncompleteUpload>> LocalStore::ListIncompleteUploads(std::string_view prefix) {
  size_t slash = prefix.rfind('/');
  std::string folder_key(slash == std::string_view::npos ? "" : prefix.substr(0, slash + 1));
  std::vector<IncompleteUpload> uploads;
  std::error_code error;
  // Symbolic links to folders are not followed: a temporary file is always
  // created in the real folder of its target.
  std::filesystem::recursive_directory_iterator walk(PathOf(folder_key),
                                                     std::filesystem::directory_options::skip_permission_denied, error);
  if (error == std::errc::no_such_file_or_directory || error == std::errc::not_a_directory) return uploads;
  if (error) return ErrnoStatus(error.value(), PathOf(folder_key), "list");
  for (auto end = std::filesystem::recursive_directory_iterator(); walk != end; walk.increment(error)) {
    if (error) return ErrnoStatus(error.value(), PathOf(folder_key), "list");
    const std::string name = walk->path().filename().string();
    if (!IsTemporaryName(name) || !walk->is_regular_file(error)) continue;
    // Keys are paths without the leading '/'.
    std::string temporary_key = walk->path().string().substr(1);
    std::string key = walk->path().parent_path().string().substr(1);
    key.append(key.empty() ? "" : "/").append(TargetOfTemporaryName(name));
    if (!key.starts_with(prefix)) continue;
    struct stat st;
    if (::stat(walk->path().c_str(), &st) != 0) continue;  // finished or removed meanwhile
    auto started = std::chrono::system_clock::time_point(std::chrono::duration_cast<std::chrono::system_clock::duration>(
        std::chrono::seconds(st.st_mtim.tv_sec) + std::chrono::nanoseconds(st.st_mtim.tv_nsec)));
    uploads.push_back({std::move(key), std::move(temporary_key), started});
  }
  std::sort(uploads.begin(), uploads.end(),
            [](const IncompleteUpload& a, const IncompleteUpload& b) { return a.id < b.id; });
  return uploads;
}

Status LocalStore::AbortIncompleteUpload(const IncompleteUpload& upload) {
  std::string path = PathOf(upload.id);
  if (!IsTemporaryName(std::filesystem::path(path).filename().string())) {
    return InvalidArgumentError(path + " is not a temporary file of an unfinished write; not deleting it");
  }
  if (::unlink(path.c_str()) != 0 && errno != ENOENT) return ErrnoStatus(errno, path, "delete");
  return OkStatus();
}

Result<std::unique_ptr<ReadableObject>> LocalStore::OpenRead(std::string_view key) {
  SPOOL_RETURN_IF_ERROR(CheckFileKey(key));
  std::string path = PathOf(key);
  FileDescriptor fd(::open(path.c_str(), O_RDONLY | O_CLOEXEC));
  if (fd.get() < 0) {
    if (errno == ENOENT || errno == ENOTDIR) return NotFoundError(path + ": no such file");
    return ErrnoStatus(errno, path, "open");
  }
  struct stat st;
  if (::fstat(fd.get(), &st) != 0) return ErrnoStatus(errno, path, "stat");
  if (S_ISDIR(st.st_mode)) return NotAFile(key);
  if (!S_ISREG(st.st_mode)) return NotFoundError(path + " is not a regular file");
  ObjectInfo info = InfoOf(std::string(key), st);
  return std::unique_ptr<ReadableObject>(
      std::make_unique<LocalReadable>(std::move(fd), std::move(path), std::move(info), st.st_mtim));
}

Result<std::unique_ptr<WritableObject>> LocalStore::OpenWrite(std::string_view key, const WriteOptions& options) {
  SPOOL_RETURN_IF_ERROR(CheckFileKey(key));
  std::string path = PathOf(key);
  std::filesystem::path target(path);
  std::string dir = target.parent_path().string();
  std::error_code error;
  std::filesystem::create_directories(dir, error);
  if (error == std::errc::file_exists || error == std::errc::not_a_directory) {
    return FailedPreconditionError(dir + " cannot be created for " + path + ": a part of that path is a file");
  }
  if (error) return ErrnoStatus(error.value(), dir, "create directory");
  struct stat st;
  if (::stat(path.c_str(), &st) == 0 && S_ISDIR(st.st_mode)) {
    return FailedPreconditionError(path + " is a directory; write to a file inside it");
  }
  std::string name = target.filename().string();
  for (int attempt = 0;; ++attempt) {
    std::string temp_path = dir + "/" + TemporaryNameFor(name);
    FileDescriptor fd(::open(temp_path.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0666));
    if (fd.get() >= 0) {
      return std::unique_ptr<WritableObject>(std::make_unique<LocalWritable>(
          std::string(key), std::move(dir), std::move(temp_path), std::move(fd), options));
    }
    if (errno != EEXIST || attempt == 10) return ErrnoStatus(errno, path, "create a temporary file beside");
  }
}

Status LocalStore::Delete(std::string_view key) {
  SPOOL_RETURN_IF_ERROR(CheckFileKey(key));
  std::string path = PathOf(key);
  if (::unlink(path.c_str()) == 0 || errno == ENOENT || errno == ENOTDIR) return OkStatus();
  if (errno == EISDIR) return FailedPreconditionError(path + " is a directory; delete the files in it instead");
  return ErrnoStatus(errno, path, "delete");
}

}  // namespace spool
