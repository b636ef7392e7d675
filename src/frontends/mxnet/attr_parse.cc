// MXNet attribute strings -> typed values (see attr_parse.h).
#include "frontends/mxnet/attr_parse.h"

#include <cctype>
#include <cerrno>
#include <cstdlib>

#include "kiln/error.hpp"

namespace kiln::mxnet {
namespace {

std::string trim(const std::string& s) {
  size_t b = 0, e = s.size();
  while (b < e && std::isspace(static_cast<unsigned char>(s[b]))) ++b;
  while (e > b && std::isspace(static_cast<unsigned char>(s[e - 1]))) --e;
  return s.substr(b, e - b);
}

// Splits "(a, b, c)" / "[a,b]" / "a" into trimmed items; a trailing comma ("(3,)") adds nothing.
std::vector<std::string> split_tuple(const std::string& text, const std::string& what) {
  std::string s = trim(text);
  if (!s.empty() && (s.front() == '(' || s.front() == '[')) {
    const char close = s.front() == '(' ? ')' : ']';
    KILN_CHECK(s.size() >= 2 && s.back() == close, ErrorCode::kInvalidArgument, what, " = '", text,
               "': unbalanced brackets");
    s = s.substr(1, s.size() - 2);
  }
  std::vector<std::string> items;
  size_t start = 0;
  while (start <= s.size()) {
    const size_t comma = s.find(',', start);
    const std::string item =
        trim(s.substr(start, comma == std::string::npos ? std::string::npos : comma - start));
    if (!item.empty())
      items.push_back(item);
    else
      KILN_CHECK(comma == std::string::npos || comma + 1 >= s.size(), ErrorCode::kInvalidArgument, what,
                 " = '", text, "': empty entry");
    if (comma == std::string::npos) break;
    start = comma + 1;
  }
  return items;
}

}  // namespace

bool is_none_attr(const std::string& text) {
  const std::string s = trim(text);
  return s.empty() || s == "None";
}

int64_t parse_int_attr(const std::string& text, const std::string& what) {
  const std::string s = trim(text);
  char* end = nullptr;
  errno = 0;
  const long long v = std::strtoll(s.c_str(), &end, 10);
  // MXNet writes some integers as floats ("2.0"); accept those when they are whole.
  if (!s.empty() && errno == 0 && *end == '.') {
    const double d = std::strtod(s.c_str(), &end);
    if (*end == '\0' && d == static_cast<double>(static_cast<int64_t>(d))) return static_cast<int64_t>(d);
  }
  KILN_CHECK(!s.empty() && errno == 0 && *end == '\0', ErrorCode::kInvalidArgument, what, " = '", text,
             "': expected an integer");
  return v;
}

double parse_float_attr(const std::string& text, const std::string& what) {
  const std::string s = trim(text);
  char* end = nullptr;
  errno = 0;
  const double v = std::strtod(s.c_str(), &end);
  KILN_CHECK(!s.empty() && errno == 0 && *end == '\0', ErrorCode::kInvalidArgument, what, " = '", text,
             "': expected a number");
  return v;
}

bool parse_bool_attr(const std::string& text, const std::string& what) {
  const std::string s = trim(text);
  if (s == "True" || s == "true" || s == "1") return true;
  if (s == "False" || s == "false" || s == "0") return false;
  raise(ErrorCode::kInvalidArgument, what, " = '", text, "': expected True or False");
}

std::vector<int64_t> parse_ints_attr(const std::string& text, const std::string& what) {
  std::vector<int64_t> out;
  for (const std::string& item : split_tuple(text, what)) out.push_back(parse_int_attr(item, what));
  return out;
}

bool MxnetAttrs::has(const std::string& key) const {
  const auto it = raw_.find(key);
  return it != raw_.end() && !is_none_attr(it->second);
}

const std::string& MxnetAttrs::text(const std::string& key) const {
  const auto it = raw_.find(key);
  KILN_CHECK(it != raw_.end(), ErrorCode::kInvalidArgument, owner_, ": attribute '", key, "' is missing");
  return it->second;
}

std::string MxnetAttrs::what(const std::string& key) const {
  return owner_ + ": attribute " + key;
}

std::string MxnetAttrs::get_string(const std::string& key, const std::string& fallback) const {
  return has(key) ? trim(text(key)) : fallback;
}
int64_t MxnetAttrs::get_int(const std::string& key, int64_t fallback) const {
  return has(key) ? parse_int_attr(text(key), what(key)) : fallback;
}
double MxnetAttrs::get_float(const std::string& key, double fallback) const {
  return has(key) ? parse_float_attr(text(key), what(key)) : fallback;
}
bool MxnetAttrs::get_bool(const std::string& key, bool fallback) const {
  return has(key) ? parse_bool_attr(text(key), what(key)) : fallback;
}
std::vector<int64_t> MxnetAttrs::get_ints(const std::string& key, std::vector<int64_t> fallback) const {
  return has(key) ? parse_ints_attr(text(key), what(key)) : fallback;
}
int64_t MxnetAttrs::require_int(const std::string& key) const {
  KILN_CHECK(has(key), ErrorCode::kInvalidArgument, owner_, ": attribute '", key, "' is required");
  return get_int(key, 0);
}
std::vector<int64_t> MxnetAttrs::require_ints(const std::string& key) const {
  KILN_CHECK(has(key), ErrorCode::kInvalidArgument, owner_, ": attribute '", key, "' is required");
  return get_ints(key);
}

}  // namespace kiln::mxnet
