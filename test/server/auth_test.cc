// rogd's token check on hand-made call metadata, and its rule for listening
// beyond loopback (server/auth.h). The same against a real rogd, with TLS:
// test/integration/security_test.cc.
#include "server/auth.h"

#include <map>
#include <memory>
#include <sstream>
#include <string>

#include "absl/strings/match.h"
#include "catch2/catch.hpp"
#include "spdlog/sinks/ostream_sink.h"
#include "spdlog/spdlog.h"

namespace rog {
namespace {

using Metadata = std::multimap<grpc::string_ref, grpc::string_ref>;

const std::string kWorker = "w0rker-t0ken-0123456789abcdef";
const std::string kAdmin = "adm1n-t0ken-0123456789abcdef00";

grpc::StatusCode CodeFor(const TokenAuth& auth, const std::string& value, Caller caller) {
  Metadata md;
  md.emplace("authorization", value);
  return auth.Check(md, caller, "test").error_code();
}

TEST_CASE("without tokens every call passes", "[auth]") {
  TokenAuth none("", "");
  CHECK_FALSE(none.enabled());
  CHECK(none.Check(Metadata(), Caller::kWorker, "test").ok());
  CHECK(none.Check(Metadata(), Caller::kAdmin, "test").ok());
}

TEST_CASE("each role needs its own token", "[auth]") {
  TokenAuth auth(kWorker, kAdmin);
  REQUIRE(auth.enabled());
  CHECK(CodeFor(auth, "Bearer " + kWorker, Caller::kWorker) == grpc::StatusCode::OK);
  CHECK(CodeFor(auth, "Bearer " + kAdmin, Caller::kAdmin) == grpc::StatusCode::OK);
  CHECK(CodeFor(auth, "bearer " + kAdmin, Caller::kAdmin) == grpc::StatusCode::OK);
  // The other role's token: known, but not allowed here.
  CHECK(CodeFor(auth, "Bearer " + kWorker, Caller::kAdmin) == grpc::StatusCode::PERMISSION_DENIED);
  CHECK(CodeFor(auth, "Bearer " + kAdmin, Caller::kWorker) == grpc::StatusCode::PERMISSION_DENIED);
  // Unknown tokens, near misses, other schemes: not authenticated.
  for (const std::string& bad :
       {std::string("Bearer nope-nope-nope-nope"), "Bearer " + kWorker + "x",
        "Bearer " + kWorker.substr(1), "Basic " + kAdmin, kAdmin, std::string("Bearer "),
        std::string("")}) {
    CAPTURE(bad);
    CHECK(CodeFor(auth, bad, Caller::kWorker) == grpc::StatusCode::UNAUTHENTICATED);
    CHECK(CodeFor(auth, bad, Caller::kAdmin) == grpc::StatusCode::UNAUTHENTICATED);
  }
  const grpc::Status missing = auth.Check(Metadata(), Caller::kAdmin, "test");
  CHECK(missing.error_code() == grpc::StatusCode::UNAUTHENTICATED);
  CHECK(absl::StrContains(missing.error_message(), "no token"));
  CHECK(absl::StrContains(missing.error_message(), "--token_file"));
}

TEST_CASE("refusals say what to present", "[auth]") {
  TokenAuth auth(kWorker, kAdmin);
  const std::string value = "Bearer " + kWorker;  // string_ref does not own it
  Metadata md;
  md.emplace("authorization", value);
  const grpc::Status s = auth.Check(md, Caller::kAdmin, "test");
  CHECK(s.error_message() ==
        "the worker token does not allow admin calls; rogctl presents the admin token (the file "
        "rogd's --admin_token_file names) with --token_file");
  Metadata wrong;
  wrong.emplace("authorization", "Bearer 0000000000000000000000");
  CHECK(absl::StartsWith(auth.Check(wrong, Caller::kWorker, "test").error_message(),
                         "wrong token; workers present the worker token"));
}

TEST_CASE("refusals are logged at most once a second, with the count left out", "[auth]") {
  std::ostringstream log;
  auto previous = spdlog::default_logger();
  spdlog::set_default_logger(std::make_shared<spdlog::logger>(
      "test", std::make_shared<spdlog::sinks::ostream_sink_st>(log)));
  auto clock = std::make_shared<FakeClock>();
  TokenAuth auth(kWorker, kAdmin, clock);
  Metadata none;
  for (int i = 0; i < 3; ++i) auth.Check(none, Caller::kAdmin, "peer" + std::to_string(i));
  clock->Advance(0.9);
  auth.Check(none, Caller::kAdmin, "peer3");
  const std::string first = log.str();
  clock->Advance(0.2);  // a second after the first line
  auth.Check(none, Caller::kWorker, "peer4");
  spdlog::set_default_logger(previous);
  CHECK(absl::StrContains(first, "refused a call from peer0: UNAUTHENTICATED"));
  CHECK_FALSE(absl::StrContains(first, "peer1"));
  CHECK_FALSE(absl::StrContains(first, "peer3"));
  const std::string all = log.str();
  CHECK(absl::StrContains(all, "refused a call from peer4"));
  CHECK(absl::StrContains(all, "(and 3 refusals not logged before)"));
}

TEST_CASE("token files come in pairs of different tokens", "[auth]") {
  CHECK(CheckTokenFlags(false, false, "", "").ok());
  CHECK(CheckTokenFlags(true, true, kWorker, kAdmin).ok());
  const absl::Status one = CheckTokenFlags(true, false, kWorker, "");
  CHECK(one.code() == absl::StatusCode::kInvalidArgument);
  CHECK(absl::StrContains(one.message(), "--worker_token_file without --admin_token_file"));
  CHECK(absl::StrContains(CheckTokenFlags(false, true, "", kAdmin).message(),
                          "--admin_token_file without --worker_token_file"));
  CHECK(absl::StrContains(CheckTokenFlags(true, true, kAdmin, kAdmin).message(),
                          "hold the same token"));
}

TEST_CASE("beyond loopback only with TLS, tokens or --insecure", "[auth]") {
  CHECK(CheckExposure("127.0.0.1:7070", true, false, false, false).ok());
  CHECK(CheckExposure("0.0.0.0:7070", false, true, false, false).ok());
  CHECK(CheckExposure("0.0.0.0:7070", false, false, true, false).ok());
  CHECK(CheckExposure("0.0.0.0:7070", false, true, true, false).ok());
  CHECK(CheckExposure("0.0.0.0:7070", false, false, false, true).ok());
  const absl::Status refused = CheckExposure("0.0.0.0:7070", false, false, false, false);
  CHECK(refused.code() == absl::StatusCode::kFailedPrecondition);
  for (const char* says : {"refusing to listen on 0.0.0.0:7070", "neither TLS nor tokens",
                           "--tls_cert", "--worker_token_file", "--insecure", "127.0.0.1"}) {
    CAPTURE(says);
    CHECK(absl::StrContains(refused.message(), says));
  }
}

}  // namespace
}  // namespace rog
