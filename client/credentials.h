// How a client (rog::Worker, rogctl) proves itself to rogd and checks
// rogd: TLS with the team's CA, a client certificate for mutual TLS, and a
// bearer token (docs/operations.md, "Security"). The token goes into each
// call's metadata (`authorization: Bearer <token>`) rather than call
// credentials, which gRPC sends only over TLS: tokens also work on loopback
// without TLS.
#ifndef ROG_CLIENT_CREDENTIALS_H_
#define ROG_CLIENT_CREDENTIALS_H_

#include <memory>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"

namespace grpc {
class ChannelArguments;
class ChannelCredentials;
class ClientContext;
}  // namespace grpc

namespace rog {

// Files and names, as the user gave them; empty fields are not used.
struct ClientSecurity {
  // PEM certificate(s) of the CA that signed rogd's certificate. Set: the
  // channel uses TLS and checks rogd against it. Empty: plaintext.
  std::string tls_ca_file;
  // This client's certificate (chain) and unencrypted private key, PEM, for
  // a rogd that requires client certificates (rogd --tls_ca). Both or
  // neither; they need tls_ca_file.
  std::string tls_cert_file;
  std::string tls_key_file;
  // The name rogd's certificate is checked against instead of the host of
  // the address (e.g. connecting to 10.0.0.5 with a certificate for
  // "rogd.team"). Needs tls_ca_file.
  std::string tls_server_name;
  // The bearer token itself (loaded by the caller), or a file that holds it
  // (docs/operations.md, "Security": 16-1024 visible ASCII characters). At most
  // one.
  std::string token;
  std::string token_file;
};

// How errors name the settings: rogctl's and the examples' flags
// (--tls_ca, ...) or rog::WorkerOptions' fields (tls_ca_file, ...).
enum class SettingNames { kFlags, kWorkerOptions };

// ClientSecurity with its files read and checked.
struct ClientCredentials {
  // TLS or insecure channel credentials.
  std::shared_ptr<grpc::ChannelCredentials> channel;
  bool tls = false;
  std::string server_name;  // the target name override, or empty
  std::string token;        // the bearer token, or empty
  // Problems that do not stop a connection attempt but probably make it
  // fail (an expired certificate, a token sent without TLS beyond
  // loopback): for the log or the error message.
  std::vector<std::string> warnings;

  // Sets the channel arguments these credentials need (the name override).
  void Apply(grpc::ChannelArguments* args) const;
  // Adds the token to a call's metadata.
  void Authorize(grpc::ClientContext* context) const;
};

// Reads and checks the files; InvalidArgument names the setting and the
// file and says what is wrong. `server` is rogd's address (for warnings).
absl::StatusOr<ClientCredentials> LoadClientCredentials(const ClientSecurity& security,
                                                        absl::string_view server,
                                                        SettingNames names);

}  // namespace rog

#endif  // ROG_CLIENT_CREDENTIALS_H_
