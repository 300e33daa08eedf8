// The progress display: shown when standard output is a terminal (here a
// pseudo-terminal made by script(1)), absent when it is a file or --quiet.
#include <gtest/gtest.h>

#include <cstdlib>

#include "tests/cli/spool_runner.h"

namespace spool::cli::testing {
namespace {

namespace fs = std::filesystem;

// Runs `command` under `script`, which gives it a pseudo-terminal, and
// returns everything it wrote there.
std::string UnderTerminal(const std::string& command, const fs::path& scratch) {
  const fs::path log = scratch / "terminal.log";
  const std::string line = "script -qfec '" + command + "' " + log.string() + " > /dev/null 2>&1 < /dev/null";
  int status = std::system(line.c_str());
  EXPECT_EQ(status, 0) << line;
  return ReadFile(log);
}

class Terminal : public ::testing::Test {
 protected:
  void SetUp() override {
    WriteFile(dir_.path() / "src/big.bin", std::string(48 << 20, 'b'));
    WriteFile(dir_.path() / "src/small.txt", "small");
  }
  TempDir dir_;
};

TEST_F(Terminal, SyncShowsBytesRateAndEtaOnATerminal) {
  std::string out = UnderTerminal(std::string(SPOOL_BINARY) + " sync " + (dir_.path() / "src").string() + " " +
                                      (dir_.path() / "dst").string(),
                                  dir_.path());
  EXPECT_NE(out.find("\r\033[K"), std::string::npos) << out;            // redrawn in place
  EXPECT_NE(out.find("48.0 MiB / 48.0 MiB"), std::string::npos) << out;  // the final state
  EXPECT_NE(out.find("B/s"), std::string::npos) << out;                  // a rate
  EXPECT_NE(out.find("2 copied"), std::string::npos) << out;
}

TEST_F(Terminal, CpShowsBytesRateAndEtaOnATerminal) {
  std::string out = UnderTerminal(std::string(SPOOL_BINARY) + " cp -r " + (dir_.path() / "src").string() + " " +
                                      (dir_.path() / "copy").string(),
                                  dir_.path());
  EXPECT_NE(out.find("\r\033[K"), std::string::npos) << out;
  EXPECT_NE(out.find("48.0 MiB / 48.0 MiB"), std::string::npos) << out;
  EXPECT_NE(out.find("B/s"), std::string::npos) << out;
  EXPECT_EQ(ReadFile(dir_.path() / "copy/big.bin").size(), size_t{48} << 20);
}

TEST_F(Terminal, ConvertCountsRecordsOnATerminal) {
  WriteFile(dir_.path() / "t.csv", "a\n1\n2\n3\n");
  std::string out = UnderTerminal(std::string(SPOOL_BINARY) + " convert " + (dir_.path() / "t.csv").string() + " " +
                                      (dir_.path() / "ds/t").string(),
                                  dir_.path());
  EXPECT_NE(out.find("3 records"), std::string::npos) << out;
  EXPECT_NE(out.find("records/s"), std::string::npos) << out;
}

TEST_F(Terminal, NothingButResultsWhenNotATerminalOrQuiet) {
  Outcome piped = RunSpool({"sync", (dir_.path() / "src").string(), (dir_.path() / "dst").string()}, dir_.path());
  ASSERT_EQ(piped.exit_code, 0) << piped.err;
  EXPECT_EQ(piped.out.find('\r'), std::string::npos) << piped.out;
  EXPECT_EQ(piped.out.find("MiB/s"), std::string::npos) << piped.out;
  std::string quiet = UnderTerminal(std::string(SPOOL_BINARY) + " --quiet sync " + (dir_.path() / "src").string() +
                                        " " + (dir_.path() / "again").string(),
                                    dir_.path());
  EXPECT_EQ(quiet.find("MiB/s"), std::string::npos) << quiet;
}

}  // namespace
}  // namespace spool::cli::testing
