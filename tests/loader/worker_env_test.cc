#include "spool/records/loader/worker_env.h"

#include <gtest/gtest.h>

#include <map>

namespace spool::loader {
namespace {

WorkerIdentity Resolve(std::map<std::string, std::string> vars, std::optional<int> rank = std::nullopt,
                       std::optional<int> world = std::nullopt) {
  auto id = ResolveWorker(rank, world, Env::Fixed(std::move(vars)));
  EXPECT_TRUE(id.ok()) << id.status().ToString();
  return id.value_or(WorkerIdentity{-1, -1, "error"});
}

TEST(WorkerEnv, NothingSetIsRankZeroOfOne) {
  WorkerIdentity id = Resolve({});
  EXPECT_EQ(id.rank, 0);
  EXPECT_EQ(id.world_size, 1);
  EXPECT_EQ(id.source, "default");
}

TEST(WorkerEnv, ExplicitWinsOverEnvironment) {
  WorkerIdentity id = Resolve({{"RANK", "3"}, {"WORLD_SIZE", "4"}}, 1, 2);
  EXPECT_EQ(id.rank, 1);
  EXPECT_EQ(id.world_size, 2);
  EXPECT_EQ(id.source, "explicit");
}

TEST(WorkerEnv, Torchrun) {
  WorkerIdentity id = Resolve({{"RANK", "3"}, {"WORLD_SIZE", "4"}, {"LOCAL_RANK", "1"}});
  EXPECT_EQ(id.rank, 3);
  EXPECT_EQ(id.world_size, 4);
  EXPECT_EQ(id.source, "torchrun");
}

TEST(WorkerEnv, OpenMpiAndPmi) {
  WorkerIdentity ompi = Resolve({{"OMPI_COMM_WORLD_RANK", "5"}, {"OMPI_COMM_WORLD_SIZE", "8"}});
  EXPECT_EQ(ompi.rank, 5);
  EXPECT_EQ(ompi.world_size, 8);
  EXPECT_EQ(ompi.source, "mpi");
  WorkerIdentity pmi = Resolve({{"PMI_RANK", "2"}, {"PMI_SIZE", "3"}});
  EXPECT_EQ(pmi.rank, 2);
  EXPECT_EQ(pmi.world_size, 3);
}

TEST(WorkerEnv, TfConfigRanksChiefFirstThenWorkers) {
  const std::string cluster =
      R"("cluster": {"chief": ["c:1"], "worker": ["w0:1", "w1:1", "w2:1"], "ps": ["p:1"], "evaluator": ["e:1"]})";
  auto config = [&](const std::string& type, int index) {
    return "{" + cluster + R"(, "task": {"type": ")" + type + R"(", "index": )" + std::to_string(index) + "}}";
  };
  WorkerIdentity chief = Resolve({{"TF_CONFIG", config("chief", 0)}});
  EXPECT_EQ(chief.rank, 0);
  EXPECT_EQ(chief.world_size, 4);
  EXPECT_EQ(chief.source, "TF_CONFIG");
  WorkerIdentity worker2 = Resolve({{"TF_CONFIG", config("worker", 2)}});
  EXPECT_EQ(worker2.rank, 3);
  EXPECT_EQ(worker2.world_size, 4);
  WorkerIdentity evaluator = Resolve({{"TF_CONFIG", config("evaluator", 0)}});
  EXPECT_EQ(evaluator.rank, 0);
  EXPECT_EQ(evaluator.world_size, 1);
  auto ps = ResolveWorker(std::nullopt, std::nullopt, Env::Fixed({{"TF_CONFIG", config("ps", 0)}}));
  EXPECT_EQ(ps.status().code(), StatusCode::kFailedPrecondition);
}

TEST(WorkerEnv, TfConfigWithoutChiefStartsAtWorkerZero) {
  WorkerIdentity id = Resolve(
      {{"TF_CONFIG", R"({"cluster": {"worker": ["a:1", "b:1"]}, "task": {"type": "worker", "index": 1}})"}});
  EXPECT_EQ(id.rank, 1);
  EXPECT_EQ(id.world_size, 2);
}

TEST(WorkerEnv, IndexedJobNeedsTheCompletionsCount) {
  auto missing = ResolveWorker(std::nullopt, std::nullopt, Env::Fixed({{"JOB_COMPLETION_INDEX", "2"}}));
  EXPECT_EQ(missing.status().code(), StatusCode::kInvalidArgument);
  WorkerIdentity id = Resolve({{"JOB_COMPLETION_INDEX", "2"}}, std::nullopt, 5);
  EXPECT_EQ(id.rank, 2);
  EXPECT_EQ(id.world_size, 5);
  EXPECT_EQ(id.source, "indexed-job");
  WorkerIdentity from_env = Resolve({{"JOB_COMPLETION_INDEX", "4"}, {"SPOOL_WORLD_SIZE", "6"}});
  EXPECT_EQ(from_env.rank, 4);
  EXPECT_EQ(from_env.world_size, 6);
}

TEST(WorkerEnv, BadValuesNameTheVariable) {
  auto garbage = ResolveWorker(std::nullopt, std::nullopt, Env::Fixed({{"RANK", "x"}, {"WORLD_SIZE", "2"}}));
  ASSERT_FALSE(garbage.ok());
  EXPECT_NE(garbage.status().message().find("RANK"), std::string::npos);
  auto outside = ResolveWorker(std::nullopt, std::nullopt, Env::Fixed({{"RANK", "2"}, {"WORLD_SIZE", "2"}}));
  EXPECT_EQ(outside.status().code(), StatusCode::kInvalidArgument);
  auto no_size = ResolveWorker(std::nullopt, std::nullopt, Env::Fixed({{"RANK", "0"}}));
  EXPECT_EQ(no_size.status().code(), StatusCode::kInvalidArgument);
  auto bad_json = ResolveWorker(std::nullopt, std::nullopt, Env::Fixed({{"TF_CONFIG", "{not json"}}));
  EXPECT_EQ(bad_json.status().code(), StatusCode::kInvalidArgument);
}

}  // namespace
}  // namespace spool::loader
