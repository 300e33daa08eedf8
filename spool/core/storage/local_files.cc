#include "spool/core/storage/local_files.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <cstring>
#include <random>

namespace spool {

namespace {
constexpr std::string_view kTemporaryMarker = ".spool-tmp-";
}  // namespace

std::string DescribeSpecialFile(mode_t mode) {
  if (S_ISFIFO(mode)) return "a FIFO (named pipe)";
  if (S_ISSOCK(mode)) return "a socket";
  if (S_ISCHR(mode)) return "a character device";
  if (S_ISBLK(mode)) return "a block device";
  return "a special file";
}

Status ErrnoStatus(int error, std::string_view path, std::string_view what) {
  std::string message = std::string(path) + ": " + std::string(what) + ": " + std::strerror(error);
  switch (error) {
    case ENOENT:
      return NotFoundError(std::move(message));
    case EACCES:
    case EPERM:
    case EROFS:
      return PermissionDeniedError(std::move(message) + " (check the file permissions)");
    case EEXIST:
      return AlreadyExistsError(std::move(message));
    case ENOSPC:
    case EDQUOT:
      return ResourceExhaustedError(std::move(message) + " (free some space and retry)");
    case EISDIR:
    case ENOTDIR:
    case ENOTEMPTY:
      return FailedPreconditionError(std::move(message));
    case EINVAL:
    case ENAMETOOLONG:
      return InvalidArgumentError(std::move(message));
    case EINTR:
    case EAGAIN:
      return UnavailableError(std::move(message));
    default:
      return InternalError(std::move(message));
  }
}

Status WriteToFile(int fd, std::span<const char> data, std::optional<uint64_t> offset, std::string_view path) {
  while (!data.empty()) {
    const size_t piece = std::min(data.size(), kFileWritePiece);
    const ssize_t n =
        offset ? ::pwrite(fd, data.data(), piece, static_cast<off_t>(*offset)) : ::write(fd, data.data(), piece);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) {  // 0 for a non-empty write: no room, as some file systems say it
      return ErrnoStatus(n < 0 ? errno : ENOSPC, path, offset ? "write at offset " + std::to_string(*offset) : "write");
    }
    data = data.subspan(static_cast<size_t>(n));
    if (offset) *offset += static_cast<uint64_t>(n);
  }
  return OkStatus();
}

Status SyncFolder(const std::string& folder) {
  const int fd = ::open(folder.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (fd < 0) return ErrnoStatus(errno, folder, "open the folder to fsync it");
  const int synced = ::fsync(fd);
  const int error = errno;
  ::close(fd);
  return synced == 0 ? OkStatus() : ErrnoStatus(error, folder, "fsync the folder");
}

std::string TemporaryNameFor(std::string_view file_name) {
  static std::atomic<uint64_t> counter{0};
  thread_local std::mt19937_64 random{std::random_device{}()};
  uint64_t salt = random() ^ (counter.fetch_add(1) * 0x9e3779b97f4a7c15ull);
  char suffix[17];
  static constexpr char kHex[] = "0123456789abcdef";
  for (int i = 0; i < 16; ++i) suffix[i] = kHex[(salt >> (4 * i)) & 0xf];
  suffix[16] = '\0';
  // Long names are shortened so the temporary name stays within NAME_MAX.
  std::string name(".");
  name.append(file_name.substr(0, 200)).append(kTemporaryMarker).append(suffix);
  return name;
}

bool IsTemporaryName(std::string_view file_name) {
  return file_name.starts_with('.') && file_name.find(kTemporaryMarker) != std::string_view::npos;
}

std::string_view TargetOfTemporaryName(std::string_view temporary_name) {
  return temporary_name.substr(1, temporary_name.rfind(kTemporaryMarker) - 1);
}

}  // namespace spool
