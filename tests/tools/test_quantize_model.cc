// quantize_model (src/tools/quantize/quantize_model.cc): the QDQ graph it writes, and the INT8
// accuracy of a CNN trained by Kiln on the digits data (data/digits) against its float accuracy.
#include <gtest/gtest.h>

#include <filesystem>
#include <iostream>

#include "frontends/mxnet/import.h"
#include "graph/graph.h"
#include "kiln/kiln.hpp"
#include "kiln/nn/gluon.hpp"
#include "kiln/npy.hpp"
#include "kiln/quantize.hpp"
#include "runtime/model_files.h"
#include "test_support.h"
#include "tools/digits_cnn.h"

namespace kiln::quantization {
namespace {

constexpr int64_t kBatch = 360;  // the test set's size

using testing::digit_images;
using testing::kDigits;

// The CNN of examples/cpp/train_cnn.cpp trained on the digits, trained once per run.
const graph::Graph& digits_cnn() {
  static const graph::Graph model = testing::trained_digits_cnn("quantize_digits_cnn");
  return model;
}

double accuracy(const graph::Graph& model) {
  return testing::digits_accuracy(model, {.opt_level = "all"});
}

// Calibration batches: the first `count` batches of kBatch training images.
CalibrationBatches training_batches(int count) {
  const Tensor x = digit_images(kDigits + "/train_x.npy");
  auto next = std::make_shared<int>(0);
  return [x, next, count](std::map<std::string, Tensor>& batch) {
    if (*next == count) return false;
    batch = {{"", x.slice(0, *next * kBatch, (*next + 1) * kBatch).contiguous()}};
    ++*next;
    return true;
  };
}

std::map<std::string, int> op_counts(const graph::Graph& g) {
  std::map<std::string, int> counts;
  for (const graph::Node* n : g.nodes()) ++counts[n->op];
  return counts;
}

TEST(QuantizeModel, DigitsCnnInt8WithinHalfAPointOfFp32) {
  const double fp32 = accuracy(digits_cnn());
  EXPECT_GE(fp32, 0.97);
  for (const char* mode : {"entropy", "naive", "percentile"}) {
    CalibrationResult calibration;
    const graph::Graph int8 =
        quantize_model(digits_cnn().clone(), training_batches(3), {.calib_mode = mode}, &calibration);
    EXPECT_EQ(calibration.batches, 3);
    const double acc = accuracy(int8);
    std::cout << "digits CNN test accuracy: fp32 " << fp32 << ", int8 (" << mode << ") " << acc << "\n";
    EXPECT_NEAR(acc, fp32, 0.005) << mode << ": fp32 " << fp32 << ", int8 " << acc;
  }
}

TEST(QuantizeModel, WritesQdqAroundEveryQuantizedLayer) {
  CalibrationResult calibration;
  const graph::Graph int8 = quantize_model(digits_cnn().clone(), training_batches(2), {}, &calibration);
  std::map<std::string, int> ops = op_counts(int8);
  // Two Convs and two Gemms (the Dense layers) with int8 weights behind a DequantizeLinear each;
  // BatchNormalization folded away.
  EXPECT_EQ(ops["BatchNormalization"], 0);
  int int8_weights = 0;
  for (const graph::Node* n : int8.nodes()) {
    if (n->op != "Conv" && n->op != "Gemm" && n->op != "MatMul") continue;
    ASSERT_NE(n->inputs[1]->producer, nullptr) << n->label();
    EXPECT_EQ(n->inputs[1]->producer->op, "DequantizeLinear") << n->label();
    EXPECT_EQ(n->inputs[1]->producer->inputs[0]->constant.dtype(), DType::kInt8) << n->label();
    ASSERT_NE(n->inputs[0]->producer, nullptr) << n->label();
    EXPECT_EQ(n->inputs[0]->producer->op, "DequantizeLinear") << n->label();
    ++int8_weights;
  }
  EXPECT_EQ(int8_weights, 4);
  // The image is never negative and neither is anything after a Relu: uint8 activations, and the
  // MaxPools pass their input's parameters through.
  for (const auto& [name, is_unsigned] : calibration.unsigned_tensors) EXPECT_TRUE(is_unsigned) << name;
  EXPECT_EQ(ops["QuantizeLinear"], static_cast<int>(calibration.thresholds.size()));
}

TEST(QuantizeModel, ActivationTypes) {
  for (const char* type : {"int8", "uint8"}) {
    CalibrationResult calibration;
    const graph::Graph int8 = quantize_model(digits_cnn().clone(), training_batches(1),
                                             {.calib_mode = "naive", .activation_dtype = type}, &calibration);
    for (const auto& [name, is_unsigned] : calibration.unsigned_tensors)
      EXPECT_EQ(is_unsigned, std::string(type) == "uint8") << type << ": " << name;
    const DType want = std::string(type) == "uint8" ? DType::kUInt8 : DType::kInt8;
    for (const graph::Node* n : int8.nodes()) {
      if (n->op != "QuantizeLinear") continue;
      EXPECT_EQ(n->outputs[0]->info->dtype, want) << n->label();
    }
  }
}

TEST(QuantizeModel, ExcludedLayersStayFloat) {
  const graph::Graph by_type = quantize_model(digits_cnn().clone(), training_batches(1),
                                              {.calib_mode = "naive", .excluded_op_types = {"Gemm"}});
  const graph::Graph first_last =
      quantize_model(digits_cnn().clone(), training_batches(1),
                     {.calib_mode = "naive", .keep_first_layer_fp32 = true, .keep_last_layer_fp32 = true});
  const auto float_weight = [](const graph::Node* n) { return n->inputs[1]->is_constant(); };
  std::vector<bool> by_type_float, first_last_float;
  for (const graph::Node* n : by_type.topological_order())
    if (n->op == "Conv" || n->op == "Gemm") by_type_float.push_back(float_weight(n));
  for (const graph::Node* n : first_last.topological_order())
    if (n->op == "Conv" || n->op == "Gemm") first_last_float.push_back(float_weight(n));
  EXPECT_EQ(by_type_float, (std::vector<bool>{false, false, true, true}));
  EXPECT_EQ(first_last_float, (std::vector<bool>{true, false, false, true}));
}

TEST(QuantizeModel, BadOptionsAreNamed) {
  testing::expect_error(
      [] { quantize_model(digits_cnn().clone(), training_batches(1), {.calib_mode = "kl"}); },
      ErrorCode::kInvalidArgument, {"calibration mode", "kl"});
  testing::expect_error(
      [] { quantize_model(digits_cnn().clone(), training_batches(1), {.activation_dtype = "int4"}); },
      ErrorCode::kInvalidArgument, {"activation_dtype", "int4"});
  testing::expect_error([] { quantize_model(digits_cnn().clone(), training_batches(0)); },
                        ErrorCode::kInvalidArgument, {"no batch"});
}

}  // namespace
}  // namespace kiln::quantization
