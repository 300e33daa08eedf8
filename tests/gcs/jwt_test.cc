// JWT construction: the assertion is decoded and its RS256 signature
// verified with OpenSSL against the public half of a key made for the test.
#include "spool/gcs/jwt.h"

#include <gtest/gtest.h>
#include <openssl/bio.h>
#include <openssl/evp.h>
#include <openssl/pem.h>
#include <openssl/rsa.h>

#include <memory>
#include <string>
#include <vector>

#include "spool/gcs/json.h"

namespace spool::gcs {
namespace {

struct KeyPair {
  std::string private_pem;
  std::shared_ptr<EVP_PKEY> key;
};

KeyPair MakeKey() {
  EVP_PKEY* raw = EVP_RSA_gen(2048);
  std::shared_ptr<EVP_PKEY> key(raw, EVP_PKEY_free);
  BIO* bio = BIO_new(BIO_s_mem());
  PEM_write_bio_PrivateKey(bio, raw, nullptr, nullptr, 0, nullptr, nullptr);
  char* data = nullptr;
  long size = BIO_get_mem_data(bio, &data);
  KeyPair pair{std::string(data, static_cast<size_t>(size)), key};
  BIO_free(bio);
  return pair;
}

const KeyPair& TestKey() {
  static const KeyPair pair = MakeKey();
  return pair;
}

std::string Base64UrlDecode(std::string text) {
  for (char& c : text) {
    if (c == '-') c = '+';
    if (c == '_') c = '/';
  }
  while (text.size() % 4) text += '=';
  std::vector<unsigned char> out(text.size());
  int n = EVP_DecodeBlock(out.data(), reinterpret_cast<const unsigned char*>(text.data()), static_cast<int>(text.size()));
  EXPECT_GE(n, 0);
  size_t padding = 0;
  while (padding < text.size() && text[text.size() - 1 - padding] == '=') ++padding;
  return std::string(reinterpret_cast<char*>(out.data()), static_cast<size_t>(n) - padding);
}

bool VerifyRs256(EVP_PKEY* key, std::string_view input, std::string_view signature) {
  std::unique_ptr<EVP_MD_CTX, decltype(&EVP_MD_CTX_free)> ctx(EVP_MD_CTX_new(), EVP_MD_CTX_free);
  if (EVP_DigestVerifyInit(ctx.get(), nullptr, EVP_sha256(), nullptr, key) != 1) return false;
  return EVP_DigestVerify(ctx.get(), reinterpret_cast<const unsigned char*>(signature.data()), signature.size(),
                          reinterpret_cast<const unsigned char*>(input.data()), input.size()) == 1;
}

JwtClaims SampleClaims() {
  JwtClaims claims;
  claims.issuer = "trainer@project.iam.gserviceaccount.com";
  claims.scope = "https://www.googleapis.com/auth/devstorage.read_write";
  claims.audience = "https://oauth2.googleapis.com/token";
  claims.issued_at = 1763770000;
  claims.expires_at = 1763773600;
  return claims;
}

TEST(Base64Url, MatchesRfc4648VectorsWithoutPadding) {
  EXPECT_EQ(Base64UrlEncode(""), "");
  EXPECT_EQ(Base64UrlEncode("f"), "Zg");
  EXPECT_EQ(Base64UrlEncode("fo"), "Zm8");
  EXPECT_EQ(Base64UrlEncode("foo"), "Zm9v");
  EXPECT_EQ(Base64UrlEncode("foob"), "Zm9vYg");
  EXPECT_EQ(Base64UrlEncode("fooba"), "Zm9vYmE");
  EXPECT_EQ(Base64UrlEncode("foobar"), "Zm9vYmFy");
  EXPECT_EQ(Base64UrlEncode("\xfb\xff\xbf"), "-_-_");  // the URL-safe alphabet
}

TEST(Jwt, HeaderAndClaimsDecodeToWhatWasAsked) {
  auto jwt = MakeSignedJwt(SampleClaims(), TestKey().private_pem, "key-7");
  ASSERT_TRUE(jwt.ok()) << jwt.status().ToString();
  const size_t dot1 = jwt->find('.');
  const size_t dot2 = jwt->find('.', dot1 + 1);
  ASSERT_NE(dot2, std::string::npos);
  EXPECT_EQ(jwt->find('='), std::string::npos);
  EXPECT_EQ(Base64UrlDecode(jwt->substr(0, dot1)), R"({"alg":"RS256","typ":"JWT","kid":"key-7"})");
  EXPECT_EQ(Base64UrlDecode(jwt->substr(dot1 + 1, dot2 - dot1 - 1)),
            R"({"iss":"trainer@project.iam.gserviceaccount.com",)"
            R"("scope":"https://www.googleapis.com/auth/devstorage.read_write",)"
            R"("aud":"https://oauth2.googleapis.com/token","iat":1763770000,"exp":1763773600})");
}

TEST(Jwt, SignatureVerifiesWithThePublicKeyAndNotAfterTampering) {
  auto jwt = MakeSignedJwt(SampleClaims(), TestKey().private_pem, "");
  ASSERT_TRUE(jwt.ok()) << jwt.status().ToString();
  const size_t dot2 = jwt->rfind('.');
  const std::string input = jwt->substr(0, dot2);
  const std::string signature = Base64UrlDecode(jwt->substr(dot2 + 1));
  EXPECT_EQ(signature.size(), 256u);  // RSA-2048
  EXPECT_TRUE(VerifyRs256(TestKey().key.get(), input, signature));

  std::string tampered = input;
  tampered[tampered.size() - 2] ^= 1;
  EXPECT_FALSE(VerifyRs256(TestKey().key.get(), tampered, signature));
  const KeyPair other = MakeKey();
  EXPECT_FALSE(VerifyRs256(other.key.get(), input, signature));
}

TEST(Jwt, AKeyThatIsNotPemIsInvalidArgumentWithoutEchoingIt) {
  auto jwt = MakeSignedJwt(SampleClaims(), "-----BEGIN PRIVATE KEY-----\nsecretgarbage\n-----END PRIVATE KEY-----\n", "");
  ASSERT_FALSE(jwt.ok());
  EXPECT_EQ(jwt.status().code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(jwt.status().message().find("secretgarbage"), std::string::npos);
}

}  // namespace
}  // namespace spool::gcs
