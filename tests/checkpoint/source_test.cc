// CheckpointSource::FromFolder: what a folder's symbolic links and special
// files become, the rule `spool ckpt save` and Python's save share; and
// borrowed buffers, which OwnBuffers() copies.
#include "spool/checkpoint/source.h"

#include <gtest/gtest.h>
#include <sys/stat.h>

#include <filesystem>
#include <string>
#include <vector>

#include "tests/support/files.h"
#include "tests/support/temp_dir.h"

namespace spool::checkpoint {
namespace {

namespace fs = std::filesystem;
using Symlinks = CheckpointSource::Symlinks;
using test_support::TempDir;
using test_support::WriteFile;

class SourceTest : public ::testing::Test {
 protected:
  void SetUp() override {
    WriteFile(folder_ / "model.pt", "weights");
    WriteFile(dir_ / "secret", "not for the bucket");
    WriteFile(dir_ / "shared/vocab.txt", "words");
  }

  // Each entry's path, and the file it is read from relative to dir_.
  std::vector<std::string> Entries(const CheckpointSource& source) const {
    std::vector<std::string> entries;
    for (const CheckpointSource::Entry& entry : source.entries()) {
      fs::path file = std::get<fs::path>(entry.content);
      entries.push_back(entry.path + " <- " + fs::canonical(file).lexically_relative(fs::canonical(dir_)).string());
    }
    return entries;
  }

  // The message of the InvalidArgument FromFolder returns.
  std::string Refusal(Symlinks symlinks = Symlinks::kInsideFolder) const {
    Result<CheckpointSource> source = CheckpointSource::FromFolder(folder_, symlinks);
    EXPECT_EQ(source.status().code(), StatusCode::kInvalidArgument) << source.status().ToString();
    return source.status().message();
  }

  TempDir temp_{"spool-ckpt-source"};
  const fs::path dir_ = temp_.path();
  const fs::path folder_ = dir_ / "ckpt";
};

TEST_F(SourceTest, ALinkToAFileInsideIsSavedAsThatFile) {
  fs::create_symlink(folder_ / "model.pt", folder_ / "latest.pt");
  fs::create_directories(folder_ / "sub");
  fs::create_symlink("../model.pt", folder_ / "sub/relative.pt");
  Result<CheckpointSource> source = CheckpointSource::FromFolder(folder_);
  ASSERT_TRUE(source.ok()) << source.status().ToString();
  EXPECT_EQ(Entries(*source), (std::vector<std::string>{"latest.pt <- ckpt/model.pt", "model.pt <- ckpt/model.pt",
                                                         "sub/relative.pt <- ckpt/model.pt"}));
}

TEST_F(SourceTest, LinksThatLeaveTheFolderAreRefusedUnlessFollowed) {
  fs::create_symlink(dir_ / "secret", folder_ / "outside.pt");
  std::string message = Refusal();
  EXPECT_NE(message.find("outside.pt is a symbolic link to " + fs::canonical(dir_ / "secret").string() +
                         ", outside the folder"),
            std::string::npos)
      << message;
  EXPECT_NE(message.find("--follow-symlinks"), std::string::npos) << message;
  fs::remove(folder_ / "outside.pt");

  fs::create_directory_symlink(dir_ / "shared", folder_ / "shared");
  message = Refusal();
  EXPECT_NE(message.find("shared is a symbolic link to the folder"), std::string::npos) << message;
  fs::create_symlink(dir_ / "secret", folder_ / "outside.pt");

  Result<CheckpointSource> followed = CheckpointSource::FromFolder(folder_, Symlinks::kFollow);
  ASSERT_TRUE(followed.ok()) << followed.status().ToString();
  EXPECT_EQ(Entries(*followed), (std::vector<std::string>{"model.pt <- ckpt/model.pt", "outside.pt <- secret",
                                                           "shared/vocab.txt <- shared/vocab.txt"}));
}

TEST_F(SourceTest, WhatCannotBeSavedIsAnErrorEitherWay) {
  for (Symlinks symlinks : {Symlinks::kInsideFolder, Symlinks::kFollow}) {
    fs::create_symlink(dir_ / "nowhere", folder_ / "dangling");
    EXPECT_NE(Refusal(symlinks).find("dangling is a symbolic link to " + (dir_ / "nowhere").string() +
                                     ", which cannot be reached"),
              std::string::npos);
    fs::remove(folder_ / "dangling");
    ASSERT_EQ(::mkfifo((folder_ / "pipe").c_str(), 0600), 0);
    EXPECT_NE(Refusal(symlinks).find("pipe is a FIFO (named pipe), not a file that can be saved"), std::string::npos);
    fs::remove(folder_ / "pipe");
  }
  fs::create_directory_symlink(dir_, folder_ / "loop");  // followed, it would hold itself without end
  EXPECT_NE(Refusal(Symlinks::kFollow).find("a folder that holds it (a loop)"), std::string::npos);
}

TEST_F(SourceTest, AMissingFolderIsNotFoundAndAFileIsNotAFolder) {
  Result<CheckpointSource> missing = CheckpointSource::FromFolder(dir_ / "nope");
  EXPECT_EQ(missing.status().code(), StatusCode::kNotFound) << missing.status().ToString();
  EXPECT_EQ(missing.status().message(), "checkpoint source " + (dir_ / "nope").string() +
                                            " does not exist; give the folder that holds the files to save");
  Result<CheckpointSource> file = CheckpointSource::FromFolder(dir_ / "secret");
  EXPECT_EQ(file.status().code(), StatusCode::kInvalidArgument) << file.status().ToString();
}

TEST(SourceBuffersTest, ABorrowedBufferIsReadInPlaceUntilOwned) {
  std::string bytes = "weights";
  CheckpointSource source;
  source.AddBufferView("model.pt", bytes).AddBuffer("vocab.txt", "words");
  ASSERT_EQ(source.entries().size(), 2u);
  EXPECT_EQ(source.entries()[0].bytes()->data(), bytes.data());  // not copied
  EXPECT_EQ(*source.entries()[1].bytes(), "words");

  source.OwnBuffers();
  bytes = "changed";  // the caller's bytes no longer matter
  EXPECT_EQ(*source.entries()[0].bytes(), "weights");
  EXPECT_EQ(*source.entries()[1].bytes(), "words");
  EXPECT_FALSE(CheckpointSource().AddFile("a", "/tmp/a").entries()[0].bytes().has_value());
}

}  // namespace
}  // namespace spool::checkpoint
