#include "tests/support/scripted_transport.h"

#include <utility>

namespace spool::test_support {

ScriptedTransport::ScriptedTransport(Handler handler) : handler_(std::move(handler)) {}

ScriptedTransport::Answer ScriptedTransport::Reply(int status, std::string body) {
  Answer answer;
  answer.status = status;
  answer.body = std::move(body);
  return answer;
}

ScriptedTransport::Answer ScriptedTransport::NoResponse(Status failure) {
  Answer answer;
  answer.status = 0;
  answer.failure = std::move(failure);
  return answer;
}

ScriptedTransport::Handler ScriptedTransport::InOrder(std::vector<Answer> answers) {
  // Called under the transport's lock: the position needs no guard of its own.
  auto next = std::make_shared<size_t>(0);
  return [answers = std::move(answers), next](const HttpRequest&) {
    return *next < answers.size() ? answers[(*next)++] : Answer{};
  };
}

Result<HttpResponse> ScriptedTransport::Send(const HttpRequest& request, ResponseSink* sink) {
  Answer answer;
  {
    std::lock_guard lock(mu_);
    requests_.push_back(request);
    requests_.back().body = {};
    answer = handler_(request);
  }
  if (answer.status == 0) return answer.failure.ok() ? UnavailableError("scripted: no response") : answer.failure;
  HttpResponse response;
  response.status = answer.status;
  response.headers = answer.headers;
  response.bytes_sent = request.body.size();
  if (response.ok()) {
    if (sink) {
      SPOOL_RETURN_IF_ERROR(sink->OnHeaders(response.status, response.headers));
      if (!answer.body.empty()) SPOOL_RETURN_IF_ERROR(sink->Write(answer.body));
    }
    response.bytes_received = answer.body.size();
  } else {
    response.error_body = answer.body;
  }
  if (!answer.failure.ok()) return answer.failure;
  return response;
}

std::vector<HttpRequest> ScriptedTransport::requests() {
  std::lock_guard lock(mu_);
  return requests_;
}

}  // namespace spool::test_support
