// Attribute validators that many ops register with (OpSchema::attr): checked when a node is bound,
// so that a bad attribute is reported with the node's name before anything runs.
#pragma once

#include <algorithm>
#include <cmath>
#include <string>
#include <utility>
#include <variant>
#include <vector>

#include "kiln/error.hpp"
#include "op_schema.h"

namespace kiln::ops {

// An int attribute used as a boolean: 0 or 1.
inline void require_flag(const AttrValue& value, const std::string& what) {
  const int64_t v = std::get<int64_t>(value.variant());
  KILN_CHECK(v == 0 || v == 1, ErrorCode::kInvalidArgument, what, ": expected 0 or 1, got ", v);
}

// A float attribute that must be finite (no NaN or infinity).
inline void validate_finite(const AttrValue& value, const std::string& what) {
  const double v = std::get<double>(value.variant());
  KILN_CHECK(std::isfinite(v), ErrorCode::kInvalidArgument, what, ": expected a finite value, got ", v);
}

// A string attribute that must be one of `choices`.
inline AttrValidator one_of(std::vector<std::string> choices) {
  return [choices = std::move(choices)](const AttrValue& value, const std::string& what) {
    const auto& s = std::get<std::string>(value.variant());
    if (std::find(choices.begin(), choices.end(), s) != choices.end()) return;
    std::string names;
    for (const auto& c : choices) names += (names.empty() ? "" : ", ") + c;
    raise(ErrorCode::kInvalidArgument, what, ": expected one of {", names, "}, got '", s, "'");
  };
}

// output_datatype: one of the numeric ONNX types (no bool, string or complex).
inline void validate_output_datatype(const AttrValue& value, const std::string& what) {
  const int64_t code = std::get<int64_t>(value.variant());
  // FLOAT, UINT8, INT8, UINT16, INT16, INT32, INT64, FLOAT16, DOUBLE, UINT32, UINT64, BFLOAT16.
  constexpr int64_t kNumericCodes[] = {1, 2, 3, 4, 5, 6, 7, 10, 11, 12, 13, 16};
  bool numeric = false;
  for (int64_t c : kNumericCodes) numeric |= c == code;
  KILN_CHECK(numeric, ErrorCode::kInvalidArgument, what,
             ": expected the ONNX code of a numeric type (1-7, 10-13 or 16), got ", code);
  try {
    dtype_from_onnx(code);
  } catch (const Error& e) {
    raise(e.code(), what, ": ", e.what());
  }
}

}  // namespace kiln::ops
