// Runs the built spool binary against local folders and checks its output,
// exit codes and the files it leaves behind.
#include <gtest/gtest.h>
#include <stdlib.h>
#include <sys/stat.h>

#include <filesystem>
#include <map>
#include <string>
#include <vector>

#include "tests/cli/spool_runner.h"

namespace {

namespace fs = std::filesystem;
using spool::cli::testing::Lines;
using spool::cli::testing::Outcome;
using spool::cli::testing::ReadFile;
using spool::cli::testing::ReadTree;
using spool::cli::testing::WriteFile;

class SpoolCli : public ::testing::Test {
 protected:
  // Runs spool with `args`, feeding `input` on standard input.
  Outcome Spool(const std::vector<std::string>& args, const std::string& input = "") {
    return spool::cli::testing::RunSpool(args, dir_, input);
  }

  // A small tree with nested folders, an empty file, a name with a space
  // and a file larger than one transfer part.
  void MakeTree(const fs::path& root) {
    WriteFile(root / "a.txt", "alpha\n");
    WriteFile(root / "empty", "");
    WriteFile(root / "with space.txt", "spaced");
    WriteFile(root / "sub/b.txt", "beta");
    WriteFile(root / "sub/deeper/c.bin", std::string(20 << 20, 'c') + "end");
  }

  spool::test_support::TempDir temp_{"spool-cli-test"};
  const fs::path dir_ = temp_.path();
};

TEST_F(SpoolCli, PrintsItsVersion) {
  Outcome run = Spool({"--version"});
  EXPECT_EQ(run.exit_code, 0);
  EXPECT_TRUE(run.out.starts_with("spool ")) << run.out;
}

// SPOOL_METRICS_PORT=0 picks a free port; the command says which, once, on
// stderr.
TEST_F(SpoolCli, SaysWhichMetricsPortItPicked) {
  WriteFile(dir_ / "x.txt", "x");
  Outcome picked = spool::cli::testing::RunSpool({"ls", (dir_ / "x.txt").string()}, dir_, "", {},
                                                 {{"SPOOL_METRICS_ADDRESS", "127.0.0.1"}, {"SPOOL_METRICS_PORT", "0"}});
  ASSERT_EQ(picked.exit_code, 0) << picked.err;
  const std::string prefix = "spool: serving metrics on http://127.0.0.1:";
  ASSERT_TRUE(picked.err.starts_with(prefix)) << picked.err;
  std::vector<std::string> lines = Lines(picked.err);
  ASSERT_EQ(lines.size(), 1u) << picked.err;
  const std::string port = lines[0].substr(prefix.size(), lines[0].size() - prefix.size() - std::string("/metrics").size());
  EXPECT_TRUE(lines[0].ends_with("/metrics")) << lines[0];
  ASSERT_FALSE(port.empty()) << lines[0];
  EXPECT_EQ(port.find_first_not_of("0123456789"), std::string::npos) << lines[0];
  EXPECT_GT(std::stoi(port), 0) << lines[0];
  EXPECT_NE(picked.out.find("x.txt"), std::string::npos) << picked.out;
}

TEST_F(SpoolCli, CopiesATreeBothWaysByteForByte) {
  MakeTree(dir_ / "src");
  Outcome out = Spool({"cp", "-r", (dir_ / "src").string(), (dir_ / "copy").string()});
  ASSERT_EQ(out.exit_code, 0) << out.err;
  EXPECT_EQ(Lines(out.out).size(), 5u) << out.out;
  EXPECT_EQ(ReadTree(dir_ / "copy"), ReadTree(dir_ / "src"));

  // Back again through file:// URLs, into a folder that does not exist yet.
  Outcome back = Spool({"--quiet", "cp", "-r", "file://" + (dir_ / "copy").string() + "/",
                    "file://" + (dir_ / "back/nested").string()});
  ASSERT_EQ(back.exit_code, 0) << back.err;
  EXPECT_EQ(back.out, "");
  EXPECT_EQ(ReadTree(dir_ / "back/nested"), ReadTree(dir_ / "src"));
  for (const auto& entry : fs::recursive_directory_iterator(dir_ / "back")) {
    EXPECT_EQ(entry.path().filename().string().find(".spool-tmp-"), std::string::npos) << entry.path();
  }
}

TEST_F(SpoolCli, CopiesSingleFilesIntoFoldersAndThroughStdio) {
  WriteFile(dir_ / "one.txt", "one");
  WriteFile(dir_ / "two.txt", "two");
  fs::create_directories(dir_ / "into");
  Outcome into = Spool({"cp", (dir_ / "one.txt").string(), (dir_ / "two.txt").string(), (dir_ / "into").string()});
  ASSERT_EQ(into.exit_code, 0) << into.err;
  EXPECT_EQ(ReadFile(dir_ / "into/one.txt"), "one");
  EXPECT_EQ(ReadFile(dir_ / "into/two.txt"), "two");

  Outcome renamed = Spool({"cp", (dir_ / "one.txt").string(), (dir_ / "renamed.txt").string()});
  ASSERT_EQ(renamed.exit_code, 0) << renamed.err;
  EXPECT_EQ(ReadFile(dir_ / "renamed.txt"), "one");

  Outcome from_stdin = Spool({"cp", "-", (dir_ / "stdin.txt").string()}, "from standard input");
  ASSERT_EQ(from_stdin.exit_code, 0) << from_stdin.err;
  EXPECT_EQ(ReadFile(dir_ / "stdin.txt"), "from standard input");

  Outcome to_stdout = Spool({"cp", (dir_ / "stdin.txt").string(), "-"});
  ASSERT_EQ(to_stdout.exit_code, 0) << to_stdout.err;
  EXPECT_EQ(to_stdout.out, "from standard input");
}

TEST_F(SpoolCli, CopyOfAFolderNeedsRecursive) {
  MakeTree(dir_ / "src");
  Outcome run = Spool({"cp", (dir_ / "src").string(), (dir_ / "dst").string()});
  EXPECT_EQ(run.exit_code, 1);
  EXPECT_EQ(run.err, "spool: " + (dir_ / "src").string() + " is a folder; copy it with spool cp -r\n");
  EXPECT_FALSE(fs::exists(dir_ / "dst"));
}

TEST_F(SpoolCli, RefusesToCopyAFolderIntoItself) {
  MakeTree(dir_ / "src");
  Outcome run = Spool({"cp", "-r", (dir_ / "src").string(), (dir_ / "src/backup").string()});
  EXPECT_EQ(run.exit_code, 1);
  EXPECT_NE(run.err.find("into itself"), std::string::npos) << run.err;
  EXPECT_FALSE(fs::exists(dir_ / "src/backup"));
}

// A destination folder that holds a symbolic link to elsewhere: neither cp -r
// nor sync may write through it.
TEST_F(SpoolCli, NeverWritesThroughASymlinkInTheDestination) {
  WriteFile(dir_ / "src/model/weights.bin", "weights");
  for (const std::vector<std::string>& command : {std::vector<std::string>{"cp", "-r"}, {"sync"}}) {
    const fs::path outside = dir_ / ("outside-" + command[0]);
    const fs::path destination = dir_ / ("dst-" + command[0]);
    fs::create_directories(outside);
    fs::create_directories(destination);
    fs::create_directory_symlink(outside, destination / "model");
    std::vector<std::string> args = command;
    args.push_back((dir_ / "src").string() + "/");
    args.push_back(destination.string() + "/");
    Outcome run = Spool(args);
    EXPECT_NE(run.exit_code, 0) << command[0];
    EXPECT_NE(run.err.find("symbolic link"), std::string::npos) << command[0] << ": " << run.err;
    EXPECT_TRUE(fs::is_empty(outside)) << "spool " << command[0] << " wrote through a symlink";
  }
}

// A FIFO or a link to nothing in a folder that cp -r or sync copies is not a
// file: each is named in a warning (none with --quiet), and the rest is
// copied, with exit 0.
TEST_F(SpoolCli, WarnsOfWhatIsNotAFileAndCopiesTheRest) {
  WriteFile(dir_ / "src/a.txt", "alpha");
  ASSERT_EQ(::mkfifo((dir_ / "src/pipe").c_str(), 0600), 0);
  fs::create_symlink(dir_ / "nowhere", dir_ / "src/dangling");
  const std::map<std::string, std::string> files = {{"a.txt", "alpha"}};
  for (const std::vector<std::string>& command : {std::vector<std::string>{"cp", "-r"}, {"sync"}}) {
    const fs::path destination = dir_ / ("dst-" + command[0]);
    std::vector<std::string> args = command;
    args.push_back((dir_ / "src").string());
    args.push_back(destination.string());
    Outcome run = Spool(args);
    EXPECT_EQ(run.exit_code, 0) << command[0] << ": " << run.err;
    EXPECT_NE(run.err.find("spool: warning: skipping " + (dir_ / "src/pipe").string() +
                           ": it is a FIFO (named pipe), not a regular file\n"),
              std::string::npos)
        << command[0] << ": " << run.err;
    EXPECT_NE(run.err.find("spool: warning: skipping " + (dir_ / "src/dangling").string() +
                           ": it is a symbolic link to nothing, not a regular file\n"),
              std::string::npos)
        << command[0] << ": " << run.err;
    EXPECT_EQ(ReadTree(destination), files) << command[0];

    std::vector<std::string> quiet = {"--quiet"};
    quiet.insert(quiet.end(), args.begin(), args.end());
    Outcome silent = Spool(quiet);
    EXPECT_EQ(silent.exit_code, 0) << command[0] << ": " << silent.err;
    EXPECT_EQ(silent.err, "") << command[0];
  }
}

// ckpt save takes a link to a file inside the folder as that file; a link
// that leads out of the folder (to a file elsewhere, to a folder) is an
// error naming it, unless --follow-symlinks says to follow every link.
TEST_F(SpoolCli, CkptSaveNeverLeavesItsFolderUnasked) {
  const fs::path ckpt = dir_ / "ckpt";
  const std::string root = (dir_ / "root").string();
  WriteFile(ckpt / "model.pt", "weights");
  WriteFile(dir_ / "secret", "not for the bucket");
  WriteFile(dir_ / "shared/vocab.txt", "words");
  fs::create_symlink(ckpt / "model.pt", ckpt / "latest.pt");
  fs::create_symlink(dir_ / "secret", ckpt / "outside.pt");

  Outcome outside = Spool({"ckpt", "save", root, "--step", "1", ckpt.string()});
  EXPECT_EQ(outside.exit_code, 1);
  EXPECT_EQ(outside.err, "spool: checkpoint source " + ckpt.string() + ": outside.pt is a symbolic link to " +
                             fs::canonical(dir_ / "secret").string() +
                             ", outside the folder; copy that file into the folder, or let the save follow links "
                             "(spool ckpt save --follow-symlinks; follow_symlinks=True in Python)\n");
  fs::remove(ckpt / "outside.pt");
  fs::create_directory_symlink(dir_ / "shared", ckpt / "shared");
  Outcome folder_link = Spool({"ckpt", "save", root, "--step", "1", ckpt.string()});
  EXPECT_EQ(folder_link.exit_code, 1);
  EXPECT_NE(folder_link.err.find("shared is a symbolic link to the folder " + fs::canonical(dir_ / "shared").string()),
            std::string::npos)
      << folder_link.err;
  EXPECT_NE(Spool({"ckpt", "list", root}).out.find("no committed checkpoint"), std::string::npos);

  Outcome followed = Spool({"ckpt", "save", root, "--step", "1", "--follow-symlinks", ckpt.string()});
  ASSERT_EQ(followed.exit_code, 0) << followed.err;
  ASSERT_EQ(Spool({"ckpt", "restore", root, (dir_ / "one").string()}).exit_code, 0);
  EXPECT_EQ(ReadTree(dir_ / "one"), (std::map<std::string, std::string>{
                                        {"latest.pt", "weights"}, {"model.pt", "weights"}, {"shared/vocab.txt", "words"}}));

  fs::remove(ckpt / "shared");
  Outcome inside = Spool({"ckpt", "save", root, "--step", "2", ckpt.string()});
  ASSERT_EQ(inside.exit_code, 0) << inside.err;
  ASSERT_EQ(Spool({"ckpt", "restore", root, (dir_ / "two").string()}).exit_code, 0);
  EXPECT_EQ(ReadTree(dir_ / "two"),
            (std::map<std::string, std::string>{{"latest.pt", "weights"}, {"model.pt", "weights"}}));

  ASSERT_EQ(::mkfifo((ckpt / "pipe").c_str(), 0600), 0);
  Outcome fifo = Spool({"ckpt", "save", root, "--step", "3", ckpt.string()});
  EXPECT_EQ(fifo.exit_code, 1);
  EXPECT_NE(fifo.err.find(": pipe is a FIFO (named pipe), not a file that can be saved; move it out of the folder"),
            std::string::npos)
      << fifo.err;
}

TEST_F(SpoolCli, CkptSaveSaysWhenItsFolderDoesNotExist) {
  const std::string root = (dir_ / "root").string();
  Outcome missing = Spool({"ckpt", "save", root, "--step", "1", (dir_ / "nope").string()});
  EXPECT_EQ(missing.exit_code, 1);
  EXPECT_EQ(missing.err, "spool: checkpoint source " + (dir_ / "nope").string() +
                             " does not exist; give the folder that holds the files to save\n");
  WriteFile(dir_ / "a-file", "x");
  Outcome file = Spool({"ckpt", "save", root, "--step", "1", (dir_ / "a-file").string()});
  EXPECT_EQ(file.exit_code, 1);
  EXPECT_NE(file.err.find("is not a folder"), std::string::npos) << file.err;
}

TEST_F(SpoolCli, ListsOneLevelOrRecursively) {
  MakeTree(dir_ / "src");
  const std::string src = (dir_ / "src").string();
  Outcome level = Spool({"ls", src});
  ASSERT_EQ(level.exit_code, 0) << level.err;
  EXPECT_EQ(Lines(level.out), (std::vector<std::string>{src + "/a.txt", src + "/empty", src + "/sub/",
                                                         src + "/with space.txt"}));

  Outcome recursive = Spool({"ls", "-r", src + "/"});
  ASSERT_EQ(recursive.exit_code, 0) << recursive.err;
  EXPECT_EQ(Lines(recursive.out),
            (std::vector<std::string>{src + "/a.txt", src + "/empty", src + "/sub/b.txt", src + "/sub/deeper/c.bin",
                                      src + "/with space.txt"}));

  Outcome long_human = Spool({"ls", "-r", "-l", "-h", src});
  ASSERT_EQ(long_human.exit_code, 0) << long_human.err;
  std::vector<std::string> lines = Lines(long_human.out);
  ASSERT_EQ(lines.size(), 5u);
  EXPECT_NE(lines[3].find("20.0 MiB"), std::string::npos) << lines[3];
  EXPECT_TRUE(lines[3].ends_with(src + "/sub/deeper/c.bin")) << lines[3];

  Outcome json = Spool({"ls", "--json", src});
  ASSERT_EQ(json.exit_code, 0) << json.err;
  lines = Lines(json.out);
  ASSERT_EQ(lines.size(), 4u);
  EXPECT_TRUE(lines[0].starts_with("{\"url\":\"" + src + "/a.txt\"")) << lines[0];
  EXPECT_NE(lines[0].find("\"size\":6"), std::string::npos) << lines[0];
  EXPECT_NE(lines[2].find("\"folder\":true"), std::string::npos) << lines[2];

  Outcome one = Spool({"ls", src + "/a.txt"});
  EXPECT_EQ(Lines(one.out), std::vector<std::string>{src + "/a.txt"});
}

TEST_F(SpoolCli, StatDescribesOneObject) {
  WriteFile(dir_ / "f.txt", "123456");
  Outcome run = Spool({"stat", (dir_ / "f.txt").string()});
  ASSERT_EQ(run.exit_code, 0) << run.err;
  std::vector<std::string> lines = Lines(run.out);
  ASSERT_GE(lines.size(), 4u);
  EXPECT_EQ(lines[0], "url:      " + (dir_ / "f.txt").string());
  EXPECT_EQ(lines[1], "size:     6 (6 B)");
  EXPECT_TRUE(lines[2].starts_with("updated:  20")) << lines[2];
  // A local file keeps no checksum: stat says that reads of it are not verified.
  EXPECT_TRUE(lines.back().starts_with("verified by: nothing")) << lines.back();

  Outcome json = Spool({"stat", "--json", (dir_ / "f.txt").string()});
  ASSERT_EQ(json.exit_code, 0);
  EXPECT_NE(json.out.find("\"size\":6"), std::string::npos) << json.out;
  EXPECT_NE(json.out.find("\"verified_by\":null"), std::string::npos) << json.out;

  Outcome folder = Spool({"stat", dir_.string()});
  EXPECT_EQ(folder.exit_code, 1);
  EXPECT_NE(folder.err.find("is a folder"), std::string::npos) << folder.err;
}

TEST_F(SpoolCli, CatPrintsRanges) {
  const std::string path = (dir_ / "digits").string();
  WriteFile(path, "0123456789");
  EXPECT_EQ(Spool({"cat", path}).out, "0123456789");
  EXPECT_EQ(Spool({"cat", path, "--range", "2-4"}).out, "234");
  EXPECT_EQ(Spool({"cat", "--range", "7-", path}).out, "789");
  EXPECT_EQ(Spool({"cat", "--range", "-3", path}).out, "789");
  EXPECT_EQ(Spool({"cat", "--range", "5-100", path}).out, "56789");
  EXPECT_EQ(Spool({"cat", "--range", "10-", path}).out, "");

  Outcome past = Spool({"cat", "--range", "11-", path});
  EXPECT_EQ(past.exit_code, 1);
  EXPECT_EQ(past.err, "spool: --range 11-: " + path + " has only 10 bytes\n");

  Outcome malformed = Spool({"cat", "--range", "x-y", path});
  EXPECT_EQ(malformed.exit_code, 1);
  EXPECT_TRUE(malformed.err.starts_with("spool: --range \"x-y\"")) << malformed.err;
}

TEST_F(SpoolCli, RemovesObjectsAndFolders) {
  MakeTree(dir_ / "src");
  Outcome one = Spool({"rm", (dir_ / "src/a.txt").string()});
  ASSERT_EQ(one.exit_code, 0) << one.err;
  EXPECT_EQ(one.out, "deleted " + (dir_ / "src/a.txt").string() + "\n");
  EXPECT_FALSE(fs::exists(dir_ / "src/a.txt"));

  Outcome folder_without_r = Spool({"rm", (dir_ / "src/sub").string()});
  EXPECT_EQ(folder_without_r.exit_code, 1);
  EXPECT_NE(folder_without_r.err.find("spool rm -r"), std::string::npos) << folder_without_r.err;
  EXPECT_TRUE(fs::exists(dir_ / "src/sub/b.txt"));

  Outcome all = Spool({"rm", "-r", (dir_ / "src").string()});
  ASSERT_EQ(all.exit_code, 0) << all.err;
  EXPECT_EQ(Lines(all.out).size(), 4u);
  EXPECT_FALSE(fs::exists(dir_ / "src")) << "emptied folders go too";

  Outcome root = Spool({"rm", "-r", "/"});
  EXPECT_EQ(root.exit_code, 1);
  EXPECT_NE(root.err.find("refusing"), std::string::npos) << root.err;
}

TEST_F(SpoolCli, MissingFilesAreNamedWithExitCodeOne) {
  const std::string missing = (dir_ / "no-such-file").string();
  for (const std::vector<std::string>& args :
       {std::vector<std::string>{"cat", missing}, {"stat", missing}, {"rm", missing},
        {"cp", missing, (dir_ / "x").string()}, {"ls", missing}}) {
    Outcome run = Spool(args);
    EXPECT_EQ(run.exit_code, 1) << args[0];
    EXPECT_TRUE(run.err.starts_with("spool: ")) << args[0] << ": " << run.err;
    EXPECT_NE(run.err.find(missing), std::string::npos) << args[0] << ": " << run.err;
    EXPECT_EQ(std::count(run.err.begin(), run.err.end(), '\n'), 1) << "one line: " << run.err;
  }
}

TEST_F(SpoolCli, BadUrlsAndUsageErrors) {
  Outcome empty_bucket = Spool({"ls", "s3://"});
  EXPECT_EQ(empty_bucket.exit_code, 1);
  EXPECT_TRUE(empty_bucket.err.starts_with("spool: invalid URL \"s3://\"")) << empty_bucket.err;

  Outcome unknown_scheme = Spool({"stat", "ftp://host/file"});
  EXPECT_EQ(unknown_scheme.exit_code, 1);
  EXPECT_NE(unknown_scheme.err.find("unknown scheme"), std::string::npos) << unknown_scheme.err;

  EXPECT_EQ(Spool({}).exit_code, 2);
  EXPECT_EQ(Spool({"ls", "--no-such-flag", dir_.string()}).exit_code, 2);
  EXPECT_EQ(Spool({"cp", dir_.string()}).exit_code, 2);
  EXPECT_EQ(Spool({"frobnicate"}).exit_code, 2);
}

}  // namespace
