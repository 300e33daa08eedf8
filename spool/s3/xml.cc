#include "spool/s3/xml.h"

#include <libxml/parser.h>
#include <libxml/tree.h>

#include <cstdlib>
#include <cstring>
#include <ctime>
#include <memory>

namespace spool::s3 {
namespace {

struct DocFree {
  void operator()(xmlDoc* doc) const { xmlFreeDoc(doc); }
};
using Doc = std::unique_ptr<xmlDoc, DocFree>;

Result<Doc> Parse(std::string_view xml, const char* expected_root) {
  Doc doc(xmlReadMemory(xml.data(), static_cast<int>(xml.size()), "s3.xml", nullptr,
                        XML_PARSE_NONET | XML_PARSE_NOBLANKS | XML_PARSE_NOERROR | XML_PARSE_NOWARNING));
  xmlNode* root = doc ? xmlDocGetRootElement(doc.get()) : nullptr;
  if (root == nullptr) {
    return InvalidArgumentError("the server sent a malformed XML document: \"" +
                                std::string(xml.substr(0, 120)) + "\"");
  }
  if (expected_root != nullptr && std::strcmp(reinterpret_cast<const char*>(root->name), expected_root) != 0) {
    return InvalidArgumentError(std::string("expected an XML <") + expected_root + "> document, got <" +
                                reinterpret_cast<const char*>(root->name) + ">");
  }
  return doc;
}

xmlNode* Root(const Doc& doc) { return xmlDocGetRootElement(doc.get()); }

bool Named(const xmlNode* node, const char* name) {
  return node->type == XML_ELEMENT_NODE && std::strcmp(reinterpret_cast<const char*>(node->name), name) == 0;
}

std::vector<xmlNode*> Children(xmlNode* parent, const char* name) {
  std::vector<xmlNode*> out;
  for (xmlNode* child = parent->children; child != nullptr; child = child->next) {
    if (Named(child, name)) out.push_back(child);
  }
  return out;
}

std::string Text(xmlNode* node) {
  xmlChar* content = xmlNodeGetContent(node);
  std::string out = content ? reinterpret_cast<const char*>(content) : "";
  xmlFree(content);
  return out;
}

// The text of the first child called `name`; empty if there is none.
std::string ChildText(xmlNode* parent, const char* name) {
  for (xmlNode* child = parent->children; child != nullptr; child = child->next) {
    if (Named(child, name)) return Text(child);
  }
  return "";
}

bool ChildTrue(xmlNode* parent, const char* name) { return ChildText(parent, name) == "true"; }

std::string Escape(std::string_view text) {
  std::string out;
  out.reserve(text.size());
  for (char c : text) {
    switch (c) {
      case '&': out += "&amp;"; break;
      case '<': out += "&lt;"; break;
      case '>': out += "&gt;"; break;
      case '"': out += "&quot;"; break;
      case '\'': out += "&apos;"; break;
      case '\r': out += "&#13;"; break;
      case '\n': out += "&#10;"; break;
      default: out.push_back(c);
    }
  }
  return out;
}

// Depth-first search for the first element called `name`. Only elements are
// descended into: the children of an entity reference node are its entity
// declaration, whose links lead back up the tree (a document with a DTD
// would otherwise recurse until the stack overflows).
xmlNode* Find(xmlNode* node, const char* name) {
  for (; node != nullptr; node = node->next) {
    if (node->type != XML_ELEMENT_NODE) continue;
    if (Named(node, name)) return node;
    if (xmlNode* found = Find(node->children, name)) return found;
  }
  return nullptr;
}

}  // namespace

std::optional<std::chrono::system_clock::time_point> ParseIso8601(std::string_view text) {
  std::tm tm{};
  std::string copy(text);
  const char* end = strptime(copy.c_str(), "%Y-%m-%dT%H:%M:%S", &tm);
  if (end == nullptr) return std::nullopt;
  // system_clock counts nanoseconds in 64 bits: years outside 1678-2262 do
  // not fit (converting them overflows), and no S3 answer holds one.
  if (tm.tm_year < 1900 - 1900 || tm.tm_year > 2200 - 1900) return std::nullopt;
  auto time = std::chrono::system_clock::from_time_t(timegm(&tm));
  if (*end == '.') {  // fractions of a second: keep milliseconds
    ++end;
    int millis = 0, digits = 0;
    for (; *end >= '0' && *end <= '9'; ++end, ++digits) {
      if (digits < 3) millis = millis * 10 + (*end - '0');
    }
    for (; digits < 3; ++digits) millis *= 10;
    time += std::chrono::milliseconds(millis);
  }
  return time;
}

std::optional<ErrorDocument> ParseErrorDocument(std::string_view xml) {
  auto doc = Parse(xml, "Error");
  if (!doc.ok()) return std::nullopt;
  xmlNode* root = Root(*doc);
  ErrorDocument error;
  error.code = ChildText(root, "Code");
  error.message = ChildText(root, "Message");
  error.request_id = ChildText(root, "RequestId");
  error.resource = ChildText(root, "Resource");
  error.region = ChildText(root, "Region");
  error.endpoint = ChildText(root, "Endpoint");
  return error;
}

Result<ListObjectsResult> ParseListObjectsV2(std::string_view xml) {
  SPOOL_ASSIGN_OR_RETURN(Doc doc, Parse(xml, "ListBucketResult"));
  xmlNode* root = Root(doc);
  ListObjectsResult result;
  for (xmlNode* node : Children(root, "Contents")) {
    ObjectInfo info;
    info.key = ChildText(node, "Key");
    info.size = std::strtoull(ChildText(node, "Size").c_str(), nullptr, 10);
    info.version = ChildText(node, "ETag");
    info.updated = ParseIso8601(ChildText(node, "LastModified")).value_or(std::chrono::system_clock::time_point{});
    result.objects.push_back(std::move(info));
  }
  for (xmlNode* node : Children(root, "CommonPrefixes")) result.common_prefixes.push_back(ChildText(node, "Prefix"));
  result.is_truncated = ChildTrue(root, "IsTruncated");
  result.next_continuation_token = ChildText(root, "NextContinuationToken");
  return result;
}

Result<std::string> ParseInitiateMultipartUpload(std::string_view xml) {
  SPOOL_ASSIGN_OR_RETURN(Doc doc, Parse(xml, "InitiateMultipartUploadResult"));
  std::string upload_id = ChildText(Root(doc), "UploadId");
  if (upload_id.empty()) return InvalidArgumentError("the server started a multipart upload without an UploadId");
  return upload_id;
}

Result<CompleteMultipartResult> ParseCompleteMultipartUpload(std::string_view xml) {
  SPOOL_ASSIGN_OR_RETURN(Doc doc, Parse(xml, "CompleteMultipartUploadResult"));
  return CompleteMultipartResult{ChildText(Root(doc), "ETag")};
}

Result<std::vector<DeleteObjectsError>> ParseDeleteObjectsResult(std::string_view xml) {
  SPOOL_ASSIGN_OR_RETURN(Doc doc, Parse(xml, "DeleteResult"));
  std::vector<DeleteObjectsError> errors;
  for (xmlNode* node : Children(Root(doc), "Error")) {
    errors.push_back({ChildText(node, "Key"), ChildText(node, "Code"), ChildText(node, "Message")});
  }
  return errors;
}

Result<ListMultipartUploadsResult> ParseListMultipartUploads(std::string_view xml) {
  SPOOL_ASSIGN_OR_RETURN(Doc doc, Parse(xml, "ListMultipartUploadsResult"));
  xmlNode* root = Root(doc);
  ListMultipartUploadsResult result;
  for (xmlNode* node : Children(root, "Upload")) {
    MultipartUploadInfo upload;
    upload.key = ChildText(node, "Key");
    upload.upload_id = ChildText(node, "UploadId");
    upload.initiated = ParseIso8601(ChildText(node, "Initiated")).value_or(std::chrono::system_clock::time_point{});
    result.uploads.push_back(std::move(upload));
  }
  result.is_truncated = ChildTrue(root, "IsTruncated");
  result.next_key_marker = ChildText(root, "NextKeyMarker");
  result.next_upload_id_marker = ChildText(root, "NextUploadIdMarker");
  return result;
}

Result<ListPartsResult> ParseListParts(std::string_view xml) {
  SPOOL_ASSIGN_OR_RETURN(Doc doc, Parse(xml, "ListPartsResult"));
  xmlNode* root = Root(doc);
  ListPartsResult result;
  for (xmlNode* node : Children(root, "Part")) {
    UploadedPart part;
    part.part_number = std::atoi(ChildText(node, "PartNumber").c_str());
    part.etag = ChildText(node, "ETag");
    part.size = std::strtoull(ChildText(node, "Size").c_str(), nullptr, 10);
    if (part.part_number <= 0 || part.etag.empty()) return InvalidArgumentError("a <Part> without a number or ETag");
    result.parts.push_back(std::move(part));
  }
  result.is_truncated = ChildTrue(root, "IsTruncated");
  result.next_part_number_marker = std::atoi(ChildText(root, "NextPartNumberMarker").c_str());
  return result;
}

Result<CopyResult> ParseCopyResult(std::string_view xml) {
  SPOOL_ASSIGN_OR_RETURN(Doc doc, Parse(xml, nullptr));
  xmlNode* root = Root(doc);
  if (!Named(root, "CopyObjectResult") && !Named(root, "CopyPartResult")) {
    return InvalidArgumentError(std::string("expected an XML <CopyObjectResult> document, got <") +
                                reinterpret_cast<const char*>(root->name) + ">");
  }
  CopyResult result;
  result.etag = ChildText(root, "ETag");
  result.last_modified = ParseIso8601(ChildText(root, "LastModified")).value_or(std::chrono::system_clock::time_point{});
  return result;
}

Result<Credentials> ParseStsCredentials(std::string_view xml) {
  SPOOL_ASSIGN_OR_RETURN(Doc doc, Parse(xml, nullptr));
  xmlNode* node = Find(Root(doc), "Credentials");
  if (node == nullptr) return InvalidArgumentError("the STS answer has no <Credentials>");
  Credentials credentials{ChildText(node, "AccessKeyId"), ChildText(node, "SecretAccessKey"),
                          ChildText(node, "SessionToken"), ParseIso8601(ChildText(node, "Expiration"))};
  if (credentials.access_key_id.empty() || credentials.secret_access_key.empty()) {
    return InvalidArgumentError("the STS answer has no AccessKeyId/SecretAccessKey");
  }
  return credentials;
}

std::optional<ErrorDocument> ParseStsError(std::string_view xml) {
  auto doc = Parse(xml, "ErrorResponse");
  if (!doc.ok()) return std::nullopt;
  xmlNode* error = Find(Root(*doc), "Error");
  if (error == nullptr) return std::nullopt;
  ErrorDocument document;
  document.code = ChildText(error, "Code");
  document.message = ChildText(error, "Message");
  document.request_id = ChildText(Root(*doc), "RequestId");
  return document;
}

std::string BuildCompleteMultipartUpload(const std::vector<CompletedPart>& parts) {
  std::string out = "<CompleteMultipartUpload xmlns=\"http://s3.amazonaws.com/doc/2006-03-01/\">";
  for (const CompletedPart& part : parts) {
    out += "<Part><PartNumber>" + std::to_string(part.part_number) + "</PartNumber><ETag>" + Escape(part.etag) +
           "</ETag></Part>";
  }
  out += "</CompleteMultipartUpload>";
  return out;
}

std::string BuildDeleteObjects(const std::vector<std::string>& keys) {
  std::string out = "<Delete xmlns=\"http://s3.amazonaws.com/doc/2006-03-01/\"><Quiet>true</Quiet>";
  for (const std::string& key : keys) out += "<Object><Key>" + Escape(key) + "</Key></Object>";
  out += "</Delete>";
  return out;
}

}  // namespace spool::s3
