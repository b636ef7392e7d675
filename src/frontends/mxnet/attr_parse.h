// MXNet keeps every operator attribute as a string, written the way Python prints the value:
// "(3, 3)", "[1,2]", "32", "1e-05", "True", "relu", "None". This parser turns them into typed
// values for the importer and the Symbol API, with errors that name the node and the attribute.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

namespace kiln::mxnet {

// Each throws kiln::Error(kInvalidArgument) naming `what` and the text when it does not parse.
int64_t parse_int_attr(const std::string& text, const std::string& what);
double parse_float_attr(const std::string& text, const std::string& what);
bool parse_bool_attr(const std::string& text, const std::string& what);  // True/False/true/false/1/0
// A tuple or list of integers ("(3, 3)", "[3,3]", "(3,)", "()") or one integer ("3").
std::vector<int64_t> parse_ints_attr(const std::string& text, const std::string& what);
bool is_none_attr(const std::string& text);  // "None" or empty: the attribute is unset

// The attributes of one node; `owner` ("Convolution 'conv0'") prefixes every error. Getters
// treat an absent or "None" attribute as unset and return the default.
class MxnetAttrs {
 public:
  MxnetAttrs(const std::map<std::string, std::string>& raw, std::string owner)
      : raw_(raw), owner_(std::move(owner)) {}

  bool has(const std::string& key) const;
  const std::string& text(const std::string& key) const;  // the raw string; the key must exist
  std::string get_string(const std::string& key, const std::string& fallback) const;
  int64_t get_int(const std::string& key, int64_t fallback) const;
  double get_float(const std::string& key, double fallback) const;
  bool get_bool(const std::string& key, bool fallback) const;
  std::vector<int64_t> get_ints(const std::string& key, std::vector<int64_t> fallback = {}) const;
  // Throws kiln::Error(kInvalidArgument) when the attribute is missing.
  int64_t require_int(const std::string& key) const;
  std::vector<int64_t> require_ints(const std::string& key) const;
  const std::string& owner() const { return owner_; }

 private:
  std::string what(const std::string& key) const;
  const std::map<std::string, std::string>& raw_;
  std::string owner_;
};

}  // namespace kiln::mxnet
