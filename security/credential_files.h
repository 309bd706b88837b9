// Credentials as files: bearer tokens and PEM certificates and keys, read,
// checked and compared here, before gRPC sees them (docs/operations.md,
// "Security"). No gRPC and no sockets; OpenSSL only parses.
//
// Tokens live in files, never on command lines (where `ps` shows them to
// every user of the machine). A token file holds one token: 16 to 1024
// visible ASCII characters; surrounding whitespace (the trailing newline of
// `openssl rand -hex 32 > file`) is ignored. It travels as gRPC metadata
// `authorization: Bearer <token>`.
#ifndef ROG_SECURITY_CREDENTIAL_FILES_H_
#define ROG_SECURITY_CREDENTIAL_FILES_H_

#include <optional>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "absl/time/time.h"

namespace rog {

// The metadata key a bearer token travels under (lower case, as HTTP/2
// requires).
inline constexpr char kAuthorizationKey[] = "authorization";
inline constexpr size_t kMinTokenLength = 16;
inline constexpr size_t kMaxTokenLength = 1024;

// A token file's contents -> the token. InvalidArgument says what is wrong
// (empty, too short, spaces or control characters inside) and how to make
// a good one.
absl::StatusOr<std::string> ParseToken(absl::string_view contents);
// Reads and parses a token file; `what` names it in errors (e.g.
// "--worker_token_file").
absl::StatusOr<std::string> ReadTokenFile(const std::string& path, absl::string_view what);
// "" unless group or others may read `path`; else a warning saying so and
// how to fix it (chmod 600).
std::string LooseModeWarning(const std::string& path, absl::string_view what);

// "Bearer <token>".
std::string BearerValue(absl::string_view token);
// The token of an `authorization` value "Bearer <token>" (scheme in any
// case), or nullopt for any other value.
std::optional<absl::string_view> ParseBearer(absl::string_view value);

// Whether `presented` equals `expected`, in time that depends only on the
// length of `expected`: how much of a guess matched does not show in how
// long the answer takes.
bool ConstantTimeEquals(absl::string_view presented, absl::string_view expected);

// Whether a gRPC error message reports a failed TLS handshake or a refused
// certificate (gRPC reports those as UNAVAILABLE, like an unreachable
// server).
bool LooksLikeTlsFailure(absl::string_view message);

// What a PEM certificate says of itself.
struct CertificateInfo {
  std::string subject;  // e.g. "CN=rogd"
  std::string issuer;
  absl::Time not_before;
  absl::Time not_after;
};

// Reads a PEM file holding one or more certificates (a chain, or CA
// certificates) and returns its text; `info`, if not null, gets the first
// certificate's. Errors name `what` and the path and say what was expected.
absl::StatusOr<std::string> ReadCertificateFile(const std::string& path, absl::string_view what,
                                                CertificateInfo* info = nullptr);
// Reads a PEM private key (unencrypted: nobody types a passphrase on a
// robot).
absl::StatusOr<std::string> ReadKeyFile(const std::string& path, absl::string_view what);
// OK when `key_pem` is the private key of the first certificate in
// `cert_pem`; else InvalidArgument naming both flags.
absl::Status CheckKeyPair(const std::string& cert_pem, const std::string& key_pem,
                          absl::string_view cert_what, absl::string_view key_what);
// "" when `now` lies within the certificate's validity; else why not
// ("expired on 2020-02-01 00:00:00 UTC", "not valid before ...").
std::string ValidityProblem(const CertificateInfo& info, absl::Time now);

}  // namespace rog

#endif  // ROG_SECURITY_CREDENTIAL_FILES_H_
