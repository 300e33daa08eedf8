// Running the built spool binary from tests: arguments in, exit code and
// both output streams out.
#pragma once

#include <filesystem>
#include <map>
#include <string>
#include <vector>

#include "tests/support/files.h"
#include "tests/support/temp_dir.h"

namespace spool::cli::testing {

struct Outcome {
  int exit_code = -1;
  std::string out;
  std::string err;
};

// Runs spool (SPOOL_BINARY) with `args` and `input` on standard input; its
// output goes through files in `scratch` (a folder the test owns). It runs in
// `working_dir` when one is given (relative paths in `args` then resolve
// there), else in the test's own working directory. Its environment is the
// test's, with `environment`'s variables added or replaced: a test configures
// the command this way rather than by changing its own environment.
Outcome RunSpool(const std::vector<std::string>& args, const std::filesystem::path& scratch,
                 const std::string& input = "", const std::filesystem::path& working_dir = {},
                 const std::map<std::string, std::string>& environment = {});

using test_support::ReadFile;
using test_support::ReadTree;
using test_support::TempDir;
using test_support::WriteFile;

std::vector<std::string> Lines(const std::string& text);

}  // namespace spool::cli::testing
