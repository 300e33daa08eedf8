#include "spool/core/status.h"

#include <gtest/gtest.h>

#include <memory>
#include <string>

namespace spool {
namespace {

TEST(StatusTest, DefaultIsOk) {
  Status status;
  EXPECT_TRUE(status.ok());
  EXPECT_EQ(status.code(), StatusCode::kOk);
  EXPECT_EQ(status.ToString(), "OK");
  EXPECT_EQ(OkStatus(), Status());
}

TEST(StatusTest, FactoriesSetCodeAndMessage) {
  struct Case {
    Status status;
    StatusCode code;
    std::string_view name;
  };
  const Case cases[] = {
      {InvalidArgumentError("m"), StatusCode::kInvalidArgument, "InvalidArgument"},
      {NotFoundError("m"), StatusCode::kNotFound, "NotFound"},
      {AlreadyExistsError("m"), StatusCode::kAlreadyExists, "AlreadyExists"},
      {PermissionDeniedError("m"), StatusCode::kPermissionDenied, "PermissionDenied"},
      {UnauthenticatedError("m"), StatusCode::kUnauthenticated, "Unauthenticated"},
      {FailedPreconditionError("m"), StatusCode::kFailedPrecondition, "FailedPrecondition"},
      {OutOfRangeError("m"), StatusCode::kOutOfRange, "OutOfRange"},
      {UnavailableError("m"), StatusCode::kUnavailable, "Unavailable"},
      {DeadlineExceededError("m"), StatusCode::kDeadlineExceeded, "DeadlineExceeded"},
      {DataLossError("m"), StatusCode::kDataLoss, "DataLoss"},
      {CancelledError("m"), StatusCode::kCancelled, "Cancelled"},
      {InternalError("m"), StatusCode::kInternal, "Internal"},
      {UnimplementedError("m"), StatusCode::kUnimplemented, "Unimplemented"},
      {ResourceExhaustedError("m"), StatusCode::kResourceExhausted, "ResourceExhausted"},
  };
  for (const Case& c : cases) {
    EXPECT_FALSE(c.status.ok());
    EXPECT_EQ(c.status.code(), c.code);
    EXPECT_EQ(c.status.message(), "m");
    EXPECT_EQ(StatusCodeName(c.code), c.name);
    EXPECT_EQ(c.status.ToString(), std::string(c.name) + ": m");
  }
}

TEST(StatusTest, RemoteErrorAppearsInToString) {
  Status status = NotFoundError("s3://b/k does not exist")
                      .WithRemote({.http_status = 404, .service_code = "NoSuchKey", .request_id = "abc"});
  EXPECT_EQ(status.remote().http_status, 404);
  EXPECT_EQ(status.remote().service_code, "NoSuchKey");
  EXPECT_EQ(status.ToString(), "NotFound: s3://b/k does not exist [HTTP 404 NoSuchKey request id abc]");

  Status only_http = UnavailableError("busy");
  only_http.WithRemote({.http_status = 503, .service_code = "", .request_id = ""});
  EXPECT_EQ(only_http.ToString(), "Unavailable: busy [HTTP 503]");
}

TEST(StatusTest, WithContextPrefixesErrorsAndKeepsOk) {
  Status status = DataLossError("bad crc").WithRemote({.http_status = 200, .service_code = "", .request_id = ""});
  Status with = status.WithContext("shard-00001");
  EXPECT_EQ(with.code(), StatusCode::kDataLoss);
  EXPECT_EQ(with.message(), "shard-00001: bad crc");
  EXPECT_EQ(with.remote().http_status, 200);
  EXPECT_TRUE(OkStatus().WithContext("ignored").ok());
  EXPECT_EQ(OkStatus().WithContext("ignored").message(), "");
}

TEST(StatusTest, EqualityComparesCodeAndMessage) {
  EXPECT_EQ(NotFoundError("a"), NotFoundError("a"));
  EXPECT_NE(NotFoundError("a"), NotFoundError("b"));
  EXPECT_NE(NotFoundError("a"), InternalError("a"));
}

TEST(ResultTest, HoldsValueOrStatus) {
  Result<int> good = 42;
  ASSERT_TRUE(good.ok());
  EXPECT_TRUE(good.status().ok());
  EXPECT_EQ(*good, 42);
  EXPECT_EQ(good.value_or(7), 42);

  Result<int> bad = NotFoundError("gone");
  ASSERT_FALSE(bad.ok());
  EXPECT_EQ(bad.status().code(), StatusCode::kNotFound);
  EXPECT_EQ(bad.value_or(7), 7);
}

TEST(ResultTest, MoveOnlyValues) {
  Result<std::unique_ptr<int>> r = std::make_unique<int>(5);
  ASSERT_TRUE(r.ok());
  std::unique_ptr<int> taken = std::move(r).value();
  EXPECT_EQ(*taken, 5);
}

TEST(ResultTest, ArrowAccessesMembers) {
  Result<std::string> r = std::string("abc");
  EXPECT_EQ(r->size(), 3u);
}

Status FailIf(bool fail) { return fail ? InvalidArgumentError("asked to fail") : OkStatus(); }

Status ReturnIfErrorUser(bool fail, int* reached) {
  SPOOL_RETURN_IF_ERROR(FailIf(fail));
  *reached = 1;
  return OkStatus();
}

TEST(MacrosTest, ReturnIfError) {
  int reached = 0;
  EXPECT_EQ(ReturnIfErrorUser(true, &reached).code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(reached, 0);
  EXPECT_TRUE(ReturnIfErrorUser(false, &reached).ok());
  EXPECT_EQ(reached, 1);
}

Result<std::unique_ptr<int>> MakeValue(bool fail) {
  if (fail) return OutOfRangeError("no value");
  return std::make_unique<int>(9);
}

Result<int> AssignOrReturnUser(bool fail) {
  SPOOL_ASSIGN_OR_RETURN(std::unique_ptr<int> value, MakeValue(fail));
  // Twice in one function: the macro's hidden names must not clash.
  SPOOL_ASSIGN_OR_RETURN(auto second, MakeValue(fail));
  return *value + *second;
}

TEST(MacrosTest, AssignOrReturn) {
  Result<int> good = AssignOrReturnUser(false);
  ASSERT_TRUE(good.ok());
  EXPECT_EQ(*good, 18);
  Result<int> bad = AssignOrReturnUser(true);
  EXPECT_EQ(bad.status().code(), StatusCode::kOutOfRange);
  EXPECT_EQ(bad.status().message(), "no value");
}

}  // namespace
}  // namespace spool
