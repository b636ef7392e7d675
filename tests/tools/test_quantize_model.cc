// quantize_model (src/tools/quantize/quantize_model.cc): the QDQ graph it writes, the INT8
// accuracy of a CNN trained by Kiln on the digits data (data/digits) against its float accuracy,
// and a YOLO-like block (SiLU, a bottleneck's residual, SPPF's MaxPools, nearest Resize, Concats)
// that fuse_quantized_ops
// turns into int8 from input to output, against the QDQ graph on the reference kernels.
#include <gtest/gtest.h>

#include <filesystem>
#include <iostream>
#include <random>

#include "frontends/model_files.h"
#include "frontends/mxnet/import.h"
#include "graph/graph.h"
#include "graph/passes/passes.h"
#include "kiln/kiln.hpp"
#include "kiln/nn/gluon.hpp"
#include "kiln/npy.hpp"
#include "kiln/quantize.hpp"
#include "runtime/runtime_test_util.h"
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

graph::Value* out0(graph::Node* n) {
  return n->outputs[0];
}

// Conv (+ bias) -> SiLU as YOLOv5 writes it: x * Sigmoid(x).
graph::Value* conv_silu(graph::Graph& g, graph::Value* x, const std::string& name, const Shape& w,
                        std::mt19937& rng, bool silu = true) {
  const float bound = 1.5f / std::sqrt(static_cast<float>(w.numel() / w[0]));
  graph::Value* wv = g.add_initializer(name + "/W", runtime::testing::random_tensor(w, rng, -bound, bound));
  graph::Value* b = g.add_initializer(name + "/b", runtime::testing::random_tensor({w[0]}, rng, -0.2f, 0.2f));
  const int64_t pad = w[2] / 2;
  graph::Value* c = out0(g.add_node("Conv", {x, wv, b}, {{"pads", std::vector<int64_t>(4, pad)}}, name));
  if (!silu) return c;
  return out0(
      g.add_node("Mul", {c, out0(g.add_node("Sigmoid", {c}, {}, name + "/sigmoid"))}, {}, name + "/silu"));
}

// x -> Conv/SiLU -> c1, a bottleneck: a = c1 + Conv/SiLU(c1); SPPF: a -> MaxPool -> m1 -> MaxPool -> m2,
// Concat(a, m1, m2) -> Conv/SiLU
// -> Resize (nearest, x2) -> Concat with Conv/SiLU(x2) -> Conv -> y (float). Odd sizes.
graph::Graph yolo_block(std::mt19937& rng) {
  graph::Graph g;
  g.name = "yolo_block";
  graph::Value* x = g.add_input("x", ops::TensorInfo{DType::kFloat32, Shape{1, 3, 13, 11}});
  graph::Value* x2 = g.add_input("x2", ops::TensorInfo{DType::kFloat32, Shape{1, 3, 26, 22}});
  graph::Value* c1 = conv_silu(g, x, "c1", {8, 3, 3, 3}, rng);
  graph::Value* a =
      out0(g.add_node("Add", {c1, conv_silu(g, c1, "bottleneck", {8, 8, 3, 3}, rng)}, {}, "add"));
  const AttrMap pool{{"kernel_shape", std::vector<int64_t>{3, 3}},
                     {"pads", std::vector<int64_t>{1, 1, 1, 1}}};
  graph::Value* m1 = out0(g.add_node("MaxPool", {a}, pool, "pool1"));
  graph::Value* m2 = out0(g.add_node("MaxPool", {m1}, pool, "pool2"));
  graph::Value* cat1 = out0(g.add_node("Concat", {a, m1, m2}, {{"axis", int64_t{1}}}, "cat1"));
  graph::Value* b = conv_silu(g, cat1, "c2", {6, 24, 1, 1}, rng);
  graph::Value* scales =
      g.add_initializer("up/scales", Tensor::from_vector(std::vector<float>{1, 1, 2, 2}, Shape{4}));
  graph::Value* up =
      out0(g.add_node("Resize", {b, nullptr, scales}, {{"mode", std::string("nearest")}}, "up"));
  graph::Value* d = conv_silu(g, x2, "c3", {4, 3, 3, 3}, rng);
  graph::Value* cat2 = out0(g.add_node("Concat", {up, d}, {{"axis", int64_t{1}}}, "cat2"));
  graph::Value* y = conv_silu(g, cat2, "c4", {5, 10, 3, 3}, rng, /*silu=*/false);
  g.rename_value(y, "y");
  g.set_outputs({y});
  g.infer_shapes();
  return g;
}

TEST(QuantizeModel, YoloBlockRunsInInt8FromInputToOutput) {
  std::mt19937 rng(21);
  const graph::Graph model = yolo_block(rng);
  std::vector<std::map<std::string, Tensor>> batches;
  for (int i = 0; i < 3; ++i)
    batches.push_back({{"x", runtime::testing::random_tensor({1, 3, 13, 11}, rng, 0.f, 1.f)},
                       {"x2", runtime::testing::random_tensor({1, 3, 26, 22}, rng, 0.f, 1.f)}});
  auto next = std::make_shared<size_t>(0);
  const CalibrationBatches calib = [&batches, next](std::map<std::string, Tensor>& batch) {
    if (*next == batches.size()) return false;
    batch = batches[(*next)++];
    return true;
  };
  const graph::Graph qdq = quantize_model(model.clone(), calib, {.calib_mode = "naive"});
  // A QDQ pair after each value an int8 op reads: x, x2, c1, the Concats, their inputs (a, m1, m2;
  // up, d) and the Resize's input b, the joined ones with their Concat's parameters.
  std::map<std::string, int> ops = op_counts(qdq);
  EXPECT_EQ(ops["QuantizeLinear"], 11);

  graph::Graph fused = qdq.clone();
  ASSERT_TRUE(graph::fuse_quantized_ops_pass().run(fused));
  ops = op_counts(fused);
  EXPECT_EQ(ops["FusedQLinearConv"], 5);
  for (const char* gone : {"Conv", "Sigmoid", "Mul", "Add", "DequantizeLinear"})
    EXPECT_EQ(ops[gone], 0) << gone;
  EXPECT_EQ(ops["QuantizeLinear"], 2);  // the graph inputs only
  for (const graph::Node* n : fused.nodes()) {
    if (n->op == "Concat" || n->op == "MaxPool" || n->op == "Resize") {
      EXPECT_EQ(n->outputs[0]->info->dtype, DType::kInt8) << n->label();
    }
  }

  // The int8 kernels against the QDQ graph on the reference kernels, and both against float.
  const Predictor int8(qdq.clone(), {.opt_level = "all"});
  const Predictor reference(qdq.clone(), {.opt_level = "none", .kernels = "reference"});
  const Predictor fp32(model.clone(), {.opt_level = "none", .kernels = "reference"});
  for (const auto& batch : batches) {
    const Tensor want = reference.predict(batch)[0];
    const std::vector<float> got = int8.predict(batch)[0].to_vector<float>();
    const std::vector<float> ref = want.to_vector<float>();
    const std::vector<float> flt = fp32.predict(batch)[0].to_vector<float>();
    ASSERT_EQ(got.size(), ref.size());
    double largest = 0, to_reference = 0, to_float = 0;
    for (size_t i = 0; i < got.size(); ++i) {
      largest = std::max(largest, std::fabs(double{flt[i]}));
      to_reference = std::max(to_reference, std::fabs(double{got[i]} - ref[i]));
      to_float = std::max(to_float, std::fabs(double{got[i]} - flt[i]));
    }
    // An 8-bit step moved by float rounding in one layer spreads through the next: a few steps of
    // the last input's scale times the last weights, well under 3% of the range; int8 against
    // float: the quantization error itself, under 10%.
    EXPECT_LT(to_reference, 0.03 * largest);
    EXPECT_LT(to_float, 0.10 * largest);
  }
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
