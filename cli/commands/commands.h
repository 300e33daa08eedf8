// The object subcommands of spool. Each Add*Command registers its CLI11
// subcommand under `spool` and returns what to run when it was chosen; the
// options it parses live as long as the returned Command.
#pragma once

#include <CLI/CLI.hpp>

#include <functional>

#include "cli/global_options.h"
#include "spool/core/status.h"

namespace spool::cli {

struct Command {
  CLI::App* app = nullptr;
  std::function<Status()> run;
};

Command AddLsCommand(CLI::App& spool, const GlobalOptions& global);
Command AddStatCommand(CLI::App& spool, const GlobalOptions& global);
Command AddCatCommand(CLI::App& spool, const GlobalOptions& global);
Command AddCpCommand(CLI::App& spool, const GlobalOptions& global);
Command AddRmCommand(CLI::App& spool, const GlobalOptions& global);
Command AddMbCommand(CLI::App& spool, const GlobalOptions& global);
Command AddConvertCommand(CLI::App& spool, const GlobalOptions& global);
Command AddRecordsCommand(CLI::App& spool, const GlobalOptions& global);
Command AddCkptCommand(CLI::App& spool, const GlobalOptions& global);
Command AddSyncCommand(CLI::App& spool, const GlobalOptions& global);
Command AddWhoamiCommand(CLI::App& spool, const GlobalOptions& global);
Command AddDoctorCommand(CLI::App& spool, const GlobalOptions& global);
Command AddGcUploadsCommand(CLI::App& spool, const GlobalOptions& global);
Command AddCacheCommand(CLI::App& spool, const GlobalOptions& global);

}  // namespace spool::cli
