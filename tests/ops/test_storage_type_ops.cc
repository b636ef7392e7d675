// The op registry's rule for the storage types (dtype.hpp): ops that compute refuse them at shape
// inference, naming the input; the ops marked takes_storage_types move them. Their values are
// checked against ml_dtypes in tests/ops/cases/storage_types.py.
#include <gtest/gtest.h>

#include "kiln/error.hpp"
#include "kiln/tensor.hpp"
#include "ops/op_schema.h"

namespace kiln {
namespace {

TEST(StorageTypes, ArithmeticOpsRefuseThemByName) {
  const Tensor a = Tensor::from_vector<float>({1.0f, 2.0f}, Shape{2}).cast(DType::kFloat8E4M3FN);
  try {
    const ops::OpSchema& add = ops::OpRegistry::global().get("Add");
    add.run_reference(add.bind({}), {a, a});
    FAIL() << "Add took float8_e4m3fn";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::kUnsupported);
    EXPECT_NE(std::string(e.what()).find("input 0 (A) is float8_e4m3fn"), std::string::npos) << e.what();
  }
  // The ops that move elements take them.
  const ops::OpSchema& transpose = ops::OpRegistry::global().get("Transpose");
  const std::vector<Tensor> moved = transpose.run_reference(transpose.bind({}), {a.reshape(Shape{1, 2})});
  EXPECT_EQ(moved[0].dtype(), DType::kFloat8E4M3FN);
  EXPECT_EQ(moved[0].cast(DType::kFloat32).to_vector<float>(), (std::vector<float>{1.0f, 2.0f}));
}

}  // namespace
}  // namespace kiln
