// spool doctor URL: checks, step by step, that spool can work with URL:
// configuration, endpoint reachability, clock skew against the server's
// Date header, credentials, listing, and a tiny write, read back and
// delete under URL. Prints a verdict per step; exits 1 if any step failed.
#include <time.h>
#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <memory>

#include "cli/commands/access.h"
#include "cli/commands/commands.h"
#include "cli/commands/locations.h"
#include "cli/output.h"
#include "spool/core/http/transport.h"

namespace spool::cli {
namespace {

// S3 refuses requests signed more than 15 minutes off; tokens have similar margins.
constexpr auto kSkewFails = std::chrono::minutes(15);
constexpr auto kSkewWarns = std::chrono::seconds(60);

class Report {
 public:
  explicit Report(const GlobalOptions& global) : global_(global) {}

  void Step(std::string_view name, std::string_view verdict, const std::string& detail) {
    if (verdict == "FAIL") ++failed_;
    if (global_.json) {
      PrintLine("{\"step\":" + JsonString(name) + ",\"verdict\":" + JsonString(verdict) +
                ",\"detail\":" + JsonString(detail) + "}");
      return;
    }
    char head[48];
    std::snprintf(head, sizeof(head), "%-12.*s %-5.*s ", static_cast<int>(name.size()), name.data(),
                  static_cast<int>(verdict.size()), verdict.data());
    PrintLine(std::string(head) + detail);
  }
  void Ok(std::string_view name, const std::string& detail) { Step(name, "ok", detail); }
  void Fail(std::string_view name, const Status& status) { Step(name, "FAIL", status.message()); }
  void Skip(std::string_view name, const std::string& why) { Step(name, "skip", why); }
  int failed() const { return failed_; }

 private:
  const GlobalOptions& global_;
  int failed_ = 0;
};

// "Sun, 22 Nov 2026 02:18:49 GMT" -> time point.
std::optional<std::chrono::system_clock::time_point> ParseHttpDate(const std::string& text) {
  std::tm tm{};
  const char* end = ::strptime(text.c_str(), "%a, %d %b %Y %H:%M:%S GMT", &tm);
  if (end == nullptr) return std::nullopt;
  return std::chrono::system_clock::from_time_t(::timegm(&tm));
}

void CheckEndpoint(const StoreAccess& access, const GlobalOptions& global, Report& report) {
  HttpOptions http;
  http.connect_timeout = std::chrono::seconds(5);
  http.total_timeout = std::chrono::seconds(15);
  http.ca_bundle = global.ca_bundle;
  HttpRequest request;
  request.method = "HEAD";
  request.url = access.endpoint + "/";
  auto started = std::chrono::steady_clock::now();
  Result<HttpResponse> response = MakeCurlTransport(http)->Send(request, nullptr);
  auto elapsed = std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::steady_clock::now() - started);
  if (!response.ok()) {
    report.Fail("endpoint", response.status().WithContext(access.endpoint + " is not reachable (check the URL, "
                                                         "--endpoint-url, proxies and firewalls)"));
    report.Skip("clock", "needs the endpoint");
    return;
  }
  report.Ok("endpoint", access.endpoint + " answered HTTP " + std::to_string(response->status) + " in " +
                            std::to_string(elapsed.count()) + " ms");
  std::optional<std::string> date = response->headers.Get("Date");
  auto server_time = date ? ParseHttpDate(*date) : std::nullopt;
  if (!server_time) {
    report.Skip("clock", "the server sent no Date header");
    return;
  }
  auto skew = std::chrono::duration_cast<std::chrono::seconds>(std::chrono::system_clock::now() - *server_time);
  auto magnitude = skew < std::chrono::seconds(0) ? -skew : skew;
  std::string detail = "this machine is " + std::to_string(magnitude.count()) + " s " +
                       (skew < std::chrono::seconds(0) ? "behind" : "ahead of") + " the server";
  if (magnitude >= kSkewFails) {
    report.Fail("clock", FailedPreconditionError(detail + "; signed requests will be refused: sync the clock (NTP)"));
  } else if (magnitude >= kSkewWarns) {
    report.Step("clock", "WARN", detail + "; sync the clock (NTP) before it grows");
  } else {
    report.Ok("clock", detail);
  }
}

void CheckReadWrite(const StoreLocation& location, Report& report) {
  ObjectStore& store = *location.store;
  ListOptions list;
  list.prefix = FolderPrefix(location.key);
  list.max_keys = 1;
  if (Result<ListPage> page = store.List(list); page.ok()) {
    report.Ok("list", "listed " + store.Describe(list.prefix));
  } else {
    report.Fail("list", page.status());
  }
  const std::string key = JoinKey(location.key, ".spool-doctor-" + std::to_string(::getpid()) + "-" +
                                                    std::to_string(std::chrono::system_clock::now().time_since_epoch().count()));
  const std::string payload = "spool doctor probe: safe to delete\n";
  if (Result<ObjectInfo> written = WriteAll(store, key, payload); !written.ok()) {
    report.Fail("write", written.status());
    report.Skip("read", "needs the write");
    report.Skip("delete", "needs the write");
    return;
  }
  report.Ok("write", "wrote " + std::to_string(payload.size()) + " bytes to " + store.Describe(key));
  Result<std::string> read = ReadAll(store, key);
  if (!read.ok()) {
    report.Fail("read", read.status());
  } else if (*read != payload) {
    report.Fail("read", DataLossError(store.Describe(key) + " read back different bytes than were written"));
  } else {
    report.Ok("read", "read the same bytes back");
  }
  Status deleted = store.Delete(key);
  if (deleted.ok() && store.Stat(key).status().code() != StatusCode::kNotFound) {
    deleted = FailedPreconditionError(store.Describe(key) + " is still there after a successful delete");
  }
  if (deleted.ok()) {
    report.Ok("delete", "deleted the probe object");
  } else {
    report.Fail("delete", deleted);
  }
}

Status RunDoctor(const std::string& url, const GlobalOptions& global) {
  Report report(global);
  Result<StoreLocation> location = Open(url, global);
  if (!location.ok()) {
    report.Fail("config", location.status());
    return FailedPreconditionError("doctor: 1 step failed");
  }
  StoreAccess access = DescribeStore(*location);
  report.Ok("config", access.kind + (access.endpoint.empty() ? "" : " at " + access.endpoint) +
                          (access.settings.empty() ? "" : "; " + access.settings));
  if (access.endpoint.empty()) {
    report.Skip("endpoint", "local files");
    report.Skip("clock", "local files");
  } else {
    CheckEndpoint(access, global, report);
  }
  Result<CredentialCheck> credentials = CheckCredentials(*location);
  if (credentials.ok()) {
    report.Ok("credentials", credentials->identity + " from " + credentials->source);
  } else {
    report.Fail("credentials", credentials.status());
  }
  CheckReadWrite(*location, report);
  if (report.failed() > 0) {
    return FailedPreconditionError("doctor: " + std::to_string(report.failed()) + " step" +
                                   (report.failed() == 1 ? "" : "s") + " failed for " + url);
  }
  if (!global.json && !global.quiet) PrintLine("verdict      spool can read and write " + location->url.ToString());
  return OkStatus();
}

}  // namespace

Command AddDoctorCommand(CLI::App& spool, const GlobalOptions& global) {
  auto url = std::make_shared<std::string>();
  CLI::App* app = spool.add_subcommand(
      "doctor", "Check endpoint, clock, credentials and a tiny write/read/delete for a URL");
  app->add_option("url", *url, "A bucket or folder spool may write a small probe object into")->required();
  app->footer("Example: spool doctor s3://my-bucket/scratch/\n");
  return {app, [url, &global] { return RunDoctor(*url, global); }};
}

}  // namespace spool::cli
