// spool whoami URL: which credentials spool would use for URL, and where
// they came from (environment, profile file, web identity, metadata
// server, ...). Never prints a secret.
#include <memory>

#include "cli/commands/access.h"
#include "cli/commands/commands.h"
#include "cli/commands/locations.h"
#include "cli/output.h"

namespace spool::cli {
namespace {

Status RunWhoami(const std::string& url, const GlobalOptions& global) {
  SPOOL_ASSIGN_OR_RETURN(StoreLocation location, Open(url, global));
  StoreAccess access = DescribeStore(location);
  SPOOL_ASSIGN_OR_RETURN(CredentialCheck credentials, CheckCredentials(location));
  if (global.json) {
    PrintLine("{\"url\":" + JsonString(location.url.ToString()) + ",\"store\":" + JsonString(access.kind) +
              ",\"endpoint\":" + JsonString(access.endpoint) + ",\"settings\":" + JsonString(access.settings) +
              ",\"identity\":" + JsonString(credentials.identity) + ",\"source\":" + JsonString(credentials.source) +
              (credentials.expires.empty() ? "" : ",\"expires\":" + JsonString(credentials.expires)) + "}");
    return OkStatus();
  }
  PrintLine("url          " + location.url.ToString());
  PrintLine("store        " + access.kind + (access.endpoint.empty() ? "" : " at " + access.endpoint));
  if (!access.settings.empty()) PrintLine("settings     " + access.settings);
  PrintLine("identity     " + credentials.identity);
  PrintLine("from         " + credentials.source);
  if (!credentials.expires.empty()) PrintLine("expires      " + credentials.expires);
  return OkStatus();
}

}  // namespace

Command AddWhoamiCommand(CLI::App& spool, const GlobalOptions& global) {
  auto url = std::make_shared<std::string>();
  CLI::App* app = spool.add_subcommand("whoami", "Show which credentials would be used for a URL, and where they come from");
  app->add_option("url", *url, "s3://bucket, gs://bucket or a local path")->required();
  app->footer("Example: AWS_PROFILE=dev spool whoami s3://my-bucket\n");
  return {app, [url, &global] { return RunWhoami(*url, global); }};
}

}  // namespace spool::cli
