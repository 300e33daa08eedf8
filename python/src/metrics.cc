// spool.metrics: the process's metrics as Prometheus text, the exporter
// (endpoint and textfile), and the per-object snapshots the loader and the
// checkpoint manager bindings return (RequestsDict, HistogramDict).
#include "metrics.h"

#include <pybind11/stl.h>
#include <pybind11/stl/filesystem.h>

#include <memory>
#include <optional>
#include <string>

#include "bindings.h"
#include "process.h"
#include "spool/metrics/exporter.h"
#include "spool/metrics/registry.h"

namespace py = pybind11;

namespace spool::python {
namespace {

// A running exporter. Fork: a child never stops the parent's server (its
// polling thread is not in the child), it only forgets it.
class Server {
 public:
  Server(std::optional<uint16_t> port, std::string address, std::string file, double interval_seconds) {
    metrics::ExporterOptions options;
    options.port = port;
    options.address = std::move(address);
    options.file = std::move(file);
    options.interval = std::chrono::seconds(std::max<int64_t>(1, static_cast<int64_t>(interval_seconds)));
    py::gil_scoped_release release;
    exporter_ = Unwrap(metrics::MetricsExporter::Start(std::move(options)));
  }
  ~Server() { Close(); }

  int Port() const { return exporter_ ? exporter_->port() : 0; }

  void Close() {
    if (!exporter_) return;
    if (owner_.Forked()) return Abandon(std::move(exporter_));
    std::unique_ptr<metrics::MetricsExporter> exporter = std::move(exporter_);
    py::gil_scoped_release release;
    exporter.reset();
  }

 private:
  ProcessOwner owner_;
  std::unique_ptr<metrics::MetricsExporter> exporter_;
};

}  // namespace

py::dict HistogramDict(const HistogramCounts& histogram) {
  py::dict out;
  out["count"] = histogram.count;
  out["sum"] = histogram.sum;
  py::list buckets;  // (upper bound, cumulative count), +inf last
  uint64_t cumulative = 0;
  for (size_t i = 0; i < histogram.buckets.size(); ++i) {
    cumulative += histogram.buckets[i];
    const double bound = i < kLatencyBuckets.size() ? kLatencyBuckets[i] : std::numeric_limits<double>::infinity();
    buckets.append(py::make_tuple(bound, cumulative));
  }
  out["buckets"] = buckets;
  return out;
}

py::dict RequestsDict(const RequestCounts& counts) {
  py::dict out;
  for (size_t i = 0; i < kRequestOps; ++i) {
    const RequestOpCounts& op = counts.ops[i];
    if (op.requests == 0 && op.retries == 0) continue;
    py::dict d;
    d["requests"] = op.requests;
    d["bytes_sent"] = op.bytes_sent;
    d["bytes_received"] = op.bytes_received;
    d["errors_4xx"] = op.errors_4xx;
    d["errors_5xx"] = op.errors_5xx;
    d["errors_transport"] = op.errors_transport;
    d["stalls"] = op.stalls;
    d["retries"] = op.retries;
    d["throttles"] = op.throttles;
    d["latency_seconds"] = HistogramDict(op.latency);
    d["first_byte_seconds"] = HistogramDict(op.first_byte);
    out[py::str(std::string(RequestOpName(static_cast<RequestOp>(i))))] = d;
  }
  return out;
}

void RegisterMetrics(py::module_& m) {
  m.def("_metrics_text", [] { return metrics::MetricsRegistry::Global().Text(); });
  py::class_<Server>(m, "_MetricsServer")
      .def(py::init<std::optional<uint16_t>, std::string, std::string, double>(), py::arg("port"),
           py::arg("address"), py::arg("file"), py::arg("interval_seconds"))
      .def_property_readonly("port", &Server::Port)
      .def("close", &Server::Close);
}

}  // namespace spool::python
