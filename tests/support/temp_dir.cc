#include "tests/support/temp_dir.h"

#include <gtest/gtest.h>
#include <stdlib.h>

#include <cerrno>
#include <cstring>
#include <string>
#include <system_error>

namespace spool::test_support {

namespace fs = std::filesystem;

TempDir::TempDir(std::string_view stem) {
  std::string pattern = (fs::temp_directory_path() / (std::string(stem) + "-XXXXXX")).string();
  if (::mkdtemp(pattern.data()) == nullptr) {
    ADD_FAILURE() << "cannot create a temporary folder " << pattern << ": " << std::strerror(errno);
    return;
  }
  path_ = fs::canonical(pattern);
}

std::string TempDir::Key(std::string_view relative) const { return (path_ / relative).string().substr(1); }

TempDir::~TempDir() {
  if (path_.empty()) return;
  std::error_code ignored;
  fs::remove_all(path_, ignored);
}

}  // namespace spool::test_support
