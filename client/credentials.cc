#include "client/credentials.h"

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "grpcpp/grpcpp.h"
#include "security/credential_files.h"

namespace rog {
namespace {

struct Names {
  const char* ca;
  const char* cert;
  const char* key;
  const char* server_name;
  const char* token;
  const char* token_file;
};

Names NamesFor(SettingNames names) {
  if (names == SettingNames::kFlags) {
    return {"--tls_ca", "--tls_cert", "--tls_key", "--tls_server_name", "token", "--token_file"};
  }
  return {"tls_ca_file", "tls_cert_file", "tls_key_file", "tls_server_name", "token", "token_file"};
}

bool IsLoopback(absl::string_view server) {
  return absl::StartsWith(server, "127.") || absl::StartsWith(server, "localhost:") ||
         absl::StartsWith(server, "[::1]:") || server == "localhost";
}

}  // namespace

void ClientCredentials::Apply(grpc::ChannelArguments* args) const {
  if (!server_name.empty()) args->SetSslTargetNameOverride(server_name);
}

void ClientCredentials::Authorize(grpc::ClientContext* context) const {
  if (!token.empty()) context->AddMetadata(kAuthorizationKey, BearerValue(token));
}

absl::StatusOr<ClientCredentials> LoadClientCredentials(const ClientSecurity& s,
                                                        absl::string_view server,
                                                        SettingNames setting_names) {
  const Names n = NamesFor(setting_names);
  ClientCredentials c;
  if (s.tls_cert_file.empty() != s.tls_key_file.empty()) {
    return absl::InvalidArgumentError(
        absl::StrCat(s.tls_cert_file.empty() ? n.key : n.cert, " without ",
                     s.tls_cert_file.empty() ? n.cert : n.key,
                     ": a client certificate needs its private key and the reverse"));
  }
  if (s.tls_ca_file.empty() && (!s.tls_cert_file.empty() || !s.tls_server_name.empty())) {
    return absl::InvalidArgumentError(absl::StrCat(
        s.tls_cert_file.empty() ? n.server_name : n.cert, " needs ", n.ca,
        ": the CA certificate that signed rogd's certificate (TLS checks rogd first)"));
  }
  if (!s.token.empty() && !s.token_file.empty()) {
    return absl::InvalidArgumentError(
        absl::StrCat("give ", n.token, " or ", n.token_file, ", not both"));
  }
  if (!s.tls_ca_file.empty()) {
    grpc::SslCredentialsOptions ssl;
    CertificateInfo ca_info;
    absl::StatusOr<std::string> ca = ReadCertificateFile(s.tls_ca_file, n.ca, &ca_info);
    if (!ca.ok()) return ca.status();
    ssl.pem_root_certs = *ca;
    if (!s.tls_cert_file.empty()) {
      CertificateInfo info;
      absl::StatusOr<std::string> cert = ReadCertificateFile(s.tls_cert_file, n.cert, &info);
      if (!cert.ok()) return cert.status();
      absl::StatusOr<std::string> key = ReadKeyFile(s.tls_key_file, n.key);
      if (!key.ok()) return key.status();
      if (absl::Status k = CheckKeyPair(*cert, *key, n.cert, n.key); !k.ok()) return k;
      if (const std::string problem = ValidityProblem(info, absl::Now()); !problem.empty()) {
        c.warnings.push_back(absl::StrCat(n.cert, "=", s.tls_cert_file, " (", info.subject, ") is ",
                                          problem,
                                          ": rogd will refuse it; renew it, or check this "
                                          "machine's clock"));
      }
      ssl.pem_cert_chain = *cert;
      ssl.pem_private_key = *key;
    }
    c.channel = grpc::SslCredentials(ssl);
    c.tls = true;
    c.server_name = s.tls_server_name;
  } else {
    c.channel = grpc::InsecureChannelCredentials();
  }
  if (!s.token.empty()) {
    absl::StatusOr<std::string> token = ParseToken(s.token);
    if (!token.ok()) {
      return absl::InvalidArgumentError(absl::StrCat(n.token, ": ", token.status().message()));
    }
    c.token = *token;
  } else if (!s.token_file.empty()) {
    absl::StatusOr<std::string> token = ReadTokenFile(s.token_file, n.token_file);
    if (!token.ok()) return token.status();
    c.token = *token;
    if (const std::string loose = LooseModeWarning(s.token_file, n.token_file); !loose.empty()) {
      c.warnings.push_back(loose);
    }
  }
  if (!c.token.empty() && !c.tls && !IsLoopback(server)) {
    c.warnings.push_back(
        absl::StrCat("the token travels to ", server, " in clear text without TLS; give ", n.ca));
  }
  return c;
}

}  // namespace rog
