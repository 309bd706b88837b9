// rogd's bearer tokens: who may open a worker stream and who may make
// Admin calls (docs/operations.md, "Security").
//
// Tokens are checked in the service handlers, from the call's metadata
// (`authorization: Bearer <token>`), before anything else is read: a
// refused call changes no state. Not an AuthMetadataProcessor: with
// InsecureServerCredentials one aborts the process in gRPC 1.51, and
// tokens must work without TLS too (on loopback, or behind --insecure).
// TLS and client certificates are gRPC's credentials (rogd_main.cc); a
// failed handshake never reaches a handler.
#ifndef ROG_SERVER_AUTH_H_
#define ROG_SERVER_AUTH_H_

#include <map>
#include <memory>
#include <mutex>
#include <string>

#include "absl/status/status.h"
#include "absl/strings/string_view.h"
#include "common/clock.h"
#include "common/log_limiter.h"
#include "grpcpp/grpcpp.h"

namespace rog {

// What an RPC asks to be.
enum class Caller { kWorker, kAdmin };

class TokenAuth {
 public:
  // Both tokens empty: no token is asked for. Otherwise both must be set
  // and differ (CheckTokenFlags). `clock` times the refusal log's rate
  // limit (null: the steady clock).
  TokenAuth(std::string worker_token, std::string admin_token,
            std::shared_ptr<const Clock> clock = nullptr);

  bool enabled() const { return !worker_.empty(); }

  // OK when the call's metadata carries the token `caller` needs.
  // UNAUTHENTICATED when it carries none or an unknown one;
  // PERMISSION_DENIED when it carries the other role's token (a worker
  // token on an Admin call, the admin token on a worker stream). Refusals
  // are logged (at most one line per second, with the count of those not
  // shown).
  grpc::Status Check(const std::multimap<grpc::string_ref, grpc::string_ref>& metadata,
                     Caller caller, const std::string& peer) const;

 private:
  void LogRefusal(const std::string& peer, const grpc::Status& status) const;

  std::string worker_;
  std::string admin_;
  std::shared_ptr<const Clock> clock_;
  mutable std::mutex log_mu_;
  mutable LogLimiter log_limiter_{/*burst=*/1, /*period=*/1.0, /*max_keys=*/1};
};

// Both token flags or neither, and two different tokens; `worker_set` and
// `admin_set` say whether each file was given.
absl::Status CheckTokenFlags(bool worker_set, bool admin_set, absl::string_view worker_token,
                             absl::string_view admin_token);

// rogd's rule for its listening address: beyond loopback only with TLS or
// tokens, or when told --insecure. The error says what to do.
absl::Status CheckExposure(absl::string_view listen, bool loopback, bool tls, bool tokens,
                           bool insecure);

}  // namespace rog

#endif  // ROG_SERVER_AUTH_H_
