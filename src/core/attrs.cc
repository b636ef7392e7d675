#include "kiln/attrs.hpp"

#include <cmath>
#include <sstream>

namespace kiln {

const char* attr_type_name(AttrType type) {
  switch (type) {
    case AttrType::kInt:
      return "int";
    case AttrType::kFloat:
      return "float";
    case AttrType::kString:
      return "string";
    case AttrType::kInts:
      return "ints";
    case AttrType::kFloats:
      return "floats";
    case AttrType::kStrings:
      return "strings";
    case AttrType::kTensor:
      return "tensor";
  }
  return "invalid";
}

namespace {
bool is_list(AttrType t) {
  return t == AttrType::kInts || t == AttrType::kFloats || t == AttrType::kStrings;
}

size_t list_size(const AttrValue::Variant& v) {
  return std::visit(
      [](const auto& x) -> size_t {
        using X = std::decay_t<decltype(x)>;
        if constexpr (std::is_same_v<X, std::vector<int64_t>> || std::is_same_v<X, std::vector<double>> ||
                      std::is_same_v<X, std::vector<std::string>>) {
          return x.size();
        } else {
          return 1;
        }
      },
      v);
}
}  // namespace

AttrValue AttrValue::coerced_to(AttrType target, const std::string& what) const {
  const AttrType have = type();
  if (have == target) return *this;
  if (target == AttrType::kFloat && have == AttrType::kInt)
    return AttrValue(static_cast<double>(std::get<int64_t>(v_)));
  if (is_list(target) && is_list(have) && list_size(v_) == 0) {
    if (target == AttrType::kInts) return AttrValue(std::vector<int64_t>{});
    if (target == AttrType::kFloats) return AttrValue(std::vector<double>{});
    return AttrValue(std::vector<std::string>{});
  }
  if (target == AttrType::kFloats && have == AttrType::kInts) {
    const auto& ints = std::get<std::vector<int64_t>>(v_);
    return AttrValue(std::vector<double>(ints.begin(), ints.end()));
  }
  if (target == AttrType::kInts && have == AttrType::kFloats) {
    std::vector<int64_t> ints;
    for (double d : std::get<std::vector<double>>(v_)) {
      KILN_CHECK(std::floor(d) == d, ErrorCode::kTypeMismatch, what, ": expected ints, got ", to_string());
      ints.push_back(static_cast<int64_t>(d));
    }
    return AttrValue(std::move(ints));
  }
  if (target == AttrType::kInt && have == AttrType::kFloat) {
    const double d = std::get<double>(v_);
    KILN_CHECK(std::floor(d) == d, ErrorCode::kTypeMismatch, what, ": expected an int, got ", d);
    return AttrValue(static_cast<int64_t>(d));
  }
  raise(ErrorCode::kTypeMismatch, what, ": expected ", attr_type_name(target), ", got ", attr_type_name(have),
        " ", to_string());
}

std::string AttrValue::to_string() const {
  std::ostringstream os;
  std::visit(
      [&](const auto& x) {
        using X = std::decay_t<decltype(x)>;
        if constexpr (std::is_same_v<X, std::string>) {
          os << '"' << x << '"';
        } else if constexpr (std::is_same_v<X, Tensor>) {
          os << "tensor" << x.shape() << ' ' << x.dtype();
        } else if constexpr (std::is_same_v<X, int64_t> || std::is_same_v<X, double>) {
          os << x;
        } else {
          os << '[';
          for (size_t i = 0; i < x.size(); ++i) os << (i ? ", " : "") << x[i];
          os << ']';
        }
      },
      v_);
  return os.str();
}

template <class T>
const T& Attrs::get(const std::string& name, AttrType type) const {
  auto it = values_.find(name);
  KILN_CHECK(it != values_.end(), ErrorCode::kNotFound, "attribute '", name, "' is not set");
  KILN_CHECK(it->second.type() == type, ErrorCode::kTypeMismatch, "attribute '", name, "': expected ",
             attr_type_name(type), ", got ", attr_type_name(it->second.type()));
  return std::get<T>(it->second.variant());
}

int64_t Attrs::get_int(const std::string& name) const {
  return get<int64_t>(name, AttrType::kInt);
}
double Attrs::get_float(const std::string& name) const {
  return get<double>(name, AttrType::kFloat);
}
const std::string& Attrs::get_string(const std::string& name) const {
  return get<std::string>(name, AttrType::kString);
}
const std::vector<int64_t>& Attrs::get_ints(const std::string& name) const {
  return get<std::vector<int64_t>>(name, AttrType::kInts);
}
const std::vector<double>& Attrs::get_floats(const std::string& name) const {
  return get<std::vector<double>>(name, AttrType::kFloats);
}
const std::vector<std::string>& Attrs::get_strings(const std::string& name) const {
  return get<std::vector<std::string>>(name, AttrType::kStrings);
}
const Tensor& Attrs::get_tensor(const std::string& name) const {
  return get<Tensor>(name, AttrType::kTensor);
}

}  // namespace kiln
