// End-to-end tests of convert, records, ckpt, sync, mb, whoami and doctor:
// the built spool binary against one store, chosen by SPOOL_CLI_TEST_BACKEND:
//   local  a temporary folder (default)
//   s3     the Ceph RGW of the ceph_rgw fixture (bucket SPOOL_S3_TEST_BUCKET)
//   gs     the local GCS server of the gcs_server fixture (SPOOL_GCS_SERVER_DIR)
// Every test works under a prefix of its own and removes it afterwards.
#include <gtest/gtest.h>
#include <stdlib.h>
#include <unistd.h>

#include <algorithm>
#include <map>
#include <memory>
#include <random>

#include "spool/core/env.h"
#include "spool/core/storage/registry.h"
#include "spool/register_backends.h"
#include "tests/cli/spool_runner.h"
#include "tests/support/env.h"
#include "tests/support/servers.h"

namespace spool::cli::testing {
namespace {

namespace fs = std::filesystem;

using test_support::GetEnv;

std::string Backend() { return GetEnv("SPOOL_CLI_TEST_BACKEND", "local"); }

constexpr const char* kGcsBucket = "spool-cli-test";

class StoreCommands : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    RegisterAllBackends();
    if (Backend() != "gs") return;
    // The emulator convention: no credentials, this endpoint; for the
    // commands the tests run and for the stores they open themselves.
    Environment() = {{"STORAGE_EMULATOR_HOST", test_support::GcsServerEndpoint()}};
    Override() = std::make_unique<ScopedEnvOverride>(Env::Fixed(Environment()));
  }

  static void TearDownTestSuite() { Override().reset(); }

  // Variables the commands run with, beyond the test's own environment.
  static std::map<std::string, std::string>& Environment() {
    static std::map<std::string, std::string> environment;
    return environment;
  }
  static std::unique_ptr<ScopedEnvOverride>& Override() {
    static std::unique_ptr<ScopedEnvOverride> current;
    return current;
  }

  void SetUp() override {
    std::random_device random;
    const std::string unique = "cli-" + std::to_string(::getpid()) + "-" + std::to_string(random() % 1000000) + "-" +
                               ::testing::UnitTest::GetInstance()->current_test_info()->name();
    if (Backend() == "s3") {
      root_ = "s3://" + test_support::S3TestBucket("spool-test") + "/" + unique;
    } else if (Backend() == "gs") {
      Outcome made = Spool({"mb", std::string("gs://") + kGcsBucket});
      ASSERT_TRUE(made.exit_code == 0 || made.err.find("exists already") != std::string::npos) << made.err;
      root_ = std::string("gs://") + kGcsBucket + "/" + unique;
    } else {
      root_ = (local_.path() / "store").string();
      fs::create_directories(root_);
    }
  }

  void TearDown() override {
    if (Backend() != "local") Spool({"--quiet", "rm", "-r", root_ + "/"});
  }

  Outcome Spool(const std::vector<std::string>& args, const std::string& input = "") {
    return RunSpool(args, local_.path(), input, {}, Environment());
  }
  fs::path Local(const std::string& name) const { return local_.path() / name; }
  std::string Url(const std::string& name) const { return root_ + "/" + name; }

  // Writes the object `name` through the library: the CLI takes no key
  // ending in '/' to write to.
  void Put(const std::string& name, const std::string& bytes) {
    Result<StoreLocation> location = OpenLocation(Url(name));
    ASSERT_TRUE(location.ok()) << location.status().ToString();
    Result<ObjectInfo> written = WriteAll(*location->store, location->key, bytes);
    ASSERT_TRUE(written.ok()) << written.status().ToString();
  }

  // `command` with more arguments after it.
  static std::vector<std::string> With(std::vector<std::string> command, const std::vector<std::string>& more) {
    command.insert(command.end(), more.begin(), more.end());
    return command;
  }

  // The JSON line of `records cat` output that contains `marker`.
  static std::string LineWith(const std::string& output, const std::string& marker) {
    for (const std::string& line : Lines(output)) {
      if (line.find(marker) != std::string::npos) return line;
    }
    return "";
  }

  TempDir local_;
  std::string root_;
};

// "id" values a, b, c as base64, as protobuf's JSON mapping prints bytes.
constexpr const char* kA = "\"YQ==\"";
constexpr const char* kB = "\"Yg==\"";
constexpr const char* kC = "\"Yw==\"";

TEST_F(StoreCommands, ConvertsACsvTableAndReadsTheValuesBack) {
  WriteFile(Local("table.csv"),
            "id,count,score,note\n"
            "a,7,0.5,plain\n"
            "b,-3,2,\"with, comma\"\n"
            "c,12,1e3,\n");
  Outcome convert = Spool({"convert", Local("table.csv").string(), Url("csv/train"), "--shards", "2", "--index"});
  ASSERT_EQ(convert.exit_code, 0) << convert.err;
  EXPECT_NE(convert.out.find("converted 3 records"), std::string::npos) << convert.out;

  Outcome count = Spool({"--json", "records", "count", Url("csv/train.manifest.json")});
  ASSERT_EQ(count.exit_code, 0) << count.err;
  EXPECT_NE(count.out.find("\"records\":3,\"shards\":2,\"from\":\"manifest\""), std::string::npos) << count.out;
  Outcome by_index = Spool({"--json", "records", "count", Url("csv/train-*")});
  ASSERT_EQ(by_index.exit_code, 0) << by_index.err;
  EXPECT_NE(by_index.out.find("\"records\":3,\"shards\":2,\"from\":\"index\""), std::string::npos) << by_index.out;

  Outcome cat = Spool({"records", "cat", Url("csv/train")});
  ASSERT_EQ(cat.exit_code, 0) << cat.err;
  ASSERT_EQ(Lines(cat.out).size(), 3u) << cat.out;
  std::string a = LineWith(cat.out, kA), b = LineWith(cat.out, kB), c = LineWith(cat.out, kC);
  // count is int64 (strings in JSON), score float, note bytes.
  EXPECT_NE(a.find("\"count\":{\"int64_list\":{\"value\":[\"7\"]}}"), std::string::npos) << a;
  EXPECT_NE(a.find("\"score\":{\"float_list\":{\"value\":[0.5]}}"), std::string::npos) << a;
  EXPECT_NE(a.find("\"note\":{\"bytes_list\":{\"value\":[\"cGxhaW4=\"]}}"), std::string::npos) << a;
  EXPECT_NE(b.find("\"count\":{\"int64_list\":{\"value\":[\"-3\"]}}"), std::string::npos) << b;
  EXPECT_NE(b.find("\"note\":{\"bytes_list\":{\"value\":[\"d2l0aCwgY29tbWE=\"]}}"), std::string::npos) << b;
  EXPECT_NE(c.find("\"score\":{\"float_list\":{\"value\":[1000]}}"), std::string::npos) << c;
  EXPECT_NE(c.find("\"note\":{\"bytes_list\":{}}"), std::string::npos) << c;

  Outcome head = Spool({"records", "head", "-n", "1", Url("csv/train.manifest.json")});
  ASSERT_EQ(head.exit_code, 0) << head.err;
  EXPECT_EQ(Lines(head.out).size(), 1u);
  Outcome verify = Spool({"records", "verify", Url("csv/train")});
  EXPECT_EQ(verify.exit_code, 0) << verify.err;
  EXPECT_NE(verify.out.find("verified 2 shards, 3 records"), std::string::npos) << verify.out;
}

TEST_F(StoreCommands, ConvertsJsonLinesWithSchemaAndCompression) {
  WriteFile(Local("events.jsonl"),
            "{\"id\": \"a\", \"x\": 1, \"y\": [1.5, 2], \"ok\": true}\n"
            "{\"id\": \"b\", \"x\": 2, \"y\": [3], \"ok\": false}\n"
            "\n"
            "{\"id\": \"c\", \"x\": 3, \"y\": [], \"n\": null}\n");
  Outcome convert = Spool({"convert", Local("events.jsonl").string(), Url("jsonl/all"), "--compression", "gzip",
                           "--schema", "x:float"});
  ASSERT_EQ(convert.exit_code, 0) << convert.err;
  Outcome ls = Spool({"ls", Url("jsonl/")});
  EXPECT_NE(ls.out.find("all-00000.tfrecord.gz"), std::string::npos) << ls.out;
  Outcome cat = Spool({"records", "cat", Url("jsonl/all.manifest.json")});
  ASSERT_EQ(cat.exit_code, 0) << cat.err;
  std::string a = LineWith(cat.out, kA), c = LineWith(cat.out, kC);
  EXPECT_NE(a.find("\"x\":{\"float_list\":{\"value\":[1]}}"), std::string::npos) << a;
  EXPECT_NE(a.find("\"y\":{\"float_list\":{\"value\":[1.5,2]}}"), std::string::npos) << a;
  EXPECT_NE(a.find("\"ok\":{\"int64_list\":{\"value\":[\"1\"]}}"), std::string::npos) << a;
  EXPECT_EQ(c.find("\"n\""), std::string::npos) << c;  // null: no feature
}

// Excel's "CSV UTF-8" export starts with a byte-order mark and ends lines
// with CRLF: the first feature is "id", as pandas reads it, not "\ufeffid".
TEST_F(StoreCommands, ConvertIgnoresAUtf8ByteOrderMark) {
  WriteFile(Local("excel.csv"), "\xef\xbb\xbfid,v\r\na,2\r\n");
  Outcome csv = Spool({"convert", Local("excel.csv").string(), Url("bom/csv")});
  ASSERT_EQ(csv.exit_code, 0) << csv.err;
  Outcome cat = Spool({"records", "cat", Url("bom/csv.manifest.json")});
  ASSERT_EQ(cat.exit_code, 0) << cat.err;
  EXPECT_NE(cat.out.find("\"id\":{\"bytes_list\":{\"value\":[" + std::string(kA) + "]}}"), std::string::npos)
      << cat.out;
  EXPECT_EQ(cat.out.find("\\ufeff"), std::string::npos) << cat.out;
  EXPECT_EQ(cat.out.find("\xef\xbb\xbf"), std::string::npos) << cat.out;

  WriteFile(Local("notepad.jsonl"), "\xef\xbb\xbf{\"id\": \"a\", \"x\": 1}\r\n");
  Outcome jsonl = Spool({"convert", Local("notepad.jsonl").string(), Url("bom/jsonl")});
  ASSERT_EQ(jsonl.exit_code, 0) << jsonl.err;
  Outcome lines = Spool({"records", "cat", Url("bom/jsonl.manifest.json")});
  ASSERT_EQ(lines.exit_code, 0) << lines.err;
  EXPECT_NE(lines.out.find("\"x\":{\"int64_list\":{\"value\":[\"1\"]}}"), std::string::npos) << lines.out;
}

TEST_F(StoreCommands, ConvertsAnImageFolderFromTheStore) {
  WriteFile(Local("images/cat/a.jpg"), "JPEG bytes of a");
  WriteFile(Local("images/cat/b.jpeg"), "JPEG bytes of b");
  WriteFile(Local("images/dog/c.png"), "PNG bytes of c");
  WriteFile(Local("images/README.txt"), "not an image");
  ASSERT_EQ(Spool({"--quiet", "cp", "-r", Local("images").string(), Url("raw/images")}).exit_code, 0);
  Outcome convert = Spool({"convert", Url("raw/images/"), Url("img/train"), "--shards", "2"});
  ASSERT_EQ(convert.exit_code, 0) << convert.err;
  Outcome cat = Spool({"records", "cat", Url("img/train")});
  ASSERT_EQ(cat.exit_code, 0) << cat.err;
  ASSERT_EQ(Lines(cat.out).size(), 3u) << cat.out;
  std::string c = LineWith(cat.out, "\"image/filename\":{\"bytes_list\":{\"value\":[\"Yy5wbmc=\"]}}");  // c.png
  EXPECT_NE(c.find("\"image/class/label\":{\"int64_list\":{\"value\":[\"1\"]}}"), std::string::npos) << cat.out;
  EXPECT_NE(c.find("\"image/class/text\":{\"bytes_list\":{\"value\":[\"ZG9n\"]}}"), std::string::npos) << c;  // dog
  EXPECT_NE(c.find("\"image/format\":{\"bytes_list\":{\"value\":[\"UE5H\"]}}"), std::string::npos) << c;     // PNG
  EXPECT_NE(c.find("\"image/encoded\":{\"bytes_list\":{\"value\":[\"UE5HIGJ5dGVzIG9mIGM=\"]}}"), std::string::npos)
      << c;
}

TEST_F(StoreCommands, ParallelTasksWriteWhatOneRunWrites) {
  std::string csv = "n,sq\n";
  for (int i = 0; i < 50; ++i) csv += std::to_string(i) + "," + std::to_string(i * i) + "\n";
  WriteFile(Local("n.csv"), csv);
  ASSERT_EQ(Spool({"-q", "convert", Local("n.csv").string(), Url("one/ds"), "--shards", "5"}).exit_code, 0);
  for (int task = 0; task < 2; ++task) {
    Outcome run = Spool({"convert", Local("n.csv").string(), Url("tasks/ds"), "--shards", "5", "--task-index",
                         std::to_string(task), "--task-count", "2"});
    ASSERT_EQ(run.exit_code, 0) << run.err;
  }
  Outcome no_manifest = Spool({"stat", Url("tasks/ds.manifest.json")});
  EXPECT_NE(no_manifest.exit_code, 0);
  Outcome manifest = Spool({"records", "manifest", Url("tasks/ds"), "--shards", "5"});
  ASSERT_EQ(manifest.exit_code, 0) << manifest.err;
  Outcome one = Spool({"records", "cat", Url("one/ds.manifest.json")});
  Outcome tasks = Spool({"records", "cat", Url("tasks/ds.manifest.json")});
  ASSERT_EQ(one.exit_code, 0) << one.err;
  ASSERT_EQ(tasks.exit_code, 0) << tasks.err;
  EXPECT_EQ(Lines(tasks.out).size(), 50u);
  EXPECT_EQ(Lines(one.out).size(), 50u);
  for (int shard = 0; shard < 5; ++shard) {  // byte for byte
    const std::string name = "ds-0000" + std::to_string(shard) + "-of-00005.tfrecord";
    Outcome from_one = Spool({"cat", Url("one/" + name)});
    Outcome from_tasks = Spool({"cat", Url("tasks/" + name)});
    ASSERT_EQ(from_tasks.exit_code, 0) << from_tasks.err;
    EXPECT_FALSE(from_one.out.empty());
    EXPECT_EQ(from_tasks.out, from_one.out) << name;
  }
  Outcome missing = Spool({"records", "manifest", Url("tasks/ds"), "--shards", "6"});
  EXPECT_EQ(missing.exit_code, 1);
  EXPECT_NE(missing.err.find("6 of 6 shards are missing"), std::string::npos) << missing.err;
}

TEST_F(StoreCommands, BadInputGivesTheDocumentedMessageAndExitCode) {
  WriteFile(Local("bad.csv"), "a,b\n1,2\n3\n4,5\n");
  Outcome bad_row = Spool({"convert", Local("bad.csv").string(), Url("bad/ds")});
  EXPECT_EQ(bad_row.exit_code, 1);
  EXPECT_NE(bad_row.err.find("bad.csv:3: expected 2 fields (as in the header), found 1"), std::string::npos)
      << bad_row.err;
  EXPECT_NE(bad_row.err.find("--skip-bad"), std::string::npos) << bad_row.err;
  EXPECT_NE(Spool({"stat", Url("bad/ds.manifest.json")}).exit_code, 0);  // nothing half-written is published

  Outcome skipped = Spool({"--json", "convert", Local("bad.csv").string(), Url("bad/ds"), "--skip-bad"});
  EXPECT_EQ(skipped.exit_code, 0) << skipped.err;
  EXPECT_NE(skipped.out.find("\"records\":2,\"skipped\":1"), std::string::npos) << skipped.out;

  Outcome missing = Spool({"convert", Local("nothing.csv").string(), Url("x/ds")});
  EXPECT_EQ(missing.exit_code, 1);
  EXPECT_NE(missing.err.find("nothing.csv"), std::string::npos) << missing.err;
  Outcome malformed = Spool({"records", "count", "s3:///no-bucket"});
  EXPECT_EQ(malformed.exit_code, 1);
  EXPECT_TRUE(malformed.err.starts_with("spool: ")) << malformed.err;
  EXPECT_EQ(Lines(malformed.err).size(), 1u) << malformed.err;
  Outcome usage = Spool({"convert", Local("bad.csv").string()});
  EXPECT_EQ(usage.exit_code, 2);
  Outcome conflicting = Spool({"convert", "a.csv", Url("y"), "--shards", "2", "--shard-size", "1MiB"});
  EXPECT_EQ(conflicting.exit_code, 2);
}

TEST_F(StoreCommands, VerifyReportsACorruptShardWithExitCode3) {
  WriteFile(Local("t.csv"), "v\n1\n2\n3\n4\n");
  ASSERT_EQ(Spool({"-q", "convert", Local("t.csv").string(), Url("v/ds"), "--shards", "1"}).exit_code, 0);
  const std::string shard = Url("v/ds-00000-of-00001.tfrecord");
  ASSERT_EQ(Spool({"-q", "cp", shard, Local("shard").string()}).exit_code, 0);
  std::string bytes = ReadFile(Local("shard"));
  ASSERT_GT(bytes.size(), 30u);
  bytes[bytes.size() / 2] ^= 0x55;
  WriteFile(Local("shard"), bytes);
  ASSERT_EQ(Spool({"-q", "cp", Local("shard").string(), shard}).exit_code, 0);
  Outcome verify = Spool({"records", "verify", Url("v/ds.manifest.json")});
  EXPECT_EQ(verify.exit_code, 3) << verify.out << verify.err;
  EXPECT_NE(verify.out.find("DAMAGED"), std::string::npos) << verify.out;
  EXPECT_NE(verify.err.find("corrupted record at"), std::string::npos) << verify.err;
  EXPECT_NE(verify.err.find("ds-00000-of-00001.tfrecord"), std::string::npos) << verify.err;
}

// A valid shard that is not the one the manifest describes (same record
// count, same size, other values) passes every record CRC; the manifest's
// whole-shard CRC32C catches it.
TEST_F(StoreCommands, VerifyChecksShardsAgainstTheirManifest) {
  WriteFile(Local("t.csv"), "v\n1\n2\n3\n4\n");
  WriteFile(Local("u.csv"), "v\n5\n6\n7\n8\n");
  ASSERT_EQ(Spool({"-q", "convert", Local("t.csv").string(), Url("m/ds"), "--shards", "1"}).exit_code, 0);
  ASSERT_EQ(Spool({"-q", "convert", Local("u.csv").string(), Url("m/other"), "--shards", "1"}).exit_code, 0);
  Outcome good = Spool({"records", "verify", Url("m/ds.manifest.json")});
  EXPECT_EQ(good.exit_code, 0) << good.err;
  EXPECT_NE(good.out.find("and every shard its manifest"), std::string::npos) << good.out;
  ASSERT_EQ(Spool({"-q", "cp", Url("m/other-00000-of-00001.tfrecord"), Url("m/ds-00000-of-00001.tfrecord")}).exit_code,
            0);
  Outcome swapped = Spool({"records", "verify", Url("m/ds.manifest.json")});
  EXPECT_EQ(swapped.exit_code, 3) << swapped.out << swapped.err;
  EXPECT_NE(swapped.err.find("ds-00000-of-00001.tfrecord has CRC32C 0x"), std::string::npos) << swapped.err;
  EXPECT_NE(swapped.err.find("its manifest says 0x"), std::string::npos) << swapped.err;
}

TEST_F(StoreCommands, SavesListsRestoresVerifiesAndPrunesCheckpoints) {
  WriteFile(Local("ckpt/model.bin"), std::string(100000, 'm'));
  WriteFile(Local("ckpt/opt/state"), "optimizer");
  const std::string root = Url("ckpt");
  ASSERT_EQ(Spool({"ckpt", "save", root, "--step", "100", Local("ckpt").string()}).exit_code, 0);
  WriteFile(Local("ckpt/opt/state"), "optimizer at 200");
  Outcome save = Spool({"ckpt", "save", root, "--step", "200", Local("ckpt").string(), "--metadata", "loader=e1"});
  ASSERT_EQ(save.exit_code, 0) << save.err;
  EXPECT_NE(save.out.find("saved step 200 (2 files"), std::string::npos) << save.out;
  Outcome again = Spool({"ckpt", "save", root, "--step", "200", Local("ckpt").string()});
  EXPECT_EQ(again.exit_code, 1);

  Outcome list = Spool({"--json", "ckpt", "list", root});
  ASSERT_EQ(list.exit_code, 0) << list.err;
  std::vector<std::string> lines = Lines(list.out);
  ASSERT_EQ(lines.size(), 2u) << list.out;
  EXPECT_NE(lines[0].find("\"step\":100"), std::string::npos);
  EXPECT_NE(lines[1].find("\"step\":200"), std::string::npos);
  EXPECT_NE(lines[1].find("\"metadata\":{\"loader\":\"e1\"}"), std::string::npos) << lines[1];

  ASSERT_EQ(Spool({"-q", "ckpt", "restore", root, Local("latest").string()}).exit_code, 0);
  EXPECT_EQ(ReadTree(Local("latest")), ReadTree(Local("ckpt")));
  ASSERT_EQ(Spool({"-q", "ckpt", "restore", root, "--step", "100", Local("old").string()}).exit_code, 0);
  EXPECT_EQ(ReadFile(Local("old/opt/state")), "optimizer");

  Outcome verify = Spool({"ckpt", "verify", root});
  EXPECT_EQ(verify.exit_code, 0) << verify.err;
  EXPECT_EQ(Lines(verify.out).size(), 2u) << verify.out;
  Outcome prune = Spool({"ckpt", "prune", root, "--keep", "1"});
  ASSERT_EQ(prune.exit_code, 0) << prune.err;
  EXPECT_EQ(prune.out, "deleted step 100\n");
  Outcome after = Spool({"ckpt", "list", root});
  EXPECT_EQ(Lines(after.out).size(), 1u) << after.out;
  Outcome gc = Spool({"ckpt", "gc", root, "--older-than", "1h"});
  EXPECT_EQ(gc.exit_code, 0) << gc.err;
  Outcome missing = Spool({"ckpt", "restore", Url("no-checkpoints"), Local("none").string()});
  EXPECT_EQ(missing.exit_code, 1);
  EXPECT_NE(missing.err.find("no committed checkpoint"), std::string::npos) << missing.err;
}

// `spool ckpt restore ROOT .` from a project folder: refused, the project
// untouched, until --replace asks for it; an earlier restore is replaced.
TEST_F(StoreCommands, CkptRestoreNeverDeletesAFolderItDidNotMake) {
  const std::string root = Url("restore-rule");
  WriteFile(Local("saved/model.bin"), "weights");
  ASSERT_EQ(Spool({"-q", "ckpt", "save", root, "--step", "1", Local("saved").string()}).exit_code, 0);
  WriteFile(Local("project/train.py"), "print('train')\n");
  WriteFile(Local("project/data/rows.csv"), "1,2\n");
  const auto project = ReadTree(Local("project"));

  Outcome refused = RunSpool({"ckpt", "restore", root, "."}, Local(""), "", Local("project"), Environment());
  EXPECT_EQ(refused.exit_code, 1) << refused.err;
  EXPECT_NE(refused.err.find("is not empty and is not an earlier restore"), std::string::npos) << refused.err;
  EXPECT_NE(refused.err.find("--replace"), std::string::npos) << refused.err;
  EXPECT_EQ(Lines(refused.err).size(), 1u) << refused.err;
  EXPECT_EQ(ReadTree(Local("project")), project);

  ASSERT_EQ(Spool({"-q", "ckpt", "restore", root, Local("restored").string()}).exit_code, 0);
  WriteFile(Local("restored/written-by-training.bin"), "x");
  Outcome again = Spool({"-q", "ckpt", "restore", root, Local("restored").string()});
  EXPECT_EQ(again.exit_code, 0) << again.err;
  EXPECT_EQ(ReadTree(Local("restored")), (std::map<std::string, std::string>{{"model.bin", "weights"}}));

  Outcome replaced = Spool({"-q", "ckpt", "restore", root, "--replace", Local("project").string()});
  EXPECT_EQ(replaced.exit_code, 0) << replaced.err;
  EXPECT_EQ(ReadTree(Local("project")), (std::map<std::string, std::string>{{"model.bin", "weights"}}));
}

TEST_F(StoreCommands, SyncCopiesOnlyWhatDiffers) {
  WriteFile(Local("tree/a.txt"), "alpha");
  WriteFile(Local("tree/sub/b.txt"), "beta");
  WriteFile(Local("tree/big.bin"), std::string(9 << 20, 'x'));
  const std::string to = Url("synced");
  Outcome first = Spool({"sync", Local("tree").string(), to});
  ASSERT_EQ(first.exit_code, 0) << first.err;
  EXPECT_NE(first.out.find("3 copied, 0 deleted, 0 already up to date"), std::string::npos) << first.out;
  Outcome second = Spool({"sync", Local("tree").string(), to});
  EXPECT_NE(second.out.find("0 copied, 0 deleted, 3 already up to date"), std::string::npos) << second.out;
  WriteFile(Local("tree/a.txt"), "ALPHA");  // same size, other bytes
  fs::remove(Local("tree/sub/b.txt"));
  Outcome third = Spool({"sync", "--delete", Local("tree").string(), to});
  ASSERT_EQ(third.exit_code, 0) << third.err;
  EXPECT_NE(third.out.find("1 copied, 1 deleted, 1 already up to date"), std::string::npos) << third.out;
  // And back down into a local folder.
  ASSERT_EQ(Spool({"-q", "sync", to, Local("back").string()}).exit_code, 0);
  EXPECT_EQ(ReadTree(Local("back")), ReadTree(Local("tree")));
}

TEST_F(StoreCommands, CopiesATreeBothWaysByteForByte) {
  WriteFile(Local("tree/a.txt"), "alpha\n");
  WriteFile(Local("tree/empty"), "");
  WriteFile(Local("tree/with space.txt"), "spaced");
  WriteFile(Local("tree/sub/deeper/c.bin"), std::string(20 << 20, 'c') + "end");  // several parts
  Outcome up = Spool({"cp", "-r", Local("tree").string(), Url("tree")});
  ASSERT_EQ(up.exit_code, 0) << up.err;
  EXPECT_EQ(Lines(up.out).size(), 4u) << up.out;
  Outcome down = Spool({"--quiet", "cp", "-r", Url("tree/"), Local("down").string()});
  ASSERT_EQ(down.exit_code, 0) << down.err;
  EXPECT_EQ(ReadTree(Local("down")), ReadTree(Local("tree")));
}

// Zero-byte keys ending in '/' (what "Create folder" in the S3 console and
// many tools make) are folders: sync and cp -r make them local folders and
// copy them between buckets as they are. "a//b" lands at a/b locally and
// stays a//b in a bucket.
TEST_F(StoreCommands, FolderMarkersAreFoldersOnEveryCopyPath) {
  if (Backend() == "local") GTEST_SKIP() << "local folders hold no marker objects";
  for (const char* marker : {"t4/", "t4/images/", "t4/empty/"}) Put(marker, "");
  Put("t4/images/cat.jpg", "meow");
  Put("t4/a//b.txt", "double");
  const std::map<std::string, std::string> files = {{"a/b.txt", "double"}, {"images/cat.jpg", "meow"}};
  for (const std::vector<std::string>& command : {std::vector<std::string>{"sync"}, {"cp", "-r"}}) {
    const fs::path local = Local("down-" + command[0]);
    Outcome down = Spool(With(command, {Url("t4/"), local.string() + "/"}));
    ASSERT_EQ(down.exit_code, 0) << command[0] << ": " << down.err;
    EXPECT_EQ(down.err, "") << command[0];
    EXPECT_EQ(ReadTree(local), files) << command[0];
    EXPECT_TRUE(fs::is_directory(local / "empty")) << command[0];

    const std::string copy = Url("copy-" + command[0] + "/");
    Outcome across = Spool(With(command, {Url("t4/"), copy}));
    ASSERT_EQ(across.exit_code, 0) << command[0] << ": " << across.err;
    EXPECT_EQ(Lines(Spool({"ls", "-r", copy}).out),
              (std::vector<std::string>{copy + "a//b.txt", copy + "empty/", copy + "images/", copy + "images/cat.jpg"}))
        << command[0];
  }
  Outcome again = Spool({"sync", Url("t4/"), Local("down-sync").string()});
  ASSERT_EQ(again.exit_code, 0) << again.err;
  EXPECT_NE(again.out.find("0 copied, 0 deleted, 2 already up to date"), std::string::npos) << again.out;
  Outcome again_across = Spool({"sync", Url("t4/"), Url("copy-sync/")});
  ASSERT_EQ(again_across.exit_code, 0) << again_across.err;
  EXPECT_NE(again_across.out.find("0 copied, 0 deleted, 4 already up to date"), std::string::npos) << again_across.out;
}

// A name that is an object and a folder (keys t1 and t1/x) lists as both, as
// the AWS CLI shows it; "t1/" lists the folder.
TEST_F(StoreCommands, ListsANameThatIsBothAnObjectAndAFolder) {
  if (Backend() == "local") GTEST_SKIP() << "a local name is a file or a folder, not both";
  Put("t1", "object");
  Put("t1/x", "inside");
  Outcome both = Spool({"ls", Url("t1")});
  ASSERT_EQ(both.exit_code, 0) << both.err;
  EXPECT_EQ(Lines(both.out), (std::vector<std::string>{Url("t1"), Url("t1/")}));
  EXPECT_EQ(Lines(Spool({"ls", Url("t1/")}).out), std::vector<std::string>{Url("t1/x")});
  EXPECT_EQ(Lines(Spool({"ls", "-r", Url("t1")}).out), (std::vector<std::string>{Url("t1"), Url("t1/x")}));
  Outcome json = Spool({"ls", "--json", Url("t1")});
  std::vector<std::string> lines = Lines(json.out);
  ASSERT_EQ(lines.size(), 2u) << json.out;
  EXPECT_NE(lines[0].find("\"size\":6"), std::string::npos) << lines[0];
  EXPECT_NE(lines[1].find("\"folder\":true"), std::string::npos) << lines[1];
}

TEST_F(StoreCommands, WhoamiAndDoctorDescribeAccess) {
  Outcome whoami = Spool({"whoami", root_});
  ASSERT_EQ(whoami.exit_code, 0) << whoami.err;
  EXPECT_NE(whoami.out.find("identity"), std::string::npos) << whoami.out;
  if (Backend() == "s3") {
    EXPECT_NE(whoami.out.find("from         environment"), std::string::npos) << whoami.out;
    EXPECT_EQ(whoami.out.find(GetEnv("AWS_SECRET_ACCESS_KEY")), std::string::npos);
    EXPECT_EQ(whoami.out.find(GetEnv("AWS_ACCESS_KEY_ID")), std::string::npos);  // masked
  }
  Outcome doctor = Spool({"doctor", root_ + "/"});
  EXPECT_EQ(doctor.exit_code, 0) << doctor.out << doctor.err;
  for (const char* step : {"config", "credentials", "list", "write", "read", "delete"}) {
    EXPECT_NE(doctor.out.find(std::string(step)), std::string::npos) << doctor.out;
  }
  EXPECT_NE(doctor.out.find("verdict"), std::string::npos) << doctor.out;
  if (Backend() != "local") {
    EXPECT_NE(doctor.out.find("endpoint     ok"), std::string::npos) << doctor.out;
  }
}

TEST_F(StoreCommands, MakesBuckets) {
  if (Backend() == "local") {
    Outcome local = Spool({"mb", root_});
    EXPECT_EQ(local.exit_code, 1);
    EXPECT_NE(local.err.find("creates s3:// and gs:// buckets"), std::string::npos) << local.err;
    return;
  }
  if (Backend() == "s3") {
    // One fixed, empty bucket (Ceph RGW, like AWS in us-east-1, answers 200 to
    // creating a bucket one owns already, so reruns pass).
    Outcome made = Spool({"mb", "s3://spool-cli-mb-test"});
    ASSERT_EQ(made.exit_code, 0) << made.err;
    EXPECT_EQ(made.out, "created s3://spool-cli-mb-test\n");
    EXPECT_EQ(Spool({"ls", "s3://spool-cli-mb-test/"}).exit_code, 0);
    return;
  }
  Outcome exists = Spool({"mb", std::string("gs://") + kGcsBucket});  // SetUp made it
  EXPECT_EQ(exists.exit_code, 1);
  EXPECT_NE(exists.err.find("exists already"), std::string::npos) << exists.err;
  Outcome object = Spool({"mb", Url("not-a-bucket")});
  EXPECT_EQ(object.exit_code, 1);
  EXPECT_NE(object.err.find("give just the bucket"), std::string::npos) << object.err;
}

// What a killed writer leaves -- an S3 multipart upload never completed
// (started here by the AWS CLI), a local temporary file -- is listed by
// --dry-run and removed by gc-uploads; GCS sessions cannot be listed, so
// there it finds nothing.
TEST_F(StoreCommands, GcUploadsAbortsWhatKilledWritersLeft) {
  const bool expect_one = Backend() != "gs";
  if (Backend() == "s3") {
    const std::string bucket_and_key = root_.substr(5);  // "bucket/prefix"
    const size_t slash = bucket_and_key.find('/');
    const std::string command = "/usr/bin/aws --endpoint-url " + GetEnv("AWS_ENDPOINT_URL") +
                                " s3api create-multipart-upload --bucket " + bucket_and_key.substr(0, slash) +
                                " --key " + bucket_and_key.substr(slash + 1) + "/big.bin > /dev/null";
    ASSERT_EQ(std::system(command.c_str()), 0) << command;
  } else if (Backend() == "local") {
    WriteFile(fs::path(root_) / ".big.bin.spool-tmp-0123456789abcdef", "half of it");
  }
  Outcome young = Spool({"gc-uploads", root_ + "/", "--older-than", "1h"});
  EXPECT_EQ(young.exit_code, 0) << young.err;
  EXPECT_NE(young.out.find("aborted 0 incomplete uploads older than 1h"), std::string::npos) << young.out;

  Outcome dry_run = Spool({"gc-uploads", root_ + "/", "--older-than", "0s", "--dry-run"});
  EXPECT_EQ(dry_run.exit_code, 0) << dry_run.err;
  if (expect_one) {
    EXPECT_NE(dry_run.out.find("would abort the upload of " + Url("big.bin")), std::string::npos) << dry_run.out;
  }
  Outcome aborted = Spool({"--json", "gc-uploads", root_ + "/", "--older-than", "0s"});
  EXPECT_EQ(aborted.exit_code, 0) << aborted.err;
  EXPECT_EQ(Lines(aborted.out).size(), expect_one ? 1u : 0u) << aborted.out;
  if (expect_one) {
    EXPECT_NE(aborted.out.find("{\"aborted\":\"" + Url("big.bin") + "\""), std::string::npos) << aborted.out;
  }
  Outcome again = Spool({"gc-uploads", root_ + "/", "--older-than", "0s"});
  EXPECT_NE(again.out.find("aborted 0 incomplete uploads"), std::string::npos) << again.out;
  if (Backend() == "local") {
    EXPECT_TRUE(fs::is_empty(root_));
  }

  Outcome bad_age = Spool({"gc-uploads", root_ + "/", "--older-than", "soon"});
  EXPECT_EQ(bad_age.exit_code, 1);
  EXPECT_NE(bad_age.err.find("--older-than \"soon\" should be a number and a unit"), std::string::npos) << bad_age.err;
}

}  // namespace
}  // namespace spool::cli::testing
