// A fresh, empty folder under the system's temporary folder for one test,
// removed with everything in it when the object is destroyed.
#pragma once

#include <filesystem>
#include <string>
#include <string_view>

namespace spool::test_support {

class TempDir {
 public:
  // Creates "<temp>/<stem>-XXXXXX" (mkdtemp), canonical so that paths the
  // code under test prints compare equal to ours. A failure to create it
  // fails the current test and leaves path() empty.
  explicit TempDir(std::string_view stem = "spool-test");
  // Removes the folder recursively; errors are ignored (a test may have
  // removed or made unwritable part of it).
  ~TempDir();
  TempDir(const TempDir&) = delete;
  TempDir& operator=(const TempDir&) = delete;

  const std::filesystem::path& path() const { return path_; }
  std::filesystem::path operator/(const std::filesystem::path& relative) const { return path_ / relative; }
  // The LocalStore key of `relative` inside this folder: its absolute path
  // without the leading '/'.
  std::string Key(std::string_view relative) const;

 private:
  std::filesystem::path path_;
};

}  // namespace spool::test_support
