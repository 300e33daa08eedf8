// Percent-encoding for the JSON API's URLs and form bodies.
#pragma once

#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace spool::gcs {

// Encodes every byte except RFC 3986's unreserved characters (A-Z a-z 0-9
// - . _ ~), so an object name becomes one path segment ("a/b" -> "a%2Fb").
std::string PercentEncode(std::string_view text);

// "k1=v1&k2=v2" with both sides percent-encoded; pairs with an empty value
// are kept. For query strings and application/x-www-form-urlencoded bodies.
std::string EncodeQuery(const std::vector<std::pair<std::string, std::string>>& pairs);

}  // namespace spool::gcs
