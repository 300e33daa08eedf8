// MetricsExporter: serves the metrics registry (registry.h) for Prometheus
// and writes it to a file for the node exporter's textfile collector.
//
//   SPOOL_METRICS_PORT=9464     serve http://<address>:9464/metrics (0: any free port)
//   SPOOL_METRICS_ADDRESS=...   the address to listen on (default 0.0.0.0,
//                               what a pod's scrape needs; 127.0.0.1 keeps it local)
//   SPOOL_METRICS_FILE=path     write the same text to `path` every
//                               SPOOL_METRICS_INTERVAL seconds (default 15)
//                               and at exit, atomically (temporary file + rename)
//
// Opt-in: nothing listens and nothing is written unless asked. The CLI and
// samples/train_loop call FromEnvironment() at start; a program of its own
// does the same, or builds one with explicit options.
//
// Lifetime and threads: the HTTP server (libmicrohttpd, its own polling
// thread) answers each GET by collecting the registry on that thread; the
// file is written by a thread of the exporter's own. Close() (or the
// destructor) stops both and waits for them, then writes the file a last
// time; nothing of the exporter runs after it returns. Not copyable.
#pragma once

#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <filesystem>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <thread>

#include "spool/core/status.h"
#include "spool/metrics/registry.h"

struct MHD_Daemon;

namespace spool::metrics {

struct ExporterOptions {
  std::optional<uint16_t> port;     // serve /metrics; 0: any free port
  std::string address = "0.0.0.0";  // IPv4 address to listen on
  std::filesystem::path file;       // textfile output; empty: none
  std::chrono::seconds interval{15};
  MetricsRegistry* registry = nullptr;  // default: MetricsRegistry::Global()
};

class MetricsExporter {
 public:
  // Starts serving and writing. InvalidArgument for a bad address;
  // Unavailable naming the port when it cannot be bound.
  static Result<std::unique_ptr<MetricsExporter>> Start(ExporterOptions options);
  // From SPOOL_METRICS_PORT / _ADDRESS / _FILE / _INTERVAL; nullptr when
  // neither a port nor a file is set. InvalidArgument naming the variable
  // for a value that is not a number.
  static Result<std::unique_ptr<MetricsExporter>> FromEnvironment();
  ~MetricsExporter();
  MetricsExporter(const MetricsExporter&) = delete;
  MetricsExporter& operator=(const MetricsExporter&) = delete;

  // The port served (the one chosen, when 0 was asked); 0 when not serving.
  uint16_t port() const { return port_; }
  // What it was started with (options().port == 0: the port was chosen).
  const ExporterOptions& options() const { return options_; }
  // "http://<address>:<port>/metrics"; empty when not serving.
  std::string url() const;
  // Writes the file now (also done every interval and at Close).
  Status WriteFile();
  void Close();

 private:
  explicit MetricsExporter(ExporterOptions options);
  void FileLoop();

  const ExporterOptions options_;
  MetricsRegistry& registry_;
  MHD_Daemon* daemon_ = nullptr;
  uint16_t port_ = 0;
  std::mutex mu_;
  std::condition_variable wake_;
  bool closing_ = false;
  std::thread file_thread_;
};

}  // namespace spool::metrics
