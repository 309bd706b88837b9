#include "server/auth.h"

#include "absl/strings/str_cat.h"
#include "security/credential_files.h"
#include "spdlog/spdlog.h"

namespace rog {

TokenAuth::TokenAuth(std::string worker_token, std::string admin_token,
                     std::shared_ptr<const Clock> clock)
    : worker_(std::move(worker_token)),
      admin_(std::move(admin_token)),
      clock_(clock ? std::move(clock) : DefaultClock()) {}

grpc::Status TokenAuth::Check(const std::multimap<grpc::string_ref, grpc::string_ref>& metadata,
                              Caller caller, const std::string& peer) const {
  if (!enabled()) return grpc::Status::OK;
  const char* const need = caller == Caller::kWorker
                               ? "workers present the worker token (rogd --worker_token_file; "
                                 "rog::WorkerOptions.token_file, or --token_file of the examples)"
                               : "rogctl presents the admin token (rogd --admin_token_file; "
                                 "rogctl --token_file)";
  auto it = metadata.find(kAuthorizationKey);
  grpc::Status refusal;
  if (it == metadata.end()) {
    refusal = grpc::Status(grpc::StatusCode::UNAUTHENTICATED,
                           absl::StrCat("no token: this rogd requires one; ", need));
  } else {
    const absl::string_view value(it->second.data(), it->second.size());
    const std::optional<absl::string_view> token = ParseBearer(value);
    // Both comparisons always run, so timing does not say which role a
    // guess came close to.
    const bool is_worker = token.has_value() && ConstantTimeEquals(*token, worker_);
    const bool is_admin = token.has_value() && ConstantTimeEquals(*token, admin_);
    const bool wanted = caller == Caller::kWorker ? is_worker : is_admin;
    if (wanted) return grpc::Status::OK;
    if (!token.has_value()) {
      refusal =
          grpc::Status(grpc::StatusCode::UNAUTHENTICATED,
                       absl::StrCat("the authorization metadata is not 'Bearer <token>'; ", need));
    } else if (is_worker || is_admin) {
      refusal = grpc::Status(
          grpc::StatusCode::PERMISSION_DENIED,
          caller == Caller::kAdmin
              ? "the worker token does not allow admin calls; rogctl presents the admin token "
                "(the file rogd's --admin_token_file names) with --token_file"
              : "the admin token does not open worker streams; workers present the worker "
                "token (the file rogd's --worker_token_file names)");
    } else {
      refusal =
          grpc::Status(grpc::StatusCode::UNAUTHENTICATED, absl::StrCat("wrong token; ", need));
    }
  }
  LogRefusal(peer, refusal);
  return refusal;
}

void TokenAuth::LogRefusal(const std::string& peer, const grpc::Status& status) const {
  uint64_t unlogged = 0;
  {
    std::lock_guard<std::mutex> lock(log_mu_);
    if (!log_limiter_.Allow("", clock_->Now(), &unlogged)) return;
  }
  spdlog::warn(
      "refused a call from {}: {}: {}{}", peer,
      status.error_code() == grpc::StatusCode::PERMISSION_DENIED ? "PERMISSION_DENIED"
                                                                 : "UNAUTHENTICATED",
      status.error_message(),
      unlogged > 0 ? absl::StrCat(" (and ", unlogged, " refusals not logged before)") : "");
}

absl::Status CheckTokenFlags(bool worker_set, bool admin_set, absl::string_view worker_token,
                             absl::string_view admin_token) {
  if (worker_set != admin_set) {
    return absl::InvalidArgumentError(
        absl::StrCat(worker_set ? "--worker_token_file without --admin_token_file"
                                : "--admin_token_file without --worker_token_file",
                     ": give both, so that neither workers nor admin calls go unchecked "
                     "(`tools/make_certs.sh DIR tokens` makes a pair)"));
  }
  if (worker_set && ConstantTimeEquals(worker_token, admin_token)) {
    return absl::InvalidArgumentError(
        "--worker_token_file and --admin_token_file hold the same token; the admin token must "
        "differ, or every robot could make admin calls");
  }
  return absl::OkStatus();
}

absl::Status CheckExposure(absl::string_view listen, bool loopback, bool tls, bool tokens,
                           bool insecure) {
  if (loopback || tls || tokens || insecure) return absl::OkStatus();
  return absl::FailedPreconditionError(absl::StrCat(
      "refusing to listen on ", listen,
      " beyond loopback with neither TLS nor tokens: anyone on the network could join as a worker "
      "or make admin calls. Give --tls_cert and --tls_key (and --tls_ca to require client "
      "certificates), or --worker_token_file and --admin_token_file, or both (docs/operations.md "
      "\"Security\"; tools/make_certs.sh makes them); or listen on 127.0.0.1; or pass "
      "--insecure on a network you trust"));
}

}  // namespace rog
