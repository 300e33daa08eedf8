// train_loop: a training job as spool users write one. It streams TFRecord
// shards through the DataLoader, trains a softmax classifier, saves a
// checkpoint every N steps through the CheckpointManager (model weights plus
// the loader's position in the manifest's metadata), and on start-up restores
// the latest complete checkpoint and continues exactly where it stopped.
//
//   train_loop --data /tmp/digits/train.manifest.json --checkpoints /tmp/ckpt
//              --eval /tmp/digits/test.manifest.json --steps 600 --save-every 50
//
// It prints a line per --log-every steps (loss, records/s, input wait) and a
// final summary; --summary FILE also writes the summary as key=value lines,
// including a digest of every record the run trained on, in order, so two
// runs can be compared record for record.
//
// Several ranks (RANK/WORLD_SIZE, TF_CONFIG, ...): every rank saves its own
// model and loader position as its part of each checkpoint, rank 0 commits
// the step once every rank's part is there, and every rank resumes from its
// own part.
//
// Elastic (--partitions C): the loader's order is fixed by C partitions and
// --batch-size is the global batch (records per step over all ranks), so the
// job may restart on any world size dividing C: rank r then resumes from
// the part of old rank r mod (old world size), and the job's global batches
// continue exactly where they stopped. --trace FILE writes the CRC32C of
// every record of each step's batch, a line per step, to compare runs of
// different world sizes batch for batch.
//
// Preemption: on SIGTERM (what Kubernetes sends before stopping a pod) the
// loop finishes the step it is in, saves that step with priority before the
// deadline (--preemption-grace minus --preemption-margin after the signal)
// and exits with 143; the restarted pod resumes from that step. See
// docs/checkpoints.md, "Preemption".
#include <algorithm>
#include <chrono>
#include <csignal>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include <CLI/CLI.hpp>

#include "spool/checkpoint/checkpoint_manager.h"
#include "spool/checkpoint/preemption.h"
#include "spool/core/bytes.h"
#include "spool/core/crc32c.h"
#include "spool/records/example.h"
#include "spool/metrics/exporter.h"
#include "spool/records/loader/data_loader.h"
#include "samples/train_loop/softmax_model.h"
#include "spool/register_backends.h"

namespace {

using spool::Result;
using spool::Status;
using spool::samples::SoftmaxModel;

struct Args {
  std::string data, eval, checkpoints, summary;
  std::filesystem::path workdir = std::filesystem::temp_directory_path() / "spool-train-loop";
  int64_t steps = 600;
  int64_t save_every = 50;
  int64_t log_every = 50;
  uint64_t batch_size = 32;
  uint64_t seed = 7;
  double learning_rate = 0.5;
  int step_delay_ms = 0;  // simulated compute per step, for demos
  uint64_t partitions = 0;  // elastic mode when > 0; batch_size is then the global batch
  std::string trace;        // a line per step: its records' CRC32Cs
  int preemption_grace = 30;  // seconds from SIGTERM to SIGKILL; 0: no handler
  int preemption_margin = 5;  // seconds kept for exiting after the save
  int inputs = 64;
  int classes = 10;
  std::string feature_prefix = "p";
  std::string label = "label";
};

// What the run has done so far; saved in every checkpoint's metadata.
struct Progress {
  int64_t step = 0;
  uint64_t records = 0;
  uint64_t digest = 1469598103934665603ull;  // FNV-1a over each record's crc32c, in order

  void See(std::string_view record) {
    const uint32_t crc = spool::crc32c::Value(record);
    for (int i = 0; i < 4; ++i) {
      digest ^= (crc >> (8 * i)) & 0xff;
      digest *= 1099511628211ull;
    }
    ++records;
  }
};

// Features p0..p{inputs-1} (int64 or float) and an int64 label, as
// `spool convert` writes them from a CSV table.
Status ReadExample(const tensorflow::Example& example, const Args& args, std::vector<float>& features,
                   std::vector<int>& labels) {
  for (int i = 0; i < args.inputs; ++i) {
    const std::string name = args.feature_prefix + std::to_string(i);
    if (auto ints = spool::records::GetInt64s(example, name); ints.ok() && ints->size() == 1) {
      features.push_back(static_cast<float>((*ints)[0]) / 16.0f);
    } else if (auto floats = spool::records::GetFloats(example, name); floats.ok() && floats->size() == 1) {
      features.push_back((*floats)[0] / 16.0f);
    } else {
      return spool::InvalidArgumentError("record has no single-valued feature '" + name +
                                         "': pass --feature-prefix and --inputs to match the dataset");
    }
  }
  SPOOL_ASSIGN_OR_RETURN(auto label, spool::records::GetInt64s(example, args.label));
  if (label.size() != 1 || label[0] < 0 || label[0] >= args.classes) {
    return spool::InvalidArgumentError("label feature '" + args.label + "' must be one value in [0, " +
                                       std::to_string(args.classes) + ")");
  }
  labels.push_back(static_cast<int>(label[0]));
  return spool::OkStatus();
}

spool::loader::DataLoaderOptions LoaderOptions(const Args& args, const std::string& input, bool training) {
  spool::loader::DataLoaderOptions options;
  options.inputs = {input};
  options.batch_size = args.batch_size;
  options.seed = args.seed;
  options.parse_examples = true;
  options.epochs = training ? 0 : 1;  // training: as many epochs as --steps needs
  options.shuffle_shards = training;
  options.shuffle_buffer = training ? 512 : 0;
  if (training && args.partitions > 0) {
    options.partitions = args.partitions;
    options.global_batch_size = args.batch_size;
    options.shuffle_buffer = std::max<uint64_t>(512 / args.partitions, 16);  // per partition
  }
  if (!training) {  // every replica evaluates the whole held-out set
    options.rank = 0;
    options.world_size = 1;
  }
  // Training: rank and world size come from the launcher's environment
  // (RANK/WORLD_SIZE, TF_CONFIG, OMPI_COMM_WORLD_*, JOB_COMPLETION_INDEX);
  // without one this is rank 0 of 1.
  return options;
}

struct Restored {
  SoftmaxModel model;
  Progress progress;
  std::optional<spool::loader::LoaderState> loader;
};

// The latest complete checkpoint (this rank's part of it), or a fresh model
// when there is none. A checkpoint of another world size restores in
// elastic mode only, from the part of rank `rank` mod its world size.
Result<Restored> RestoreOrStart(spool::checkpoint::CheckpointManager& manager, const Args& args, int rank,
                                int world_size) {
  SPOOL_ASSIGN_OR_RETURN(std::optional<int64_t> latest, manager.Latest());
  if (!latest) {
    std::printf("no checkpoint under %s: starting from step 0\n", args.checkpoints.c_str());
    return Restored{SoftmaxModel(args.inputs, args.classes), Progress{}, std::nullopt};
  }
  SPOOL_ASSIGN_OR_RETURN(spool::checkpoint::CheckpointManifest saved, manager.ReadManifest(*latest));
  int source_rank = rank;
  if (saved.world_size != world_size) {
    if (args.partitions == 0) {
      return spool::FailedPreconditionError(
          "checkpoint step " + std::to_string(*latest) + " under " + args.checkpoints + " was saved by " +
          std::to_string(saved.world_size) + " ranks and this job has " + std::to_string(world_size) +
          ": restart with " + std::to_string(saved.world_size) +
          " ranks, or train with --partitions (elastic) to change the world size");
    }
    source_rank = rank % saved.world_size;
    std::printf("elastic restart: checkpoint step %lld was saved by %d ranks, this job has %d; rank %d resumes "
                "from rank %d's part\n",
                static_cast<long long>(*latest), saved.world_size, world_size, rank, source_rank);
  }
  const auto folder = args.workdir / ("restored-rank-" + std::to_string(rank));
  SPOOL_ASSIGN_OR_RETURN(spool::checkpoint::CheckpointManifest manifest,
                         manager.RestoreRank(*latest, source_rank, folder));
  std::ifstream in(folder / "model.bin", std::ios::binary);
  const std::string bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  SPOOL_ASSIGN_OR_RETURN(SoftmaxModel model, SoftmaxModel::Deserialize(bytes));
  Restored restored{std::move(model), Progress{}, std::nullopt};
  restored.progress.step = manifest.step;
  restored.progress.records = std::stoull(manifest.metadata.at("records"));
  restored.progress.digest = std::stoull(manifest.metadata.at("digest"), nullptr, 16);
  SPOOL_ASSIGN_OR_RETURN(restored.loader, spool::loader::LoaderState::Decode(manifest.metadata.at("loader")));
  std::printf("restored checkpoint step %lld (rank %d of %d, %zu files, verified) from %s; loader resumes at %s\n",
              static_cast<long long>(manifest.step), rank, manifest.world_size, manifest.files.size(),
              args.checkpoints.c_str(), manifest.metadata.at("loader").c_str());
  return restored;
}

spool::checkpoint::CheckpointSource Snapshot(const SoftmaxModel& model) {
  spool::checkpoint::CheckpointSource source;
  source.AddBuffer("model.bin", model.Serialize());
  return source;
}

spool::checkpoint::CheckpointMetadata Metadata(const Progress& progress, const spool::loader::DataLoader& loader,
                                               double loss) {
  char digest[32];
  std::snprintf(digest, sizeof digest, "%016llx", static_cast<unsigned long long>(progress.digest));
  return {{"loader", loader.State().Encode()},
          {"records", std::to_string(progress.records)},
          {"digest", digest},
          {"loss", std::to_string(loss)}};
}

Result<double> Evaluate(const SoftmaxModel& model, const Args& args) {
  SPOOL_ASSIGN_OR_RETURN(auto loader, spool::loader::DataLoader::Open(LoaderOptions(args, args.eval, false)));
  uint64_t correct = 0, total = 0;
  while (true) {
    SPOOL_ASSIGN_OR_RETURN(std::optional<spool::loader::Batch> batch, loader->Next());
    if (!batch) break;
    for (const auto& example : batch->examples) {
      std::vector<float> features;
      std::vector<int> labels;
      SPOOL_RETURN_IF_ERROR(ReadExample(example, args, features, labels));
      correct += model.Predict(features) == labels[0];
      ++total;
    }
  }
  return total ? static_cast<double>(correct) / static_cast<double>(total) : 0.0;
}

// 128 + SIGTERM, the code shells and Kubernetes show for a process ended by
// SIGTERM. A preempted run must not exit 0: with restartPolicy OnFailure a
// Job counts exit 0 as the training having completed and starts no
// replacement. A non-zero code gets the pod restarted (or replaced when it
// was evicted), and Kubeflow's restartPolicy ExitCode treats 128-255 as
// retryable, 1-127 as permanent.
constexpr int kPreemptedExitCode = 128 + SIGTERM;

std::string SignalName(int signal_number) {
  if (signal_number == 0) return "a preemption request";
  if (signal_number == SIGTERM) return "SIGTERM";
  return "signal " + std::to_string(signal_number);
}

double SecondsBetween(std::chrono::steady_clock::time_point from, std::chrono::steady_clock::time_point to) {
  return std::chrono::duration<double>(to - from).count();
}

// The step boundary after a preemption notice: save this step ahead of
// everything else, say whether it made the deadline, and give the exit code.
int SaveForPreemption(spool::checkpoint::CheckpointManager& manager, spool::loader::DataLoader& loader,
                      const SoftmaxModel& model, const Progress& progress, double loss, const Args& args) {
  const spool::checkpoint::PreemptionNotice& notice = spool::checkpoint::PreemptionNotice::Get();
  const long long step = static_cast<long long>(progress.step);
  const int rank = loader.worker().rank;
  // The save gets the network, the CPU and the byte budget; the loader's
  // read-ahead would be wasted anyway.
  loader.PausePrefetch(true);
  const auto deadline = notice.deadline();
  const auto started = std::chrono::steady_clock::now();
  Result<spool::checkpoint::CheckpointManifest> saved =
      manager.SaveBeforeDeadline(progress.step, Snapshot(model), Metadata(progress, loader, loss), deadline);
  const auto finished = std::chrono::steady_clock::now();
  if (saved.ok() && rank != 0) {
    // Rank 0 commits the step if every rank saved this same step in time;
    // otherwise the previous checkpoint stays latest for every rank.
    std::printf("preemption: %s received, rank %d wrote its part of checkpoint step %lld in %.3f s, %.3f s before "
                "the deadline; rank 0 commits it; exiting with %d\n",
                SignalName(notice.signal()).c_str(), rank, step, SecondsBetween(started, finished),
                SecondsBetween(finished, deadline), kPreemptedExitCode);
  } else if (saved.ok()) {
    std::printf("preemption: %s received, checkpoint step %lld committed in %.3f s, %.3f s before the deadline "
                "(grace %d s - margin %d s); exiting with %d\n",
                SignalName(notice.signal()).c_str(), step, SecondsBetween(started, finished),
                SecondsBetween(finished, deadline), args.preemption_grace, args.preemption_margin,
                kPreemptedExitCode);
  } else {
    // Nothing half-written is visible: the previous checkpoint stays latest,
    // and the restarted pod resumes from it.
    std::string latest = "unknown";
    if (Result<std::optional<int64_t>> found = manager.Latest(); found.ok()) {
      latest = *found ? "step " + std::to_string(**found) : "none";
    }
    std::printf("preemption: %s received, checkpoint step %lld NOT committed after %.3f s (%s); the latest "
                "committed checkpoint stays %s; exiting with %d\n",
                SignalName(notice.signal()).c_str(), step, SecondsBetween(started, finished),
                saved.status().ToString().c_str(), latest.c_str(), kPreemptedExitCode);
  }
  std::fflush(stdout);
  // The same code either way: the pod is being stopped, and its restart
  // resumes from whatever checkpoint is latest.
  return kPreemptedExitCode;
}

// Returns the process's exit code: 0 when the run completed,
// kPreemptedExitCode after a preemption save.
Result<int> Train(const Args& args) {
  spool::RegisterAllBackends();
  if (args.preemption_grace > 0) {
    // Installed first, so a SIGTERM during the restore is not lost: it is
    // acted on at the first step boundary.
    spool::checkpoint::PreemptionNotice::Install(std::chrono::seconds(args.preemption_grace),
                                                 std::chrono::seconds(args.preemption_margin));
    if (args.preemption_margin >= args.preemption_grace) {
      std::fprintf(stderr,
                   "train_loop: warning: --preemption-margin %d s leaves no time of the %d s grace period to save "
                   "a checkpoint on SIGTERM\n",
                   args.preemption_margin, args.preemption_grace);
    }
  }
  spool::checkpoint::CheckpointOptions checkpoint_options;
  checkpoint_options.save.every_n_steps = args.save_every;
  checkpoint_options.retention.keep_last = 3;
  // The loader knows this process's rank from the launcher's environment;
  // every rank saves its own part of each checkpoint.
  SPOOL_ASSIGN_OR_RETURN(auto loader, spool::loader::DataLoader::Open(LoaderOptions(args, args.data, true)));
  checkpoint_options.rank = loader->worker().rank;
  checkpoint_options.world_size = loader->worker().world_size;
  SPOOL_ASSIGN_OR_RETURN(auto manager,
                         spool::checkpoint::CheckpointManager::Open(args.checkpoints, checkpoint_options));
  // SPOOL_METRICS_PORT / SPOOL_METRICS_FILE: the loader's and the checkpoint
  // manager's metrics for Prometheus (docs/metrics.md); off unless set.
  // Made after them, so it closes first: its last file write still sees them.
  SPOOL_ASSIGN_OR_RETURN(std::unique_ptr<spool::metrics::MetricsExporter> exporter,
                         spool::metrics::MetricsExporter::FromEnvironment());
  SPOOL_ASSIGN_OR_RETURN(Restored state,
                         RestoreOrStart(*manager, args, loader->worker().rank, loader->worker().world_size));
  if (state.loader) SPOOL_RETURN_IF_ERROR(loader->Resume(*state.loader));

  SoftmaxModel& model = state.model;
  Progress& progress = state.progress;
  std::ofstream trace;
  if (!args.trace.empty()) {
    trace.open(args.trace, std::ios::app);
    if (!trace) return spool::InvalidArgumentError("cannot open the trace file " + args.trace);
  }
  double loss_sum = 0;
  int64_t loss_steps = 0;
  double last_loss = 0;
  while (progress.step < args.steps) {
    SPOOL_ASSIGN_OR_RETURN(std::optional<spool::loader::Batch> batch, loader->Next());
    if (!batch) return spool::InternalError("the training loader ended although it runs forever");
    std::vector<float> features;
    std::vector<int> labels;
    for (size_t i = 0; i < batch->records.size(); ++i) {
      SPOOL_RETURN_IF_ERROR(ReadExample(batch->examples[i], args, features, labels));
      progress.See(batch->records[i]);
    }
    if (trace.is_open()) {  // flushed per step: a killed run's trace is whole up to its last step
      char crc[16];
      trace << progress.step + 1;
      for (std::string_view record : batch->records) {
        std::snprintf(crc, sizeof crc, " %08x", spool::crc32c::Value(record));
        trace << crc;
      }
      trace << std::endl;
    }
    // An elastic job's last step of an epoch may leave this rank nothing.
    if (!labels.empty()) last_loss = model.TrainStep(features, labels, args.learning_rate);
    loss_sum += last_loss;
    ++loss_steps;
    ++progress.step;
    if (args.step_delay_ms > 0) std::this_thread::sleep_for(std::chrono::milliseconds(args.step_delay_ms));

    if (progress.step % args.log_every == 0 || progress.step == args.steps) {
      // From the same counters the metrics endpoint exports: how long the
      // loop waited for input, and how long checkpoints held it.
      const spool::loader::LoaderCounters counters = loader->Counters();
      const spool::checkpoint::CheckpointStats checkpoints = manager->Stats();
      std::printf("step %5lld/%lld  epoch %llu  loss %.4f  %8.0f records/s  input wait %4.1f%%  checkpoint blocked "
                  "%.3f s\n",
                  static_cast<long long>(progress.step), static_cast<long long>(args.steps),
                  static_cast<unsigned long long>(batch->epoch), loss_sum / static_cast<double>(loss_steps),
                  counters.records_per_second,
                  counters.seconds > 0 ? 100.0 * counters.wait_seconds / counters.seconds : 0.0,
                  checkpoints.blocked_seconds.sum);
      std::fflush(stdout);
      loss_sum = 0;
      loss_steps = 0;
    }
    // A step boundary: the model and the loader's position agree, so this
    // is the place to act on a preemption notice, before the periodic save.
    if (spool::checkpoint::PreemptionNotice::Get().requested()) {
      return SaveForPreemption(*manager, *loader, model, progress, last_loss, args);
    }
    // Every rank saves the same steps: its model and its loader position are
    // its part; rank 0 commits the step once every part is there.
    if (manager->ShouldSave(progress.step) || progress.step == args.steps) {
      SPOOL_ASSIGN_OR_RETURN(
          spool::checkpoint::AsyncSaveStart start,
          manager->SaveAsync(progress.step, Snapshot(model), Metadata(progress, *loader, last_loss)));
      SPOOL_RETURN_IF_ERROR(start.previous);
      if (progress.step % args.log_every == 0) {
        std::printf("  checkpoint step %lld saving in the background\n", static_cast<long long>(progress.step));
        std::fflush(stdout);
      }
    }
  }
  if (manager->save_in_flight()) SPOOL_RETURN_IF_ERROR(manager->Wait().status());
  const double input_wait_seconds = loader->Counters().wait_seconds;
  loader->Close();

  double accuracy = 0;
  if (!args.eval.empty()) {
    SPOOL_ASSIGN_OR_RETURN(accuracy, Evaluate(model, args));
  }
  char digest[32];
  std::snprintf(digest, sizeof digest, "%016llx", static_cast<unsigned long long>(progress.digest));
  std::printf("done: %lld steps, %llu records trained on, record digest %s, test accuracy %.4f\n",
              static_cast<long long>(progress.step), static_cast<unsigned long long>(progress.records), digest,
              accuracy);
  const spool::checkpoint::CheckpointStats checkpoints = manager->Stats();
  std::printf("time the loop waited: %.3f s for input, %.3f s for %llu checkpoint saves (%s uploaded)\n",
              input_wait_seconds, checkpoints.blocked_seconds.sum,
              static_cast<unsigned long long>(checkpoints.saves),
              spool::FormatBytes(checkpoints.uploaded_bytes).c_str());
  if (!args.summary.empty()) {
    std::ofstream out(args.summary);
    out << "steps=" << progress.step << "\nrecords=" << progress.records << "\ndigest=" << digest
        << "\naccuracy=" << accuracy << "\n";
    if (!out) return spool::InternalError("cannot write the summary to " + args.summary);
  }
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  Args args;
  CLI::App app{"Trains a softmax classifier on TFRecord shards, checkpointing and resuming with spool."};
  app.add_option("--data", args.data, "training shards: a dataset manifest, a glob or a shard URL")->required();
  app.add_option("--eval", args.eval, "held-out shards to report accuracy on");
  app.add_option("--checkpoints", args.checkpoints, "checkpoint root URL (s3://, gs://, a folder)")->required();
  app.add_option("--workdir", args.workdir, "local folder for restored checkpoints");
  app.add_option("--steps", args.steps, "train until this step");
  app.add_option("--save-every", args.save_every, "checkpoint every N steps");
  app.add_option("--log-every", args.log_every, "print progress every N steps");
  app.add_option("--batch-size", args.batch_size);
  app.add_option("--seed", args.seed, "shuffling seed");
  app.add_option("--learning-rate", args.learning_rate);
  app.add_option("--step-delay-ms", args.step_delay_ms, "simulated compute time per step");
  app.add_option("--partitions", args.partitions,
                 "elastic mode: the data order is fixed by this many partitions (a multiple of every world size the "
                 "job may run on) and --batch-size is the global batch over all ranks");
  app.add_option("--trace", args.trace, "append a line per step with the CRC32C of each record of its batch");
  app.add_option("--inputs", args.inputs, "number of input features");
  app.add_option("--classes", args.classes, "number of classes");
  app.add_option("--feature-prefix", args.feature_prefix, "input features are named <prefix>0, <prefix>1, ...");
  app.add_option("--label", args.label, "name of the int64 label feature");
  app.add_option("--summary", args.summary, "also write the final summary to this file");
  app.add_option("--preemption-grace", args.preemption_grace,
                 "seconds between SIGTERM and SIGKILL (the pod's terminationGracePeriodSeconds); on SIGTERM the "
                 "next step is saved before grace - margin and the program exits with 143; 0: no SIGTERM handler")
      ->envname("SPOOL_PREEMPTION_GRACE_SECONDS")
      ->check(CLI::NonNegativeNumber);
  app.add_option("--preemption-margin", args.preemption_margin,
                 "seconds of the grace period kept for exiting after the preemption save")
      ->check(CLI::NonNegativeNumber);
  CLI11_PARSE(app, argc, argv);

  const Result<int> code = Train(args);
  if (!code.ok()) {
    std::fprintf(stderr, "train_loop: %s\n", code.status().ToString().c_str());
    return 1;
  }
  return *code;
}
