// Whole files in and out, byte for byte, for tests that set up or check
// local folders.
#pragma once

#include <filesystem>
#include <map>
#include <string>
#include <string_view>

namespace spool::test_support {

// The bytes of `path`; empty when it cannot be read (a test asserting on
// the content then fails on it).
std::string ReadFile(const std::filesystem::path& path);

// Writes `content` to `path`, replacing it, after creating its parent
// folders. A failure fails the current test.
void WriteFile(const std::filesystem::path& path, std::string_view content);

// Every regular file below `root`: path relative to it ('/'-separated) ->
// bytes. Empty when `root` does not exist. The marker a checkpoint restore
// leaves at the top (".spool-restore") is not listed, so a restored folder
// compares equal to the files saved; the checkpoint tests check the marker
// itself.
std::map<std::string, std::string> ReadTree(const std::filesystem::path& root);

}  // namespace spool::test_support
