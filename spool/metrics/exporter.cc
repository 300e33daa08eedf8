#include "spool/metrics/exporter.h"

#include <arpa/inet.h>
#include <microhttpd.h>
#include <netinet/in.h>

#include <algorithm>
#include <cerrno>
#include <charconv>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <utility>

#include "spool/core/env.h"
#include "spool/core/log.h"

namespace spool::metrics {
namespace {

constexpr char kContentType[] = "text/plain; version=0.0.4; charset=utf-8";

// libmicrohttpd's request callback: GET /metrics (or /) answers the
// registry's text; anything else 404 or 405.
MHD_Result Answer(void* registry, MHD_Connection* connection, const char* url, const char* method,
                  const char* /*version*/, const char* /*upload_data*/, size_t* upload_data_size, void** state) {
  // The first call for a request only announces its headers.
  static int announced;
  if (*state == nullptr) {
    *state = &announced;
    return MHD_YES;
  }
  *upload_data_size = 0;
  int status = MHD_HTTP_OK;
  std::string body;
  if (std::strcmp(method, "GET") != 0 && std::strcmp(method, "HEAD") != 0) {
    status = MHD_HTTP_METHOD_NOT_ALLOWED;
    body = "only GET /metrics\n";
  } else if (std::strcmp(url, "/metrics") != 0 && std::strcmp(url, "/") != 0) {
    status = MHD_HTTP_NOT_FOUND;
    body = "spool serves /metrics\n";
  } else {
    body = static_cast<MetricsRegistry*>(registry)->Text();
  }
  MHD_Response* response = MHD_create_response_from_buffer(body.size(), body.data(), MHD_RESPMEM_MUST_COPY);
  if (response == nullptr) return MHD_NO;
  MHD_add_response_header(response, MHD_HTTP_HEADER_CONTENT_TYPE, status == MHD_HTTP_OK ? kContentType : "text/plain");
  const MHD_Result queued = MHD_queue_response(connection, static_cast<unsigned>(status), response);
  MHD_destroy_response(response);
  return queued;
}

// `text` is the value of the variable `name`.
Result<uint64_t> EnvNumber(const char* name, const std::string& text, uint64_t max) {
  uint64_t value = 0;
  const char* end = text.data() + text.size();
  auto [ptr, ec] = std::from_chars(text.data(), end, value);
  if (ec != std::errc() || ptr != end || value > max) {
    return InvalidArgumentError(std::string(name) + "='" + text + "' is not a number from 0 to " +
                                std::to_string(max));
  }
  return value;
}

}  // namespace

MetricsExporter::MetricsExporter(ExporterOptions options)
    : options_(std::move(options)), registry_(options_.registry ? *options_.registry : MetricsRegistry::Global()) {}

Result<std::unique_ptr<MetricsExporter>> MetricsExporter::Start(ExporterOptions options) {
  std::unique_ptr<MetricsExporter> exporter(new MetricsExporter(std::move(options)));
  const ExporterOptions& o = exporter->options_;
  if (o.port) {
    sockaddr_in address{};
    address.sin_family = AF_INET;
    address.sin_port = htons(*o.port);
    if (inet_pton(AF_INET, o.address.c_str(), &address.sin_addr) != 1) {
      return InvalidArgumentError("metrics address '" + o.address + "' is not an IPv4 address; use e.g. 0.0.0.0");
    }
    exporter->daemon_ = MHD_start_daemon(MHD_USE_INTERNAL_POLLING_THREAD | MHD_USE_EPOLL, *o.port, nullptr, nullptr,
                                         &Answer, &exporter->registry_, MHD_OPTION_SOCK_ADDR, &address,
                                         MHD_OPTION_CONNECTION_TIMEOUT, 10u, MHD_OPTION_END);
    if (exporter->daemon_ == nullptr) {
      return UnavailableError("cannot serve metrics on " + o.address + ":" + std::to_string(*o.port) + " (" +
                              std::strerror(errno) + "); set SPOOL_METRICS_PORT to a free port");
    }
    const MHD_DaemonInfo* info = MHD_get_daemon_info(exporter->daemon_, MHD_DAEMON_INFO_BIND_PORT);
    exporter->port_ = info ? info->port : *o.port;
    log::Write(log::Level::kInfo, "metrics", "serving " + exporter->url());
  }
  if (!o.file.empty()) {
    SPOOL_RETURN_IF_ERROR(exporter->WriteFile());
    exporter->file_thread_ = std::thread([raw = exporter.get()] { raw->FileLoop(); });
  }
  return exporter;
}

Result<std::unique_ptr<MetricsExporter>> MetricsExporter::FromEnvironment() {
  const Env env = CurrentEnv();
  ExporterOptions options;
  if (auto text = env.Get("SPOOL_METRICS_PORT")) {
    SPOOL_ASSIGN_OR_RETURN(uint64_t port, EnvNumber("SPOOL_METRICS_PORT", *text, 65535));
    options.port = static_cast<uint16_t>(port);
  }
  if (auto address = env.Get("SPOOL_METRICS_ADDRESS")) options.address = *address;
  if (auto file = env.Get("SPOOL_METRICS_FILE")) options.file = *file;
  if (auto text = env.Get("SPOOL_METRICS_INTERVAL")) {
    SPOOL_ASSIGN_OR_RETURN(uint64_t seconds, EnvNumber("SPOOL_METRICS_INTERVAL", *text, 86400));
    options.interval = std::chrono::seconds(std::max<uint64_t>(seconds, 1));
  }
  if (!options.port && options.file.empty()) return std::unique_ptr<MetricsExporter>();
  return Start(std::move(options));
}

MetricsExporter::~MetricsExporter() { Close(); }

std::string MetricsExporter::url() const {
  if (port_ == 0) return "";
  return "http://" + options_.address + ":" + std::to_string(port_) + "/metrics";
}

Status MetricsExporter::WriteFile() {
  const std::filesystem::path& path = options_.file;
  // The textfile collector may read at any moment: write aside, then rename.
  std::filesystem::path temporary = path;
  temporary += ".tmp";
  {
    std::ofstream out(temporary, std::ios::trunc);
    out << registry_.Text();
    if (!out.flush()) {
      return InternalError("cannot write metrics to " + temporary.string() + " (" + std::strerror(errno) +
                           "); check SPOOL_METRICS_FILE's folder");
    }
  }
  std::error_code error;
  std::filesystem::rename(temporary, path, error);
  if (error) return InternalError("cannot rename " + temporary.string() + " to " + path.string() + ": " + error.message());
  return OkStatus();
}

void MetricsExporter::FileLoop() {
  std::unique_lock lock(mu_);
  while (!wake_.wait_for(lock, options_.interval, [&] { return closing_; })) {
    lock.unlock();
    if (Status written = WriteFile(); !written.ok()) log::Write(log::Level::kInfo, "metrics", written.ToString());
    lock.lock();
  }
}

void MetricsExporter::Close() {
  {
    std::lock_guard lock(mu_);
    if (closing_) return;
    closing_ = true;
  }
  wake_.notify_all();
  if (daemon_ != nullptr) MHD_stop_daemon(std::exchange(daemon_, nullptr));  // joins its thread
  if (file_thread_.joinable()) {
    file_thread_.join();
    WriteFile().IgnoreError();  // the final values
  }
}

}  // namespace spool::metrics
