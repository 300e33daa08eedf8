// Parsing S3's XML documents, as AWS and Ceph RGW send them.
#include "spool/s3/xml.h"

#include <gtest/gtest.h>

namespace spool::s3 {
namespace {

TEST(S3Xml, ListObjectsV2WithContentsPrefixesAndToken) {
  auto result = ParseListObjectsV2(R"(<?xml version="1.0" encoding="UTF-8"?>
<ListBucketResult xmlns="http://s3.amazonaws.com/doc/2006-03-01/">
  <Name>bucket</Name><Prefix>data/</Prefix><KeyCount>2</KeyCount><MaxKeys>2</MaxKeys>
  <IsTruncated>true</IsTruncated><NextContinuationToken>1ueGcxLPRx1Tr/XYExHnhbYLgveDs2J/wm36Hy4vbOwM=</NextContinuationToken>
  <Contents><Key>data/a &amp; b.txt</Key><LastModified>2009-10-12T17:50:30.000Z</LastModified>
    <ETag>&quot;fba9dede5f27731c9771645a39863328&quot;</ETag><Size>434234</Size><StorageClass>STANDARD</StorageClass></Contents>
  <Contents><Key>data/c</Key><LastModified>2009-10-12T17:50:31.250Z</LastModified><ETag>"x-2"</ETag><Size>0</Size></Contents>
  <CommonPrefixes><Prefix>data/sub/</Prefix></CommonPrefixes>
</ListBucketResult>)");
  ASSERT_TRUE(result.ok()) << result.status().ToString();
  ASSERT_EQ(result->objects.size(), 2u);
  EXPECT_EQ(result->objects[0].key, "data/a & b.txt");
  EXPECT_EQ(result->objects[0].size, 434234u);
  EXPECT_EQ(result->objects[0].version, "\"fba9dede5f27731c9771645a39863328\"");
  EXPECT_EQ(std::chrono::system_clock::to_time_t(result->objects[0].updated), 1255369830);
  EXPECT_EQ(result->objects[1].updated - result->objects[0].updated, std::chrono::milliseconds(1250));
  EXPECT_EQ(result->common_prefixes, std::vector<std::string>{"data/sub/"});
  EXPECT_TRUE(result->is_truncated);
  EXPECT_EQ(result->next_continuation_token, "1ueGcxLPRx1Tr/XYExHnhbYLgveDs2J/wm36Hy4vbOwM=");
}

TEST(S3Xml, ListObjectsV2LastPageWithoutNamespace) {
  auto result = ParseListObjectsV2("<ListBucketResult><IsTruncated>false</IsTruncated></ListBucketResult>");
  ASSERT_TRUE(result.ok());
  EXPECT_TRUE(result->objects.empty());
  EXPECT_FALSE(result->is_truncated);
  EXPECT_EQ(result->next_continuation_token, "");
}

TEST(S3Xml, MalformedAndUnexpectedDocumentsAreInvalidArgument) {
  EXPECT_EQ(ParseListObjectsV2("<ListBucketResult><oops").status().code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(ParseListObjectsV2("").status().code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(ParseListObjectsV2("<Error><Code>x</Code></Error>").status().code(), StatusCode::kInvalidArgument);
  EXPECT_FALSE(ParseErrorDocument("not xml").has_value());
}

TEST(S3Xml, EntitiesAreNotExpanded) {
  auto result = ParseListObjectsV2(R"(<?xml version="1.0"?><!DOCTYPE x [<!ENTITY e SYSTEM "file:///etc/passwd">]>
<ListBucketResult><Contents><Key>&e;</Key></Contents></ListBucketResult>)");
  ASSERT_TRUE(result.ok());
  ASSERT_EQ(result->objects.size(), 1u);
  EXPECT_EQ(result->objects[0].key.find("root:"), std::string::npos);
}

TEST(S3Xml, StsCredentialsAndErrors) {
  auto credentials = ParseStsCredentials(
      "<AssumeRoleWithWebIdentityResponse><AssumeRoleWithWebIdentityResult><Credentials>"
      "<AccessKeyId>ASIA1</AccessKeyId><SecretAccessKey>s</SecretAccessKey><SessionToken>t</SessionToken>"
      "<Expiration>2030-01-01T00:00:00Z</Expiration></Credentials></AssumeRoleWithWebIdentityResult>"
      "</AssumeRoleWithWebIdentityResponse>");
  ASSERT_TRUE(credentials.ok()) << credentials.status().ToString();
  EXPECT_EQ(credentials->access_key_id, "ASIA1");
  EXPECT_EQ(credentials->session_token, "t");
  ASSERT_TRUE(credentials->expiration.has_value());
  EXPECT_EQ(std::chrono::system_clock::to_time_t(*credentials->expiration), 1893456000);
  auto error = ParseStsError(
      "<ErrorResponse><Error><Type>Sender</Type><Code>InvalidIdentityToken</Code><Message>expired</Message>"
      "</Error><RequestId>r1</RequestId></ErrorResponse>");
  ASSERT_TRUE(error.has_value());
  EXPECT_EQ(error->code, "InvalidIdentityToken");
  EXPECT_EQ(error->request_id, "r1");
}

TEST(S3Xml, StsDocumentsWithEntityReferencesDoNotLoop) {
  auto credentials = ParseStsCredentials(
      "<?xml version=\"1.0\"?><!DOCTYPE r [<!ENTITY e \"x\">]><r>&e;<Credentials><AccessKeyId>&e;</AccessKeyId>"
      "<SecretAccessKey>s</SecretAccessKey></Credentials></r>");
  ASSERT_TRUE(credentials.ok()) << credentials.status().ToString();
  EXPECT_FALSE(credentials->access_key_id.empty());
  EXPECT_FALSE(ParseStsCredentials("<?xml version=\"1.0\"?><!DOCTYPE r [<!ENTITY e \"x\">]><r>&e;</r>").ok());
}

TEST(S3Xml, ErrorDocumentFromAws) {
  auto error = ParseErrorDocument(R"(<?xml version="1.0" encoding="UTF-8"?>
<Error><Code>NoSuchKey</Code><Message>The resource you requested does not exist</Message>
<Resource>/mybucket/myfoto.jpg</Resource><RequestId>4442587FB7D0A2F9</RequestId></Error>)");
  ASSERT_TRUE(error.has_value());
  EXPECT_EQ(error->code, "NoSuchKey");
  EXPECT_EQ(error->message, "The resource you requested does not exist");
  EXPECT_EQ(error->resource, "/mybucket/myfoto.jpg");
  EXPECT_EQ(error->request_id, "4442587FB7D0A2F9");
}

TEST(S3Xml, ErrorDocumentFromCephWithEmptyMessage) {
  auto error = ParseErrorDocument(
      "<?xml version=\"1.0\" encoding=\"UTF-8\"?><Error><Code>NoSuchBucket</Code><Message></Message>"
      "<BucketName>nope</BucketName><RequestId>tx00000a-default</RequestId><HostId>1-default</HostId></Error>");
  ASSERT_TRUE(error.has_value());
  EXPECT_EQ(error->code, "NoSuchBucket");
  EXPECT_EQ(error->message, "");
  EXPECT_EQ(error->request_id, "tx00000a-default");
}

TEST(S3Xml, PermanentRedirectNamesRegionAndEndpoint) {
  auto error = ParseErrorDocument(
      "<Error><Code>PermanentRedirect</Code><Message>use the endpoint</Message>"
      "<Endpoint>b.s3.eu-west-1.amazonaws.com</Endpoint><Region>eu-west-1</Region></Error>");
  ASSERT_TRUE(error.has_value());
  EXPECT_EQ(error->region, "eu-west-1");
  EXPECT_EQ(error->endpoint, "b.s3.eu-west-1.amazonaws.com");
}

TEST(S3Xml, InitiateMultipartUpload) {
  auto id = ParseInitiateMultipartUpload(
      "<InitiateMultipartUploadResult xmlns=\"http://s3.amazonaws.com/doc/2006-03-01/\"><Bucket>b</Bucket>"
      "<Key>k</Key><UploadId>2~abc</UploadId></InitiateMultipartUploadResult>");
  ASSERT_TRUE(id.ok());
  EXPECT_EQ(*id, "2~abc");
  EXPECT_FALSE(ParseInitiateMultipartUpload("<InitiateMultipartUploadResult/>").ok());
}

TEST(S3Xml, CompleteMultipartUploadToleratesEmptyETag) {
  auto aws = ParseCompleteMultipartUpload(
      "<CompleteMultipartUploadResult><Location>x</Location><Bucket>b</Bucket><Key>k</Key>"
      "<ETag>\"3858f62230ac3c915f300c664312c11f-9\"</ETag></CompleteMultipartUploadResult>");
  ASSERT_TRUE(aws.ok());
  EXPECT_EQ(aws->etag, "\"3858f62230ac3c915f300c664312c11f-9\"");
  auto ceph = ParseCompleteMultipartUpload(
      "<CompleteMultipartUploadResult><Bucket>b</Bucket><Key>k</Key><ETag></ETag></CompleteMultipartUploadResult>");
  ASSERT_TRUE(ceph.ok());
  EXPECT_EQ(ceph->etag, "");
}

TEST(S3Xml, DeleteObjectsResultReportsPerKeyErrors) {
  auto errors = ParseDeleteObjectsResult(
      "<DeleteResult><Deleted><Key>a</Key></Deleted><Error><Key>b</Key><Code>AccessDenied</Code>"
      "<Message>Access Denied</Message></Error></DeleteResult>");
  ASSERT_TRUE(errors.ok());
  ASSERT_EQ(errors->size(), 1u);
  EXPECT_EQ((*errors)[0].key, "b");
  EXPECT_EQ((*errors)[0].code, "AccessDenied");
}

TEST(S3Xml, ListMultipartUploads) {
  auto result = ParseListMultipartUploads(
      "<ListMultipartUploadsResult><Bucket>b</Bucket><NextKeyMarker>k2</NextKeyMarker>"
      "<NextUploadIdMarker>u2</NextUploadIdMarker><IsTruncated>true</IsTruncated>"
      "<Upload><Key>k1</Key><UploadId>u1</UploadId><Initiated>2010-11-10T20:48:33.000Z</Initiated></Upload>"
      "<Upload><Key>k2</Key><UploadId>u2</UploadId><Initiated>2010-11-10T20:49:33.000Z</Initiated></Upload>"
      "</ListMultipartUploadsResult>");
  ASSERT_TRUE(result.ok());
  ASSERT_EQ(result->uploads.size(), 2u);
  EXPECT_EQ(result->uploads[1].key, "k2");
  EXPECT_EQ(result->uploads[1].upload_id, "u2");
  EXPECT_EQ(result->uploads[1].initiated - result->uploads[0].initiated, std::chrono::seconds(60));
  EXPECT_TRUE(result->is_truncated);
  EXPECT_EQ(result->next_key_marker, "k2");
  EXPECT_EQ(result->next_upload_id_marker, "u2");
}

TEST(S3Xml, CopyObjectAndCopyPartResults) {
  auto object = ParseCopyResult(
      "<CopyObjectResult><LastModified>2009-10-28T22:32:00.000Z</LastModified><ETag>\"9b2cf\"</ETag></CopyObjectResult>");
  ASSERT_TRUE(object.ok());
  EXPECT_EQ(object->etag, "\"9b2cf\"");
  auto part = ParseCopyResult("<CopyPartResult><ETag>\"p1\"</ETag></CopyPartResult>");
  ASSERT_TRUE(part.ok());
  EXPECT_EQ(part->etag, "\"p1\"");
  EXPECT_FALSE(ParseCopyResult("<Error><Code>InternalError</Code></Error>").ok());
}

TEST(S3Xml, RequestBodiesEscapeKeysAndETags) {
  EXPECT_EQ(BuildCompleteMultipartUpload({{1, "\"a\""}, {2, "\"b\""}}),
            "<CompleteMultipartUpload xmlns=\"http://s3.amazonaws.com/doc/2006-03-01/\">"
            "<Part><PartNumber>1</PartNumber><ETag>&quot;a&quot;</ETag></Part>"
            "<Part><PartNumber>2</PartNumber><ETag>&quot;b&quot;</ETag></Part></CompleteMultipartUpload>");
  EXPECT_EQ(BuildDeleteObjects({"a<b", "c&d"}),
            "<Delete xmlns=\"http://s3.amazonaws.com/doc/2006-03-01/\"><Quiet>true</Quiet>"
            "<Object><Key>a&lt;b</Key></Object><Object><Key>c&amp;d</Key></Object></Delete>");
}

}  // namespace
}  // namespace spool::s3
