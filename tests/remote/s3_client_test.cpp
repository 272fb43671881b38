// SPDX-License-Identifier: MIT
// The parts of the S3 client that need no server: s3:// URLs, the AWS_* environment, SHA-256,
// percent-encoding of URL parts, and the ListObjectsV2 / error XML replies.
// tests/js/s3sync_test.mjs covers the transfers against a real S3-compatible server.
#include "remote/s3_client.h"

#include <gtest/gtest.h>

#include <map>

#include "remote/curl_common.h"
#include "remote/sha256.h"

namespace sniper {
namespace {

std::function<const char*(const char*)> env_of(const std::map<std::string, std::string>& vars) {
  return [vars](const char* name) -> const char* {
    auto it = vars.find(name);
    return it == vars.end() ? nullptr : it->second.c_str();
  };
}

TEST(PercentEncode, KeepsUnreservedAndOptionallySlashes) {
  EXPECT_EQ(percent_encode("AZaz09-_.~", false), "AZaz09-_.~");
  EXPECT_EQ(percent_encode("a b/c+d", false), "a%20b%2Fc%2Bd");
  EXPECT_EQ(percent_encode("a b/c+d", true), "a%20b/c%2Bd");
  EXPECT_EQ(percent_encode(std::string("\x00\xff\xc3\xa9%?&=#", 9), true), "%00%FF%C3%A9%25%3F%26%3D%23");
  EXPECT_EQ(percent_encode("", true), "");
}

TEST(S3Url, SplitsBucketAndPrefix) {
  auto a = parse_s3_url("s3://my-bucket/team/contexts/");
  ASSERT_TRUE(a.ok()) << a.error().message;
  EXPECT_EQ(a->bucket, "my-bucket");
  EXPECT_EQ(a->prefix, "team/contexts");
  EXPECT_EQ(a->key("x.ctx"), "team/contexts/x.ctx");
  EXPECT_EQ(a->url("x.ctx"), "s3://my-bucket/team/contexts/x.ctx");
  auto b = parse_s3_url("s3://bkt");
  ASSERT_TRUE(b.ok());
  EXPECT_EQ(b->prefix, "");
  EXPECT_EQ(b->key("x.ctx"), "x.ctx");
}

TEST(S3Url, RejectsMalformedUrlsByName) {
  for (const char* bad : {"http://bkt/x", "s3://", "s3://ab", "s3://Upper/x", "s3://bkt//x", "s3://bkt/a b",
                          "s3://bkt/a?x", "s3://bkt/a//b"}) {
    auto r = parse_s3_url(bad);
    ASSERT_FALSE(r.ok()) << bad;
    EXPECT_NE(r.error().message.find("remote '"), std::string::npos) << r.error().message;
  }
}

TEST(S3Config, ReadsTheStandardVariables) {
  auto c = s3_config_from_env(env_of({{"AWS_ACCESS_KEY_ID", "AK"},
                                      {"AWS_SECRET_ACCESS_KEY", "SK"},
                                      {"AWS_SESSION_TOKEN", "TOK"},
                                      {"AWS_DEFAULT_REGION", "eu-west-3"}}));
  ASSERT_TRUE(c.ok()) << c.error().message;
  EXPECT_EQ(c->endpoint, "https://s3.eu-west-3.amazonaws.com");
  EXPECT_FALSE(c->path_style);
  EXPECT_EQ(c->region, "eu-west-3");
  EXPECT_EQ(c->session_token, "TOK");
  // AWS_REGION wins over AWS_DEFAULT_REGION; AWS_ENDPOINT_URL_S3 over AWS_ENDPOINT_URL; custom = path style.
  auto d = s3_config_from_env(env_of({{"AWS_ACCESS_KEY_ID", "AK"},
                                      {"AWS_SECRET_ACCESS_KEY", "SK"},
                                      {"AWS_REGION", "auto"},
                                      {"AWS_DEFAULT_REGION", "eu-west-3"},
                                      {"AWS_ENDPOINT_URL", "http://a:1"},
                                      {"AWS_ENDPOINT_URL_S3", "http://127.0.0.1:9000/"}}));
  ASSERT_TRUE(d.ok()) << d.error().message;
  EXPECT_EQ(d->region, "auto");
  EXPECT_EQ(d->endpoint, "http://127.0.0.1:9000");
  EXPECT_TRUE(d->path_style);
}

TEST(S3Config, PartSizeForMultipartUploads) {
  auto d = s3_config_from_env(env_of({{"AWS_ACCESS_KEY_ID", "AK"}, {"AWS_SECRET_ACCESS_KEY", "SK"}}));
  ASSERT_TRUE(d.ok());
  EXPECT_EQ(d->part_bytes, uint64_t{64} << 20);
  auto p = s3_config_from_env(
      env_of({{"AWS_ACCESS_KEY_ID", "AK"}, {"AWS_SECRET_ACCESS_KEY", "SK"}, {"SNIPER_S3_PART_BYTES", "8388608"}}));
  ASSERT_TRUE(p.ok());
  EXPECT_EQ(p->part_bytes, 8388608u);
  for (const char* bad : {"12", "abc", "10MB", "99999999999"}) {
    auto r = s3_config_from_env(
        env_of({{"AWS_ACCESS_KEY_ID", "AK"}, {"AWS_SECRET_ACCESS_KEY", "SK"}, {"SNIPER_S3_PART_BYTES", bad}}));
    ASSERT_FALSE(r.ok()) << bad;
    EXPECT_NE(r.error().message.find("SNIPER_S3_PART_BYTES"), std::string::npos);
  }
}

TEST(S3Config, ErrorsNameTheVariable) {
  auto none = s3_config_from_env(env_of({{"AWS_ACCESS_KEY_ID", "AK"}}));
  ASSERT_FALSE(none.ok());
  EXPECT_NE(none.error().message.find("AWS_SECRET_ACCESS_KEY"), std::string::npos);
  auto bad = s3_config_from_env(
      env_of({{"AWS_ACCESS_KEY_ID", "AK"}, {"AWS_SECRET_ACCESS_KEY", "SK"}, {"AWS_ENDPOINT_URL", "ftp://host/path"}}));
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.error().message.find("AWS_ENDPOINT_URL is 'ftp://host/path'"), std::string::npos)
      << bad.error().message;
  auto region = s3_config_from_env(
      env_of({{"AWS_ACCESS_KEY_ID", "AK"}, {"AWS_SECRET_ACCESS_KEY", "SK"}, {"AWS_REGION", "us east"}}));
  ASSERT_FALSE(region.ok());
  EXPECT_NE(region.error().message.find("AWS_REGION"), std::string::npos);
}

TEST(Sha256, MatchesKnownDigests) {
  EXPECT_EQ(sha256_hex("", 0), "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855");
  EXPECT_EQ(sha256_hex("abc", 3), "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
  Sha256 h;  // incremental == one shot
  h.update("a", 1);
  h.update("bc", 2);
  EXPECT_EQ(h.hex_digest(), sha256_hex("abc", 3));
  EXPECT_TRUE(is_sha256_hex(sha256_hex("x", 1)));
  EXPECT_FALSE(is_sha256_hex("E3B0C44298FC1C149AFBF4C8996FB92427AE41E4649B934CA495991B7852B855"));
}

TEST(S3Xml, ParsesListObjectsV2Pages) {
  const std::string page =
      "<?xml version=\"1.0\"?><ListBucketResult><Name>b</Name><IsTruncated>true</IsTruncated>"
      "<Contents><Key>p/a&amp;b.ctx</Key><LastModified>2026-01-01T00:00:00.000Z</LastModified><Size>8128</Size></"
      "Contents>"
      "<Contents><Key>p/a.ctx.json</Key><Size>0</Size></Contents>"
      "<NextContinuationToken>tok&lt;1</NextContinuationToken></ListBucketResult>";
  std::string next;
  auto objects = parse_list_objects_v2(page, &next);
  ASSERT_TRUE(objects.ok()) << objects.error().message;
  ASSERT_EQ(objects->size(), 2u);
  EXPECT_EQ((*objects)[0].key, "p/a&b.ctx");
  EXPECT_EQ((*objects)[0].bytes, 8128u);
  EXPECT_EQ((*objects)[0].last_modified, "2026-01-01T00:00:00.000Z");
  EXPECT_EQ(next, "tok<1");
  auto last = parse_list_objects_v2("<ListBucketResult><IsTruncated>false</IsTruncated></ListBucketResult>", &next);
  ASSERT_TRUE(last.ok());
  EXPECT_TRUE(last->empty());
  EXPECT_EQ(next, "");
  EXPECT_FALSE(parse_list_objects_v2("<Contents><Key>k</Key><Size>-1</Size></Contents>", &next).ok());
  EXPECT_FALSE(parse_list_objects_v2("<Contents><Size>1</Size></Contents>", &next).ok());
  EXPECT_FALSE(parse_list_objects_v2("<IsTruncated>true</IsTruncated>", &next).ok());
}

TEST(S3Xml, ParsesErrorCodeAndMessage) {
  std::string code, message;
  parse_s3_error("<Error><Code>InvalidAccessKeyId</Code><Message>No such key &quot;x&quot;</Message></Error>", &code,
                 &message);
  EXPECT_EQ(code, "InvalidAccessKeyId");
  EXPECT_EQ(message, "No such key \"x\"");
  parse_s3_error("not xml", &code, &message);
  EXPECT_EQ(code, "");
  EXPECT_EQ(message, "");
}

TEST(S3Client, UnreachableEndpointIsATransportError) {
  S3Config c;
  c.endpoint = "http://127.0.0.1:1";
  c.path_style = true;
  c.region = "us-east-1";
  c.access_key_id = "AK";
  c.secret_access_key = "SK";
  S3Client client(c);
  auto r = client.get_bytes("bkt", "k", 10);
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(client.last_http_status(), 0);
  EXPECT_NE(r.error().message.find("s3://bkt/k"), std::string::npos) << r.error().message;
  EXPECT_NE(r.error().message.find("http://127.0.0.1:1"), std::string::npos) << r.error().message;
}

}  // namespace
}  // namespace sniper
