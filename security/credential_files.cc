#include "security/credential_files.h"

#include <openssl/bio.h>
#include <openssl/err.h>
#include <openssl/evp.h>
#include <openssl/pem.h>
#include <openssl/x509.h>
#include <sys/stat.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <ctime>
#include <memory>

#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"

namespace rog {
namespace {

constexpr size_t kMaxPemBytes = 1 << 20;

// The whole file, at most `limit` bytes; errors name `what` and the path.
absl::StatusOr<std::string> ReadSmallFile(const std::string& path, absl::string_view what,
                                          size_t limit) {
  if (path.empty()) return absl::InvalidArgumentError(absl::StrCat(what, " is empty"));
  FILE* f = std::fopen(path.c_str(), "rb");
  if (f == nullptr) {
    return absl::InvalidArgumentError(
        absl::StrCat("cannot read ", what, "=", path, ": ", std::strerror(errno)));
  }
  std::string data;
  char buf[4096];
  size_t n;
  while ((n = std::fread(buf, 1, sizeof(buf), f)) > 0) {
    data.append(buf, n);
    if (data.size() > limit) {
      std::fclose(f);
      return absl::InvalidArgumentError(absl::StrCat(what, "=", path, " is larger than ", limit,
                                                     " bytes: is it the right file?"));
    }
  }
  const bool failed = std::ferror(f) != 0;
  std::fclose(f);
  if (failed) {
    return absl::InvalidArgumentError(absl::StrCat("cannot read ", what, "=", path));
  }
  return data;
}

// OpenSSL's reason for the last failure, and the error queue cleared.
std::string OpenSslError() {
  const unsigned long e = ERR_peek_last_error();
  std::string text;
  if (e != 0) {
    char buf[256];
    ERR_error_string_n(e, buf, sizeof(buf));
    text = buf;
  }
  ERR_clear_error();
  return text.empty() ? "no details" : text;
}

struct BioFree {
  void operator()(BIO* b) const { BIO_free(b); }
};
struct X509Free {
  void operator()(X509* x) const { X509_free(x); }
};
struct KeyFree {
  void operator()(EVP_PKEY* k) const { EVP_PKEY_free(k); }
};
using BioPtr = std::unique_ptr<BIO, BioFree>;
using X509Ptr = std::unique_ptr<X509, X509Free>;
using KeyPtr = std::unique_ptr<EVP_PKEY, KeyFree>;

BioPtr MemBio(const std::string& pem) {
  return BioPtr(BIO_new_mem_buf(pem.data(), static_cast<int>(pem.size())));
}

// Refuses to ask for a passphrase (OpenSSL would prompt on the terminal).
int NoPassphrase(char*, int, int, void*) { return -1; }

std::vector<X509Ptr> ParseCertificates(const std::string& pem) {
  std::vector<X509Ptr> certs;
  BioPtr bio = MemBio(pem);
  while (bio != nullptr) {
    X509* x = PEM_read_bio_X509(bio.get(), nullptr, NoPassphrase, nullptr);
    if (x == nullptr) break;
    certs.emplace_back(x);
  }
  ERR_clear_error();  // the end of the file reads as an error
  return certs;
}

std::string NameText(const X509_NAME* name) {
  BioPtr bio(BIO_new(BIO_s_mem()));
  if (bio == nullptr || name == nullptr) return "";
  X509_NAME_print_ex(bio.get(), name, 0, XN_FLAG_RFC2253);
  char* data = nullptr;
  const long n = BIO_get_mem_data(bio.get(), &data);
  return n > 0 ? std::string(data, static_cast<size_t>(n)) : "";
}

absl::Time AsnTime(const ASN1_TIME* t) {
  std::tm tm{};
  if (t == nullptr || ASN1_TIME_to_tm(t, &tm) != 1) return absl::InfinitePast();
  return absl::FromTM(tm, absl::UTCTimeZone());
}

CertificateInfo Describe(X509* x) {
  CertificateInfo info;
  info.subject = NameText(X509_get_subject_name(x));
  info.issuer = NameText(X509_get_issuer_name(x));
  info.not_before = AsnTime(X509_get0_notBefore(x));
  info.not_after = AsnTime(X509_get0_notAfter(x));
  return info;
}

std::string Utc(absl::Time t) {
  return absl::FormatTime("%Y-%m-%d %H:%M:%S UTC", t, absl::UTCTimeZone());
}

}  // namespace

absl::StatusOr<std::string> ParseToken(absl::string_view contents) {
  const absl::string_view token = absl::StripAsciiWhitespace(contents);
  const char* how = "; make one with `openssl rand -hex 32 > FILE && chmod 600 FILE`";
  if (token.empty()) return absl::InvalidArgumentError(absl::StrCat("the token is empty", how));
  for (char c : token) {
    if (c < 0x21 || c > 0x7e) {
      return absl::InvalidArgumentError(absl::StrCat(
          "the token holds a space, a control or a non-ASCII character; a token is one word of "
          "visible ASCII",
          how));
    }
  }
  if (token.size() < kMinTokenLength) {
    return absl::InvalidArgumentError(absl::StrCat(
        "the token has ", token.size(), " characters; use at least ", kMinTokenLength, how));
  }
  if (token.size() > kMaxTokenLength) {
    return absl::InvalidArgumentError(absl::StrCat("the token has ", token.size(),
                                                   " characters; at most ", kMaxTokenLength,
                                                   " fit in gRPC metadata", how));
  }
  return std::string(token);
}

absl::StatusOr<std::string> ReadTokenFile(const std::string& path, absl::string_view what) {
  absl::StatusOr<std::string> data = ReadSmallFile(path, what, 4 * kMaxTokenLength);
  if (!data.ok()) return data.status();
  absl::StatusOr<std::string> token = ParseToken(*data);
  if (!token.ok()) {
    return absl::InvalidArgumentError(
        absl::StrCat(what, "=", path, ": ", token.status().message()));
  }
  return token;
}

std::string LooseModeWarning(const std::string& path, absl::string_view what) {
  struct stat st;
  if (stat(path.c_str(), &st) != 0 || (st.st_mode & 077) == 0) return "";
  char mode[8];
  std::snprintf(mode, sizeof(mode), "%03o", static_cast<unsigned>(st.st_mode & 0777));
  return absl::StrCat(what, "=", path, " may be read by other users (mode ", mode, "); `chmod 600 ",
                      path, "` keeps the token to its owner");
}

std::string BearerValue(absl::string_view token) { return absl::StrCat("Bearer ", token); }

std::optional<absl::string_view> ParseBearer(absl::string_view value) {
  constexpr absl::string_view kScheme = "bearer ";
  if (value.size() <= kScheme.size() ||
      !absl::EqualsIgnoreCase(value.substr(0, kScheme.size()), kScheme)) {
    return std::nullopt;
  }
  absl::string_view token = absl::StripAsciiWhitespace(value.substr(kScheme.size()));
  if (token.empty()) return std::nullopt;
  return token;
}

bool ConstantTimeEquals(absl::string_view presented, absl::string_view expected) {
  // Every byte of `expected` is compared, whatever differs first; volatile
  // keeps the compiler from stopping at the first difference.
  volatile unsigned char diff = presented.size() == expected.size() ? 0 : 1;
  const size_t n = presented.size();
  for (size_t i = 0; i < expected.size(); ++i) {
    const unsigned char p = n == 0 ? 0 : static_cast<unsigned char>(presented[i % n]);
    diff = diff | (p ^ static_cast<unsigned char>(expected[i]));
  }
  return diff == 0;
}

bool LooksLikeTlsFailure(absl::string_view message) {
  const std::string m = absl::AsciiStrToLower(message);
  for (const char* sign : {"handshake", "ssl", "tls", "certificate", "x509"}) {
    if (absl::StrContains(m, sign)) return true;
  }
  return false;
}

absl::StatusOr<std::string> ReadCertificateFile(const std::string& path, absl::string_view what,
                                                CertificateInfo* info) {
  absl::StatusOr<std::string> pem = ReadSmallFile(path, what, kMaxPemBytes);
  if (!pem.ok()) return pem.status();
  std::vector<X509Ptr> certs = ParseCertificates(*pem);
  if (certs.empty()) {
    return absl::InvalidArgumentError(
        absl::StrCat(what, "=", path,
                     " holds no PEM certificate (-----BEGIN CERTIFICATE-----); is it a key or a "
                     "certificate request?"));
  }
  if (info != nullptr) *info = Describe(certs.front().get());
  return pem;
}

absl::StatusOr<std::string> ReadKeyFile(const std::string& path, absl::string_view what) {
  absl::StatusOr<std::string> pem = ReadSmallFile(path, what, kMaxPemBytes);
  if (!pem.ok()) return pem.status();
  BioPtr bio = MemBio(*pem);
  KeyPtr key(bio ? PEM_read_bio_PrivateKey(bio.get(), nullptr, NoPassphrase, nullptr) : nullptr);
  if (key == nullptr) {
    const std::string why = OpenSslError();
    if (absl::StrContains(*pem, "ENCRYPTED")) {
      return absl::InvalidArgumentError(absl::StrCat(
          what, "=", path,
          " is encrypted; rogd and workers start unattended: decrypt it with `openssl pkey -in ",
          path, " -out KEY` and keep KEY mode 600"));
    }
    return absl::InvalidArgumentError(
        absl::StrCat(what, "=", path, " holds no PEM private key (", why, ")"));
  }
  return pem;
}

absl::Status CheckKeyPair(const std::string& cert_pem, const std::string& key_pem,
                          absl::string_view cert_what, absl::string_view key_what) {
  std::vector<X509Ptr> certs = ParseCertificates(cert_pem);
  BioPtr bio = MemBio(key_pem);
  KeyPtr key(bio ? PEM_read_bio_PrivateKey(bio.get(), nullptr, NoPassphrase, nullptr) : nullptr);
  ERR_clear_error();
  if (certs.empty() || key == nullptr) {
    return absl::InvalidArgumentError(
        absl::StrCat(cert_what, " or ", key_what, " cannot be parsed"));
  }
  if (X509_check_private_key(certs.front().get(), key.get()) != 1) {
    ERR_clear_error();
    return absl::InvalidArgumentError(absl::StrCat(
        key_what, " is not the private key of the certificate in ", cert_what, " (",
        Describe(certs.front().get()).subject, "): pass the key the certificate was made from"));
  }
  return absl::OkStatus();
}

std::string ValidityProblem(const CertificateInfo& info, absl::Time now) {
  if (now > info.not_after) return absl::StrCat("expired on ", Utc(info.not_after));
  if (now < info.not_before) return absl::StrCat("not valid before ", Utc(info.not_before));
  return "";
}

}  // namespace rog
