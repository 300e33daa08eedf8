#include "spool/core/http/metered_transport.h"

#include <chrono>
#include <optional>

namespace spool {
namespace {

using Clock = std::chrono::steady_clock;

// Passes the body through and notes when the headers came.
class TimingSink : public ResponseSink {
 public:
  explicit TimingSink(ResponseSink* inner) : inner_(inner) {}
  Status OnHeaders(int status, const HttpHeaders& headers) override {
    headers_at_ = Clock::now();
    return inner_ ? inner_->OnHeaders(status, headers) : OkStatus();
  }
  Status Write(std::string_view data) override { return inner_ ? inner_->Write(data) : OkStatus(); }
  std::optional<Clock::time_point> headers_at() const { return headers_at_; }

 private:
  ResponseSink* inner_;
  std::optional<Clock::time_point> headers_at_;
};

class MeteredTransport : public HttpTransport {
 public:
  MeteredTransport(std::shared_ptr<HttpTransport> inner, std::shared_ptr<RequestCounters> counters,
                   RequestClassifier classify)
      : inner_(std::move(inner)), counters_(std::move(counters)), classify_(std::move(classify)) {}

  Result<HttpResponse> Send(const HttpRequest& request, ResponseSink* sink) override {
    RequestExchange exchange;
    exchange.op = classify_ ? classify_(request) : RequestOp::kOther;
    TimingSink timing(sink);
    const Clock::time_point start = Clock::now();
    Result<HttpResponse> response = inner_->Send(request, &timing);
    const Clock::time_point end = Clock::now();
    exchange.latency = end - start;
    exchange.first_byte = timing.headers_at().value_or(end) - start;
    if (response.ok()) {
      exchange.http_status = response->status;
      exchange.bytes_sent = response->bytes_sent;
      exchange.bytes_received = response->bytes_received;
    } else {
      exchange.transport = response.status();
    }
    counters_->CountExchange(exchange);
    return response;
  }

 private:
  std::shared_ptr<HttpTransport> inner_;
  std::shared_ptr<RequestCounters> counters_;
  RequestClassifier classify_;
};

// The parameter's "name[=value]" in the query of `url`, if present.
std::optional<std::string_view> FindParameter(std::string_view url, std::string_view name) {
  const size_t question = url.find('?');
  if (question == std::string_view::npos) return std::nullopt;
  std::string_view rest = url.substr(question + 1);
  while (!rest.empty()) {
    const size_t amp = rest.find('&');
    const std::string_view item = rest.substr(0, amp);
    rest = amp == std::string_view::npos ? std::string_view() : rest.substr(amp + 1);
    const size_t eq = item.find('=');
    if (item.substr(0, eq) == name) return eq == std::string_view::npos ? std::string_view() : item.substr(eq + 1);
  }
  return std::nullopt;
}

}  // namespace

bool HasQueryParameter(std::string_view url, std::string_view name) { return FindParameter(url, name).has_value(); }

std::string_view QueryParameter(std::string_view url, std::string_view name) {
  return FindParameter(url, name).value_or(std::string_view());
}

std::shared_ptr<HttpTransport> MeterTransport(std::shared_ptr<HttpTransport> inner,
                                              std::shared_ptr<RequestCounters> counters, RequestClassifier classify) {
  if (!counters) return inner;
  return std::make_shared<MeteredTransport>(std::move(inner), std::move(counters), std::move(classify));
}

}  // namespace spool
