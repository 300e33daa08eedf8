// Running the built spool binary from tests: arguments in, exit code and
// both output streams out.
#pragma once

#include <filesystem>
#include <map>
#include <string>
#include <vector>

namespace spool::cli::testing {

struct Outcome {
  int exit_code = -1;
  std::string out;
  std::string err;
};

// Runs spool (SPOOL_BINARY) with `args` and `input` on standard input; its
// output goes through files in `scratch` (a folder the test owns).
Outcome RunSpool(const std::vector<std::string>& args, const std::filesystem::path& scratch,
                 const std::string& input = "");

// A fresh folder under the temporary directory, removed by the destructor.
class TempDir {
 public:
  TempDir();
  ~TempDir();
  const std::filesystem::path& path() const { return path_; }

 private:
  std::filesystem::path path_;
};

std::string ReadFile(const std::filesystem::path& path);
void WriteFile(const std::filesystem::path& path, const std::string& content);
std::vector<std::string> Lines(const std::string& text);
// Every regular file below `root`, by relative path, with its content.
std::map<std::string, std::string> Tree(const std::filesystem::path& root);

}  // namespace spool::cli::testing
