// Helpers shared by the op test files: run an op through its reference kernel, and check that
// bad input fails with the right error code and a message naming what was wrong.
#pragma once

#include <initializer_list>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "ops/op_schema.h"

namespace kiln::ops {

inline std::vector<Tensor> run(const std::string& op, const AttrMap& attrs, const std::vector<Tensor>& inputs,
                               int num_outputs = -1) {
  const OpSchema& schema = OpRegistry::global().get(op);
  return schema.run_reference(schema.bind(attrs), inputs, num_outputs);
}

inline Tensor floats(const Shape& shape, DType dtype = DType::kFloat32) {
  return Tensor::zeros(shape, dtype);
}

// Checks that `e` has `code` and that its message contains every string of `parts`.
inline void expect_message(const Error& e, ErrorCode code, std::initializer_list<std::string> parts) {
  EXPECT_EQ(e.code(), code) << e.what();
  const std::string message = e.what();
  for (const auto& part : parts)
    EXPECT_NE(message.find(part), std::string::npos) << message << "\nlacks: " << part;
}

// Runs `op` and checks that it throws `code` with every string of `parts` in its message.
inline void expect_error(const std::string& op, const AttrMap& attrs, const std::vector<Tensor>& inputs,
                         ErrorCode code, std::initializer_list<std::string> parts, int num_outputs = -1) {
  try {
    run(op, attrs, inputs, num_outputs);
    ADD_FAILURE() << op << ": expected an error, got none";
  } catch (const Error& e) {
    expect_message(e, code, parts);
  }
}

// Binds `attrs` and checks that binding throws `code` naming each of `parts`.
inline void expect_bad_attr(const std::string& op, const AttrMap& attrs,
                            std::initializer_list<std::string> parts,
                            ErrorCode code = ErrorCode::kInvalidArgument) {
  try {
    OpRegistry::global().get(op).bind(attrs);
    ADD_FAILURE() << op << ": expected an attribute error, got none";
  } catch (const Error& e) {
    expect_message(e, code, parts);
  }
}

}  // namespace kiln::ops
