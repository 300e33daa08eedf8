// spool: move and inspect objects from the terminal.
#include <CLI/CLI.hpp>

#include "spool/register_backends.h"

int main(int argc, char** argv) {
  spool::RegisterAllBackends();
  CLI::App app{"spool: move training data and checkpoints between jobs and object storage"};
  app.set_version_flag("--version", std::string("spool ") + SPOOL_VERSION_STRING);
  app.require_subcommand(0, 1);
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    return app.exit(e) == 0 ? 0 : 2;
  }
  return 0;
}
