// An HttpTransport that answers from a script instead of a server, for tests
// of what a client sends and how it handles each answer (retries, resumed
// reads, error mapping, request counting).
//
// Thread-safe: requests are recorded and the handler is called under one
// lock, so a handler may keep state (count attempts, answer in turn)
// without its own.
#pragma once

#include <functional>
#include <memory>
#include <mutex>
#include <vector>

#include "spool/core/http/transport.h"
#include "spool/core/status.h"

namespace spool::test_support {

class ScriptedTransport : public HttpTransport {
 public:
  struct Answer {
    // 0: no response at all, `failure` is returned at once (a refused
    // connection, a timeout before the headers).
    int status = 200;
    HttpHeaders headers;
    // A 2xx body goes to the sink; any other is the response's error_body.
    std::string body;
    // A transport error returned after the headers and body went to the
    // sink (a connection reset mid-body); with status 0, the error alone.
    Status failure;
  };
  using Handler = std::function<Answer(const HttpRequest&)>;
  // An answer with `status` and `body`, and one that is no response at all.
  static Answer Reply(int status, std::string body = "");
  static Answer NoResponse(Status failure);

  explicit ScriptedTransport(Handler handler);

  // A handler that answers the requests in turn with `answers`, and any
  // after the last with 200 and no body.
  static Handler InOrder(std::vector<Answer> answers);

  // Records the request, asks the handler, and delivers its answer as a
  // transport would: bytes_sent is the size of request.body (a body_source
  // is not read), bytes_received the size of a 2xx body.
  Result<HttpResponse> Send(const HttpRequest& request, ResponseSink* sink) override;

  // The requests sent so far, in order, without their bodies (a request's
  // body is the caller's memory, gone after Send).
  std::vector<HttpRequest> requests();

 private:
  Handler handler_;
  std::mutex mu_;
  std::vector<HttpRequest> requests_;
};

}  // namespace spool::test_support
