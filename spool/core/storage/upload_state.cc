#include "spool/core/storage/upload_state.h"

#include <fcntl.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <map>
#include <sstream>
#include <utility>

#include "spool/core/env.h"

namespace spool {
namespace {

namespace fs = std::filesystem;

constexpr std::string_view kMagic = "spool-upload-state/1";

// A stable name for a destination: FNV-1a 64 of its URL (the URL itself is
// kept inside and checked on Load, so a collision only costs a resume).
std::string FileNameFor(const std::string& destination) {
  uint64_t hash = 1469598103934665603ull;
  for (unsigned char c : destination) {
    hash ^= c;
    hash *= 1099511628211ull;
  }
  char name[32];
  std::snprintf(name, sizeof name, "%016llx", static_cast<unsigned long long>(hash));
  return name;
}

bool HasNewline(const std::string& text) { return text.find_first_of("\r\n") != std::string::npos; }

}  // namespace

fs::path UploadStateFolder() {
  const Env env = CurrentEnv();
  if (auto cache = env.Get("XDG_CACHE_HOME"); cache && cache->front() == '/') {
    return fs::path(*cache) / "spool" / "uploads";
  }
  if (auto home = env.Get("HOME"); home && home->front() == '/') {
    return fs::path(*home) / ".cache" / "spool" / "uploads";
  }
  return {};
}

Result<UploadStateFile> UploadStateFile::Open(const std::string& destination, const fs::path& folder) {
  if (folder.empty()) return FailedPreconditionError("no folder for upload state (set HOME or XDG_CACHE_HOME)");
  std::error_code error;
  fs::create_directories(folder, error);
  if (error) return UnavailableError("cannot make " + folder.string() + ": " + error.message());
  ::chmod(folder.c_str(), 0700);
  const fs::path path = folder / (FileNameFor(destination) + ".state");
  const fs::path lock = folder / (FileNameFor(destination) + ".lock");
  const int fd = ::open(lock.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0600);
  if (fd < 0) return UnavailableError("cannot open " + lock.string() + ": " + std::strerror(errno));
  if (::flock(fd, LOCK_EX | LOCK_NB) != 0) {
    ::close(fd);
    return UploadStateFile(path, -1);  // another upload to the same object holds it
  }
  return UploadStateFile(path, fd);
}

UploadStateFile::UploadStateFile(UploadStateFile&& other) noexcept
    : path_(std::move(other.path_)), lock_fd_(std::exchange(other.lock_fd_, -1)) {}

UploadStateFile::~UploadStateFile() {
  if (lock_fd_ >= 0) ::close(lock_fd_);  // releases the flock
}

std::optional<UploadRecord> UploadStateFile::Load() const {
  if (!locked()) return std::nullopt;
  std::ifstream in(path_);
  std::string line;
  if (!std::getline(in, line) || line != kMagic) return std::nullopt;
  std::map<std::string, std::string> fields;
  while (std::getline(in, line)) {
    const size_t eq = line.find('=');
    if (eq != std::string::npos) fields[line.substr(0, eq)] = line.substr(eq + 1);
  }
  for (const char* name : {"destination", "source", "size", "mtime_ns", "crc32c", "token"}) {
    if (!fields.count(name)) return std::nullopt;
  }
  UploadRecord record;
  record.destination = fields["destination"];
  record.source = fields["source"];
  char* end = nullptr;
  record.size = std::strtoull(fields["size"].c_str(), &end, 10);
  record.mtime_ns = std::strtoll(fields["mtime_ns"].c_str(), &end, 10);
  record.crc32c = static_cast<uint32_t>(std::strtoul(fields["crc32c"].c_str(), &end, 16));
  record.token = fields["token"];
  return record;
}

Status UploadStateFile::Save(const UploadRecord& record) {
  if (!locked()) return FailedPreconditionError("upload state " + path_.string() + " is not locked by this process");
  for (const std::string* field : {&record.destination, &record.source, &record.token}) {
    if (HasNewline(*field)) return InvalidArgumentError("upload state fields cannot hold a newline");
  }
  std::ostringstream text;
  char crc[16];
  std::snprintf(crc, sizeof crc, "%08x", record.crc32c);
  text << kMagic << "\ndestination=" << record.destination << "\nsource=" << record.source << "\nsize=" << record.size
       << "\nmtime_ns=" << record.mtime_ns << "\ncrc32c=" << crc << "\ntoken=" << record.token << "\n";
  const std::string body = text.str();
  fs::path temporary = path_;
  temporary += ".tmp";
  const int fd = ::open(temporary.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
  if (fd < 0) return UnavailableError("cannot write " + temporary.string() + ": " + std::strerror(errno));
  const bool written = ::write(fd, body.data(), body.size()) == static_cast<ssize_t>(body.size()) && ::fsync(fd) == 0;
  ::close(fd);
  if (!written || ::rename(temporary.c_str(), path_.c_str()) != 0) {
    const std::string why = std::strerror(errno);
    ::unlink(temporary.c_str());
    return UnavailableError("cannot write " + path_.string() + ": " + why);
  }
  return OkStatus();
}

void UploadStateFile::Remove() {
  if (!locked()) return;
  ::unlink(path_.c_str());
}

}  // namespace spool
