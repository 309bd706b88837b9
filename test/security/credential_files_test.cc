// Tokens and PEM files (security/credential_files.h). Certificates are made at test time
// by tools/make_certs.sh (openssl).
#include "security/credential_files.h"

#include <sys/stat.h>
#include <unistd.h>

#include <cstdlib>
#include <fstream>
#include <string>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "catch2/catch.hpp"

namespace rog {
namespace {

std::string TmpDir() {
  const char* t = std::getenv("TEST_TMPDIR");
  return absl::StrCat(t != nullptr ? t : "/tmp", "/auth_test-", getpid());
}

std::string Write(const std::string& name, const std::string& text, mode_t mode = 0600) {
  const std::string dir = TmpDir();
  mkdir(dir.c_str(), 0700);
  const std::string path = dir + "/" + name;
  std::ofstream(path, std::ios::trunc) << text;
  chmod(path.c_str(), mode);
  return path;
}

std::string MakeCerts() {
  static const std::string dir = [] {
    const std::string d = TmpDir() + "/certs";
    const char* srcdir = std::getenv("TEST_SRCDIR");
    const char* ws = std::getenv("TEST_WORKSPACE");
    const std::string script = srcdir != nullptr && ws != nullptr
                                   ? absl::StrCat(srcdir, "/", ws, "/tools/make_certs.sh")
                                   : "tools/make_certs.sh";
    const std::string quiet = " >/dev/null";
    const std::string cmd = absl::StrCat(
        "timeout 60 ", script, " ", d, " server localhost 127.0.0.1", quiet, " && timeout 60 ",
        script, " ", d, " client robot1", quiet, " && timeout 60 ", script,
        " --start=20200101000000Z --end=20200201000000Z ", d, " client expired", quiet);
    REQUIRE(std::system(cmd.c_str()) == 0);
    return d;
  }();
  return dir;
}

TEST_CASE("a token file holds one word; surrounding whitespace is ignored", "[auth]") {
  CHECK(ParseToken("0123456789abcdef0123\n").value() == "0123456789abcdef0123");
  CHECK(ParseToken("  \t0123456789abcdef0123  \r\n\n").value() == "0123456789abcdef0123");
  const std::string path = Write("good.token", "c2VjcmV0LXRva2VuLWZvci1yb2c=\n");
  CHECK(ReadTokenFile(path, "--token_file").value() == "c2VjcmV0LXRva2VuLWZvci1yb2c=");
}

TEST_CASE("bad tokens are refused with a way to make a good one", "[auth]") {
  for (const char* bad : {"", "   \n", "short", "0123456789abcdef 0123", "0123456789abcdef\x01"}) {
    CAPTURE(bad);
    absl::StatusOr<std::string> t = ParseToken(bad);
    REQUIRE_FALSE(t.ok());
    CHECK(t.status().code() == absl::StatusCode::kInvalidArgument);
    CHECK(absl::StrContains(t.status().message(), "openssl rand -hex 32"));
  }
  CHECK_FALSE(ParseToken(std::string(kMaxTokenLength + 1, 'a')).ok());
  CHECK(ParseToken(std::string(kMaxTokenLength, 'a')).ok());
  absl::StatusOr<std::string> missing = ReadTokenFile("/no/such/file", "--worker_token_file");
  REQUIRE_FALSE(missing.ok());
  CHECK(absl::StrContains(missing.status().message(), "--worker_token_file=/no/such/file"));
  CHECK(absl::StrContains(missing.status().message(), "No such file"));
  absl::StatusOr<std::string> short_file =
      ReadTokenFile(Write("short.token", "abc\n"), "--admin_token_file");
  REQUIRE_FALSE(short_file.ok());
  CHECK(absl::StrContains(short_file.status().message(), "--admin_token_file="));
  CHECK(absl::StrContains(short_file.status().message(), "at least 16"));
}

TEST_CASE("a token file others may read is warned about", "[auth]") {
  CHECK(LooseModeWarning(Write("private.token", "0123456789abcdef", 0600), "--x").empty());
  const std::string loose = LooseModeWarning(Write("loose.token", "0123456789abcdef", 0644), "--x");
  CHECK(absl::StrContains(loose, "mode 644"));
  CHECK(absl::StrContains(loose, "chmod 600"));
}

TEST_CASE("bearer values", "[auth]") {
  CHECK(BearerValue("abc") == "Bearer abc");
  CHECK(ParseBearer("Bearer abc").value() == "abc");
  CHECK(ParseBearer("bearer  abc ").value() == "abc");
  CHECK(ParseBearer("BEARER abc").value() == "abc");
  CHECK_FALSE(ParseBearer("Basic abc").has_value());
  CHECK_FALSE(ParseBearer("Bearer ").has_value());
  CHECK_FALSE(ParseBearer("Bearer").has_value());
  CHECK_FALSE(ParseBearer("abc").has_value());
  CHECK_FALSE(ParseBearer("").has_value());
}

TEST_CASE("tokens compare equal only when every byte and the length match", "[auth]") {
  const std::string t = "0123456789abcdef0123456789abcdef";
  CHECK(ConstantTimeEquals(t, t));
  CHECK_FALSE(ConstantTimeEquals("", t));
  CHECK_FALSE(ConstantTimeEquals(t.substr(0, 31), t));
  CHECK_FALSE(ConstantTimeEquals(t + "0", t));
  CHECK_FALSE(ConstantTimeEquals(t + t, t));  // a repeat is longer, not equal
  for (size_t i = 0; i < t.size(); ++i) {
    std::string u = t;
    u[i] ^= 1;
    CAPTURE(i);
    CHECK_FALSE(ConstantTimeEquals(u, t));
  }
  CHECK(ConstantTimeEquals("", ""));
}

TEST_CASE("certificates and keys are read, matched and dated", "[auth]") {
  const std::string d = MakeCerts();
  CertificateInfo info;
  absl::StatusOr<std::string> cert = ReadCertificateFile(d + "/localhost.pem", "--tls_cert", &info);
  REQUIRE(cert.ok());
  CHECK(info.subject == "CN=localhost");
  CHECK(info.issuer == "CN=ROG team CA");
  CHECK(ValidityProblem(info, absl::Now()).empty());
  absl::StatusOr<std::string> key = ReadKeyFile(d + "/localhost.key", "--tls_key");
  REQUIRE(key.ok());
  CHECK(CheckKeyPair(*cert, *key, "--tls_cert", "--tls_key").ok());

  absl::StatusOr<std::string> other_key = ReadKeyFile(d + "/robot1.key", "--tls_key");
  REQUIRE(other_key.ok());
  absl::Status mismatch = CheckKeyPair(*cert, *other_key, "--tls_cert", "--tls_key");
  CHECK(mismatch.code() == absl::StatusCode::kInvalidArgument);
  CHECK(absl::StrContains(mismatch.message(), "--tls_key is not the private key"));

  CertificateInfo expired;
  REQUIRE(ReadCertificateFile(d + "/expired.pem", "--tls_cert", &expired).ok());
  CHECK(ValidityProblem(expired, absl::Now()) == "expired on 2020-02-01 00:00:00 UTC");
  CHECK(ValidityProblem(expired, absl::FromUnixSeconds(1500000000)) ==
        "not valid before 2020-01-01 00:00:00 UTC");

  REQUIRE(ReadCertificateFile(d + "/ca.pem", "--tls_ca").ok());
}

TEST_CASE("a key where a certificate belongs, and the reverse, are named", "[auth]") {
  const std::string d = MakeCerts();
  absl::StatusOr<std::string> not_cert = ReadCertificateFile(d + "/robot1.key", "--tls_ca");
  REQUIRE_FALSE(not_cert.ok());
  CHECK(absl::StrContains(not_cert.status().message(), "--tls_ca="));
  CHECK(absl::StrContains(not_cert.status().message(), "holds no PEM certificate"));
  absl::StatusOr<std::string> not_key = ReadKeyFile(d + "/robot1.pem", "--tls_key");
  REQUIRE_FALSE(not_key.ok());
  CHECK(absl::StrContains(not_key.status().message(), "holds no PEM private key"));
  absl::StatusOr<std::string> missing = ReadCertificateFile(d + "/nope.pem", "--tls_cert");
  REQUIRE_FALSE(missing.ok());
  CHECK(absl::StrContains(missing.status().message(), "cannot read --tls_cert="));
}

TEST_CASE("an encrypted key is refused with how to decrypt it", "[auth]") {
  const std::string d = MakeCerts();
  const std::string enc = TmpDir() + "/encrypted.key";
  const std::string cmd = absl::StrCat(
      "openssl pkey -in ", d, "/robot1.key -aes256 -passout pass:x -out ", enc, " 2>/dev/null");
  REQUIRE(std::system(cmd.c_str()) == 0);
  absl::StatusOr<std::string> key = ReadKeyFile(enc, "--tls_key");
  REQUIRE_FALSE(key.ok());
  CHECK(absl::StrContains(key.status().message(), "is encrypted"));
  CHECK(absl::StrContains(key.status().message(), "openssl pkey"));
}

}  // namespace
}  // namespace rog
