#include "client/examples/security_flags.h"

#include <string>

#include "absl/flags/flag.h"
#include "absl/flags/usage_config.h"
#include "absl/strings/match.h"

ABSL_FLAG(std::string, tls_ca, "", "PEM CA certificate that signed rogd's: talk TLS");
ABSL_FLAG(std::string, tls_cert, "",
          "PEM certificate of this robot, for a rogd that requires them (mutual TLS)");
ABSL_FLAG(std::string, tls_key, "", "PEM private key of --tls_cert");
ABSL_FLAG(std::string, tls_server_name, "",
          "check rogd's certificate against this name instead of --server's host");
ABSL_FLAG(std::string, token_file, "",
          "file holding the worker token (the one rogd's --worker_token_file names)");

namespace rog {

void ListExampleFlagsInHelp() {
  absl::FlagsUsageConfig config;
  config.contains_help_flags = [](absl::string_view path) {
    return absl::StrContains(path, "client/examples/") || absl::StrContains(path, "task/");
  };
  absl::SetFlagsUsageConfig(config);
}

void ApplySecurityFlags(WorkerOptions& options) {
  options.tls_ca_file = absl::GetFlag(FLAGS_tls_ca);
  options.tls_cert_file = absl::GetFlag(FLAGS_tls_cert);
  options.tls_key_file = absl::GetFlag(FLAGS_tls_key);
  options.tls_server_name = absl::GetFlag(FLAGS_tls_server_name);
  options.token_file = absl::GetFlag(FLAGS_token_file);
}

}  // namespace rog
