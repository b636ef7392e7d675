// Typed op attributes. Callers pass an AttrMap of loosely typed values; an op's schema binds it
// into Attrs: every name checked, defaults filled in, values coerced to the declared type.
#pragma once

#include <cstdint>
#include <initializer_list>
#include <map>
#include <string>
#include <variant>
#include <vector>

#include "kiln/tensor.hpp"

namespace kiln {

enum class AttrType { kInt, kFloat, kString, kInts, kFloats, kStrings, kTensor };
const char* attr_type_name(AttrType type);

class AttrValue {
 public:
  using Variant = std::variant<int64_t, double, std::string, std::vector<int64_t>, std::vector<double>,
                               std::vector<std::string>, Tensor>;

  AttrValue(int v) : v_(int64_t{v}) {}
  AttrValue(int64_t v) : v_(v) {}
  AttrValue(bool v) : v_(int64_t{v}) {}
  AttrValue(double v) : v_(v) {}
  AttrValue(float v) : v_(double{v}) {}
  AttrValue(const char* v) : v_(std::string(v)) {}
  AttrValue(std::string v) : v_(std::move(v)) {}
  AttrValue(std::initializer_list<int> v) : v_(std::vector<int64_t>(v.begin(), v.end())) {}
  AttrValue(std::initializer_list<double> v) : v_(std::vector<double>(v)) {}
  AttrValue(std::vector<int64_t> v) : v_(std::move(v)) {}
  AttrValue(std::vector<double> v) : v_(std::move(v)) {}
  AttrValue(std::vector<std::string> v) : v_(std::move(v)) {}
  AttrValue(Tensor v) : v_(std::move(v)) {}

  AttrType type() const { return static_cast<AttrType>(v_.index()); }
  const Variant& variant() const { return v_; }
  // Converts to `target` where that loses nothing (int -> float, an empty list to any list,
  // a list of whole floats -> ints); throws kiln::Error(kTypeMismatch) naming `what` otherwise.
  AttrValue coerced_to(AttrType target, const std::string& what) const;
  std::string to_string() const;

 private:
  Variant v_;
};

using AttrMap = std::map<std::string, AttrValue>;

// Bound attributes of one op call: every declared attribute with a value or default is here,
// already of its declared type.
class Attrs {
 public:
  Attrs() = default;
  explicit Attrs(std::map<std::string, AttrValue> values) : values_(std::move(values)) {}

  bool has(const std::string& name) const { return values_.count(name) != 0; }
  int64_t get_int(const std::string& name) const;
  double get_float(const std::string& name) const;
  const std::string& get_string(const std::string& name) const;
  const std::vector<int64_t>& get_ints(const std::string& name) const;
  const std::vector<double>& get_floats(const std::string& name) const;
  const std::vector<std::string>& get_strings(const std::string& name) const;
  const Tensor& get_tensor(const std::string& name) const;
  const std::map<std::string, AttrValue>& values() const { return values_; }

 private:
  template <class T>
  const T& get(const std::string& name, AttrType type) const;
  std::map<std::string, AttrValue> values_;
};

}  // namespace kiln
