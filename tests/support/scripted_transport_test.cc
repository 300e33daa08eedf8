// ScriptedTransport delivers each scripted answer as a transport would.
#include "tests/support/scripted_transport.h"

#include <gtest/gtest.h>

#include <string>

namespace spool::test_support {
namespace {

HttpRequest Put(std::string_view url, std::string_view body) {
  HttpRequest request;
  request.method = "PUT";
  request.url = std::string(url);
  request.body = body;
  return request;
}

TEST(ScriptedTransportTest, AnswersInTurnAndRecordsTheRequests) {
  ScriptedTransport::Answer reset = ScriptedTransport::Reply(206, "par");
  reset.failure = UnavailableError("connection reset");
  ScriptedTransport transport(ScriptedTransport::InOrder({
      ScriptedTransport::Reply(200, "payload"),
      ScriptedTransport::Reply(503, "<Error><Code>SlowDown</Code></Error>"),
      ScriptedTransport::NoResponse(DeadlineExceededError("stalled")),
      reset,
  }));
  std::string got;
  StringSink sink(&got);
  Result<HttpResponse> first = transport.Send(Put("http://h/1", "abc"), &sink);
  ASSERT_TRUE(first.ok()) << first.status().ToString();
  EXPECT_EQ(first->status, 200);
  EXPECT_EQ(got, "payload");
  EXPECT_EQ(first->bytes_received, 7u);
  EXPECT_EQ(first->bytes_sent, 3u);

  Result<HttpResponse> second = transport.Send(Put("http://h/2", ""), &sink);
  ASSERT_TRUE(second.ok());
  EXPECT_EQ(second->status, 503);
  EXPECT_EQ(second->error_body, "<Error><Code>SlowDown</Code></Error>");
  EXPECT_EQ(got, "payload");  // an error body never reaches the sink

  EXPECT_EQ(transport.Send(Put("http://h/3", ""), &sink).status().code(), StatusCode::kDeadlineExceeded);
  EXPECT_EQ(got, "payload");

  got.clear();
  EXPECT_EQ(transport.Send(Put("http://h/4", ""), &sink).status().code(), StatusCode::kUnavailable);
  EXPECT_EQ(got, "par");  // delivered before the reset

  Result<HttpResponse> after = transport.Send(Put("http://h/5", ""), nullptr);
  ASSERT_TRUE(after.ok());
  EXPECT_EQ(after->status, 200);  // past the script: 200, no body

  const std::vector<HttpRequest> requests = transport.requests();
  ASSERT_EQ(requests.size(), 5u);
  EXPECT_EQ(requests[0].url, "http://h/1");
  EXPECT_EQ(requests[4].url, "http://h/5");
  EXPECT_TRUE(requests[0].body.empty());  // the caller's memory is not kept
}

}  // namespace
}  // namespace spool::test_support
