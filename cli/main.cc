// spool: move and inspect objects from the terminal.
//
// Exit codes: 0 success, 1 an operation failed (one line on stderr: "spool:
// <what went wrong>"), 2 the command line was wrong (usage on stderr), 3 data
// is corrupt (a CRC or checksum mismatch, a truncated record: DataLoss),
// 130 / 143 interrupted by SIGINT / SIGTERM (one line saying what was left:
// see cli/interrupts.h).
#include <CLI/CLI.hpp>

#include <chrono>
#include <cstdio>
#include <memory>
#include <vector>

#include "cli/commands/commands.h"
#include "cli/global_options.h"
#include "cli/interrupts.h"
#include "cli/output.h"
#include "cli/stats.h"
#include "spool/core/version.h"
#include "spool/metrics/exporter.h"
#include "spool/register_backends.h"

namespace {

constexpr int kExitError = 1;
constexpr int kExitUsage = 2;
constexpr int kExitCorrupt = 3;

void AddGlobalOptions(CLI::App& app, spool::cli::GlobalOptions& global) {
  app.add_option("--endpoint-url", global.endpoint_url, "Service endpoint (MinIO, Ceph RGW, a GCS emulator, ...)");
  app.add_option("--region", global.region, "S3 region");
  app.add_option("--profile", global.profile, "Credentials profile (~/.aws/credentials)");
  app.add_option("--ca-bundle", global.ca_bundle, "CA certificates to verify TLS with");
  app.add_flag("--no-sign-request", global.no_sign_request, "Send requests anonymously");
  app.add_flag("--path-style", global.path_style, "S3 path-style addressing (http://host/bucket/key)");
  app.add_flag("-q,--quiet", global.quiet, "Print nothing but errors");
  app.add_flag("--json", global.json, "Machine-readable output: one JSON object per line");
  app.add_flag("--stats", global.stats,
               "When the command ends, print what its requests did on stderr (requests, bytes, retries, "
               "throttles, errors and latency per operation; JSON with --json)");
}

// The command's request counters in the process's metrics (what
// SPOOL_METRICS_PORT and SPOOL_METRICS_FILE export), as owner="cli".
spool::metrics::MetricsRegistry::Registration RegisterCliMetrics(const spool::cli::GlobalOptions& global) {
  return spool::metrics::MetricsRegistry::Global().Add(
      [counters = global.counters](spool::metrics::MetricsWriter& writer) {
        spool::metrics::WriteRequestMetrics(writer, counters->Snapshot(), {{"owner", "cli"}});
      });
}

}  // namespace

int main(int argc, char** argv) {
  spool::RegisterAllBackends();
  CLI::App app{"spool: move training data and checkpoints between jobs and object storage", "spool"};
  app.set_version_flag("--version", std::string("spool ") + spool::VersionString());
  app.require_subcommand(1);
  app.fallthrough();  // global flags may follow the subcommand too
  spool::cli::GlobalOptions global;
  AddGlobalOptions(app, global);
  const std::vector<spool::cli::Command> commands = {
      spool::cli::AddLsCommand(app, global),       spool::cli::AddStatCommand(app, global),
      spool::cli::AddCatCommand(app, global),      spool::cli::AddCpCommand(app, global),
      spool::cli::AddRmCommand(app, global),       spool::cli::AddMbCommand(app, global),
      spool::cli::AddConvertCommand(app, global),  spool::cli::AddRecordsCommand(app, global),
      spool::cli::AddCkptCommand(app, global),     spool::cli::AddSyncCommand(app, global),
      spool::cli::AddWhoamiCommand(app, global),   spool::cli::AddDoctorCommand(app, global),
      spool::cli::AddGcUploadsCommand(app, global)};
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& error) {
    return app.exit(error) == 0 ? 0 : kExitUsage;
  }
  // Opt-in export (SPOOL_METRICS_PORT, SPOOL_METRICS_FILE): the file gets
  // the command's final counts when the exporter closes at exit.
  auto metrics_registration = RegisterCliMetrics(global);
  auto exporter = spool::metrics::MetricsExporter::FromEnvironment();
  if (!exporter.ok()) {
    spool::cli::PrintError(exporter.status());
    return kExitUsage;
  }
  if (*exporter && (*exporter)->options().port == 0) {
    // SPOOL_METRICS_PORT=0 asked for any free port: the only way to learn which.
    std::fprintf(stderr, "spool: serving metrics on %s\n", (*exporter)->url().c_str());
  }
  for (const spool::cli::Command& command : commands) {
    if (!command.app->parsed()) continue;
    spool::Status status;
    int interrupted = 0;
    const auto started = std::chrono::steady_clock::now();
    {
      spool::cli::Interrupts interrupts;
      spool::CancelScope scope(interrupts.token());
      status = command.run();
      interrupted = interrupts.signal();
    }
    if (global.stats) {
      std::fflush(stdout);
      spool::cli::PrintStats(global.counters->Snapshot(), std::chrono::steady_clock::now() - started, global.json);
    }
    if (interrupted != 0) {
      // The command stopped early; its status says what it left behind.
      std::string what = status.ok() ? "the command had finished" : status.message();
      spool::cli::PrintError(std::string("interrupted by ") + spool::cli::SignalName(interrupted) + ": " + what);
      return 128 + interrupted;
    }
    if (std::fflush(stdout) != 0 && status.ok()) status = spool::UnavailableError("writing to standard output failed");
    if (!status.ok()) {
      spool::cli::PrintError(status);
      return status.code() == spool::StatusCode::kDataLoss ? kExitCorrupt : kExitError;
    }
    return 0;
  }
  return kExitUsage;
}
