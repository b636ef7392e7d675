// Mixed precision (src/tools/mixed_precision): the rewritten graph's structure (which nodes run in
// the low type, the Casts at the borders of float32 islands, converted initializers, graph
// inputs and outputs kept float32 with their names), its outputs against the float32 graph within
// the low type's rounding, the digits CNN's accuracy in bf16 and fp16, and the exported files:
// onnx.checker passes them and ONNX Runtime runs the fp16 one with Kiln's outputs.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <iostream>
#include <random>

#include "frontends/onnx/export.h"
#include "graph/graph.h"
#include "kiln/error.hpp"
#include "kiln/mixed_precision.hpp"
#include "kiln/npy.hpp"
#include "kiln/predictor.hpp"
#include "runtime/kernel_provider.h"
#include "runtime/runtime_test_util.h"
#include "test_support.h"
#include "tools/digits_cnn.h"

namespace kiln::mixed_precision {
namespace {

using graph::Graph;
using graph::Node;
using graph::Value;
using ops::TensorInfo;
using runtime::testing::random_tensor;
using runtime::testing::reference_evaluate;

// The structure tests decide by the ops' schemas alone, the same on every CPU (the fast kernels'
// say is tested on its own below).
const MixedPrecisionOptions kBySchema{.fast_kernels_only = false};

Value* out0(Node* n) {
  return n->outputs[0];
}

DType input_dtype(const Graph& g, const std::string& node, int i) {
  return g.find_node(node)->inputs[static_cast<size_t>(i)]->info->dtype;
}

int count_ops(const Graph& g, const std::string& op) {
  int count = 0;
  for (const Node* n : g.nodes()) count += n->op == op;
  return count;
}

float max_abs(const Tensor& t) {
  const std::vector<float> v = t.cast(DType::kFloat32).to_vector<float>();
  float m = 0;
  for (float x : v) m = std::max(m, std::abs(x));
  return m;
}

float max_abs_difference(const Tensor& a, const Tensor& b) {
  EXPECT_EQ(a.shape(), b.shape());
  const std::vector<float> va = a.cast(DType::kFloat32).to_vector<float>();
  const std::vector<float> vb = b.cast(DType::kFloat32).to_vector<float>();
  float m = 0;
  for (size_t i = 0; i < va.size(); ++i) m = std::max(m, std::abs(va[i] - vb[i]));
  return m;
}

// x (4, 16) -> MatMul W (16, 8) -> Add b -> Relu "relu" -> Softmax -> y; the Relu's output is
// also an output, z.
Graph mlp_head(std::mt19937& rng) {
  Graph g;
  Value* x = g.add_input("x", TensorInfo{DType::kFloat32, Shape{4, 16}});
  Value* h = out0(g.add_node("MatMul", {x, g.add_initializer("W", random_tensor({16, 8}, rng))}, {}, "fc"));
  h = out0(g.add_node("Add", {h, g.add_initializer("b", random_tensor({8}, rng))}, {}, "bias"));
  Value* z = out0(g.add_node("Relu", {h}, {}, "relu"));
  Value* y = out0(g.add_node("Softmax", {z}, {{"axis", 1}}, "softmax"));
  g.rename_value(y, "y");
  g.rename_value(z, "z");
  g.set_outputs({y, z});
  g.infer_shapes();
  return g;
}

TEST(MixedPrecision, SensitiveOpsStayFloat32BehindCasts) {
  std::mt19937 rng(1);
  const Graph fp32 = mlp_head(rng);
  MixedPrecisionReport report;
  const Graph bf16 = convert_float(fp32.clone(), kBySchema, &report);
  EXPECT_EQ(report.low_nodes, 3);  // MatMul, Add, Relu
  EXPECT_EQ(report.fp32_nodes, std::vector<std::string>{"Softmax 'softmax'"});
  EXPECT_EQ(report.converted_initializers, 2);
  // x to bf16 at entry; the Relu's output to float32 once, for the Softmax and the output z.
  EXPECT_EQ(report.casts, 2);
  EXPECT_EQ(count_ops(bf16, "Cast"), 2);
  EXPECT_EQ(input_dtype(bf16, "fc", 0), DType::kBFloat16);
  EXPECT_EQ(input_dtype(bf16, "fc", 1), DType::kBFloat16);
  EXPECT_EQ(input_dtype(bf16, "bias", 1), DType::kBFloat16);
  EXPECT_EQ(input_dtype(bf16, "softmax", 0), DType::kFloat32);
  // The interface is the original one: names, float32.
  ASSERT_EQ(bf16.inputs().size(), 1u);
  EXPECT_EQ(bf16.inputs()[0]->name, "x");
  EXPECT_EQ(bf16.inputs()[0]->info->dtype, DType::kFloat32);
  ASSERT_EQ(bf16.outputs().size(), 2u);
  EXPECT_EQ(bf16.outputs()[0]->name, "y");
  EXPECT_EQ(bf16.outputs()[1]->name, "z");
  for (const Value* v : bf16.outputs()) EXPECT_EQ(v->info->dtype, DType::kFloat32) << v->name;
  for (const Value* v : bf16.initializers()) EXPECT_EQ(v->constant.dtype(), DType::kBFloat16) << v->name;

  // The outputs move by bf16's rounding: 8 significant bits, about 0.4% of each operand, summed
  // over the 16 terms of the MatMul.
  const Tensor x = random_tensor({4, 16}, rng);
  const std::vector<Tensor> want = reference_evaluate(fp32, {x});
  const std::vector<Tensor> got = reference_evaluate(bf16, {x});
  for (size_t i = 0; i < want.size(); ++i) {
    EXPECT_EQ(got[i].dtype(), DType::kFloat32);
    EXPECT_LE(max_abs_difference(got[i], want[i]), 0.02f * max_abs(want[i])) << i;
    EXPECT_GT(max_abs_difference(got[i], want[i]), 0.0f) << i << ": the graph did not compute in bf16";
  }
}

TEST(MixedPrecision, UserListsAddFloat32Islands) {
  std::mt19937 rng(2);
  MixedPrecisionReport report;
  const Graph g = convert_float(
      mlp_head(rng), {.low_type = DType::kFloat16, .fp32_node_names = {"relu"}, .fast_kernels_only = false},
      &report);
  EXPECT_EQ(report.low_nodes, 2);
  EXPECT_EQ(input_dtype(g, "fc", 0), DType::kFloat16);
  EXPECT_EQ(input_dtype(g, "relu", 0), DType::kFloat32);
  EXPECT_EQ(report.casts, 2);  // x to fp16, the Add's output back

  const Graph by_op =
      convert_float(mlp_head(rng), {.fp32_op_types = {"MatMul"}, .fast_kernels_only = false}, &report);
  EXPECT_EQ(input_dtype(by_op, "fc", 0), DType::kFloat32);
  EXPECT_EQ(input_dtype(by_op, "fc", 1), DType::kFloat32);
  EXPECT_EQ(input_dtype(by_op, "bias", 0), DType::kBFloat16);
}

TEST(MixedPrecision, OpsWhoseOutputTypeIsFixedStayFloat32) {
  // ConstantOfShape's float32 output comes from its attribute, so its op does not take bf16: the
  // Add reading it gets a Cast instead.
  Graph g;
  Value* x = g.add_input("x", TensorInfo{DType::kFloat32, Shape{2, 3}});
  Value* shape = g.add_initializer("shape", Tensor::from_vector<int64_t>({2, 3}, Shape{2}));
  Value* ones = out0(
      g.add_node("ConstantOfShape", {shape}, {{"value", Tensor::full({1}, 1.0, DType::kFloat32)}}, "ones"));
  Value* y = out0(g.add_node("Add", {x, ones}, {}, "add"));
  g.set_outputs({y});
  g.infer_shapes();
  MixedPrecisionReport report;
  const Graph bf16 = convert_float(std::move(g), kBySchema, &report);
  EXPECT_EQ(report.fp32_nodes, std::vector<std::string>{"ConstantOfShape 'ones'"});
  EXPECT_EQ(input_dtype(bf16, "add", 1), DType::kBFloat16);
  EXPECT_EQ(bf16.find_node("add")->inputs[1]->producer->op, "Cast");
}

// x -> Q -> DQ -> MatMul "mm" -> x * Sigmoid(x) ("sig", "silu") -> Q -> DQ -> MatMul "mm2" -> Relu
// "tail" -> y: the chain between the QDQ pairs becomes one int8 op with its SiLU, so it stays
// float32 (no Cast inside it); "mm2" reads a DequantizeLinear (an int8 MatMul with a float
// output); only the tail after it is bf16.
TEST(MixedPrecision, QuantizedChainsStayFloat32) {
  std::mt19937 rng(4);
  Graph g;
  Value* x = g.add_input("x", TensorInfo{DType::kFloat32, Shape{2, 4}});
  Value* scale = g.add_initializer("scale", Tensor::full({}, 0.05, DType::kFloat32));
  Value* zero = g.add_initializer("zero", Tensor::zeros({}, DType::kInt8));
  const auto qdq = [&](Value* v, const std::string& name) {
    Value* q = out0(g.add_node("QuantizeLinear", {v, scale, zero}, {}, name + "_q"));
    return out0(g.add_node("DequantizeLinear", {q, scale, zero}, {}, name + "_dq"));
  };
  Value* mm =
      out0(g.add_node("MatMul", {qdq(x, "x"), g.add_initializer("W", random_tensor({4, 4}, rng))}, {}, "mm"));
  Value* sig = out0(g.add_node("Sigmoid", {mm}, {}, "sig"));
  Value* silu = out0(g.add_node("Mul", {mm, sig}, {}, "silu"));
  Value* mm2 = out0(g.add_node(
      "MatMul", {qdq(silu, "silu"), g.add_initializer("W2", random_tensor({4, 4}, rng))}, {}, "mm2"));
  Value* y = out0(g.add_node("Relu", {mm2}, {}, "tail"));
  g.set_outputs({y});
  g.infer_shapes();
  MixedPrecisionReport report;
  const Graph bf16 = convert_float(std::move(g), kBySchema, &report);
  for (const char* name : {"mm", "sig", "silu", "mm2"})
    EXPECT_EQ(input_dtype(bf16, name, 0), DType::kFloat32) << name;
  EXPECT_EQ(input_dtype(bf16, "tail", 0), DType::kBFloat16);
  EXPECT_EQ(report.low_nodes, 1);
  EXPECT_EQ(report.casts, 2);  // mm2's output to bf16, the tail's back to float32
}

TEST(MixedPrecision, BadArgumentsAreErrors) {
  std::mt19937 rng(3);
  EXPECT_THROW(convert_float(mlp_head(rng), {.fp32_node_names = {"no_such_node"}}), Error);
  EXPECT_THROW(convert_float(mlp_head(rng), {.low_type = DType::kInt8}), Error);
  EXPECT_EQ(parse_low_type("bf16"), DType::kBFloat16);
  EXPECT_EQ(parse_low_type("fp16"), DType::kFloat16);
  EXPECT_THROW(parse_low_type("int8"), Error);
}

// The trained digits CNN in bf16 and fp16, converted by the ops' schemas alone (every node low)
// and for the fast kernels this CPU has: within a point of its float32 accuracy, with scores
// within the low type's rounding.
TEST(MixedPrecision, DigitsCnnKeepsItsAccuracy) {
  const Graph fp32 = testing::trained_digits_cnn("mixed_precision_digits_cnn");
  const Tensor x = testing::digit_images(testing::kDigits + "/test_x.npy");
  const Tensor want = Predictor(fp32.clone(), {.opt_level = "all"}).predict({x})[0];
  const double fp32_accuracy = testing::digits_accuracy(want);
  for (const DType low : {DType::kBFloat16, DType::kFloat16}) {
    for (const bool fast_kernels_only : {false, true}) {
      MixedPrecisionReport report;
      const Graph converted =
          convert_float(fp32.clone(), {.low_type = low, .fast_kernels_only = fast_kernels_only}, &report);
      const Predictor predictor(converted.clone(), {.opt_level = "all"});
      int low_convs = 0;
      for (const Node* n : predictor.graph().nodes())
        low_convs += n->op.find("Conv") != std::string::npos && n->inputs[0]->info->dtype == low;
      if (!fast_kernels_only) {
        EXPECT_EQ(report.fp32_nodes.size(), 0u) << dtype_name(low);
        EXPECT_EQ(low_convs, 2) << dtype_name(low);
      }
      const Tensor got = predictor.predict({x})[0];
      const double accuracy = testing::digits_accuracy(got);
      std::cout << dtype_name(low) << (fast_kernels_only ? " (fast kernels only)" : "") << ": "
                << report.low_nodes << " low nodes, " << low_convs << " low convs, accuracy " << accuracy
                << " (fp32 " << fp32_accuracy << "), max |diff| " << max_abs_difference(got, want)
                << " of max |score| " << max_abs(want) << "\n";
      EXPECT_GE(accuracy, fp32_accuracy - 0.01) << dtype_name(low);
      EXPECT_LE(max_abs_difference(got, want), (low == DType::kBFloat16 ? 0.05f : 0.01f) * max_abs(want));
    }
  }
}

// A provider with kernels for two Sign nodes only (oneDNN has no Sign): "fp32_fast_sign" in
// float32, "low_fast_sign" in float32 and bf16.
class SignKernels : public runtime::KernelProvider {
 public:
  std::string name() const override { return "test_sign"; }
  ops::KernelFn choose_kernel(const Node& node, const Attrs&) const override {
    const DType dtype = node.inputs[0]->info->dtype;
    const bool fp32_only = node.name == "fp32_fast_sign" && dtype == DType::kFloat32;
    const bool low_too =
        node.name == "low_fast_sign" && (dtype == DType::kFloat32 || dtype == DType::kBFloat16);
    if (node.op != "Sign" || !(fp32_only || low_too)) return {};
    return [](ops::KernelContext& ctx) {
      const auto sign = [&](auto tag) {
        using T = decltype(tag);
        const T* in = ctx.input(0).data<T>();
        T* out = ctx.output(0).data<T>();
        for (int64_t i = 0; i < ctx.input(0).numel(); ++i) {
          const float v = static_cast<float>(in[i]);
          out[i] = T(static_cast<float>((v > 0) - (v < 0)));
        }
      };
      if (ctx.input(0).dtype() == DType::kFloat32)
        sign(float{});
      else
        sign(bfloat16{});
    };
  }
};

// x -> Sign "low_fast_sign" -> Sign "follows_low" and x -> Sign "fp32_fast_sign" -> Sign
// "follows_fp32": a node with a fast kernel in float32 only stays float32, one with a fast kernel
// in bf16 goes to bf16, and one with none in either type follows its input. By the schemas alone,
// all go to bf16.
TEST(MixedPrecision, FastKernelsDecideWhereTheyExist) {
  static const SignKernels provider;
  static const int registered = runtime::register_kernel_provider(provider, 1000);
  (void)registered;
  const auto sign_graph = [] {
    Graph g;
    Value* x = g.add_input("x", TensorInfo{DType::kFloat32, Shape{-1, 4}});
    Value* a =
        out0(g.add_node("Sign", {out0(g.add_node("Sign", {x}, {}, "low_fast_sign"))}, {}, "follows_low"));
    Value* b =
        out0(g.add_node("Sign", {out0(g.add_node("Sign", {x}, {}, "fp32_fast_sign"))}, {}, "follows_fp32"));
    g.set_outputs({a, b});
    g.infer_shapes();
    return g;
  };
  MixedPrecisionReport report;
  const Graph fast = convert_float(sign_graph(), {}, &report);
  EXPECT_EQ(input_dtype(fast, "low_fast_sign", 0), DType::kBFloat16);
  EXPECT_EQ(input_dtype(fast, "follows_low", 0), DType::kBFloat16);
  EXPECT_EQ(input_dtype(fast, "fp32_fast_sign", 0), DType::kFloat32);
  EXPECT_EQ(input_dtype(fast, "follows_fp32", 0), DType::kFloat32);
  EXPECT_EQ(report.casts, 2);  // x to bf16, follows_low's output back
  // The bf16 graph runs (the provider's kernels and the reference) and gives the signs.
  const Tensor x = Tensor::from_vector<float>({-2, 0, 0.5f, 3}, Shape{1, 4});
  const std::vector<Tensor> got = Predictor(fast.clone()).predict({x});
  for (const Tensor& t : got) EXPECT_EQ(t.to_vector<float>(), (std::vector<float>{-1, 0, 1, 1}));
  const Graph by_schema = convert_float(sign_graph(), kBySchema);
  for (const char* name : {"low_fast_sign", "follows_low", "fp32_fast_sign", "follows_fp32"})
    EXPECT_EQ(input_dtype(by_schema, name, 0), DType::kBFloat16) << name;
}

const std::string kPython = std::string(KILN_SOURCE_DIR) + "/.venv/bin/python";

bool python_has(const std::string& module) {
  int status = 0;
  testing::run_command(kPython + " -c 'import " + module + "' 2>/dev/null", status);
  return status == 0;
}

void run_python(const std::string& script_and_args) {
  int status = 0;
  const std::string out = testing::run_command(
      kPython + " " + KILN_SOURCE_DIR + "/tests/tools/" + script_and_args + " 2>&1", status);
  ASSERT_EQ(status, 0) << out;
}

// The exported files are valid ONNX; ONNX Runtime runs the fp16 one (its CPU kernels cover
// fp16 Conv, Relu, MaxPool, Gemm; bf16 ones it lacks) with the outputs Kiln gets from that file.
TEST(MixedPrecision, ExportedFilesPassTheCheckerAndRunInOnnxRuntime) {
  ASSERT_TRUE(python_has("onnxruntime")) << "no onnxruntime in .venv: run scripts/setup.sh";
  testing::TempDir dir;
  run_python("qdq_onnxruntime.py make " + dir.path().string());
  const Tensor x = npy::load(dir / "input.npy");
  const Tensor fp32 = Predictor::load(dir / "float.onnx").predict({x})[0];
  for (const char* low : {"fp16", "bf16"}) {
    const std::string path = dir / (std::string(low) + ".onnx");
    // Converted by the schemas alone, as for another runtime: every Conv in the low type. ONNX's
    // Conv, MaxPool and GlobalAveragePool take bf16 from opset 22 on.
    const Graph converted = convert_float(onnx::import_model(dir / "float.onnx"),
                                          {.low_type = parse_low_type(low), .fast_kernels_only = false});
    int low_convs = 0;
    for (const Node* n : converted.nodes())
      low_convs += n->op == "Conv" && n->inputs[0]->info->dtype != DType::kFloat32;
    EXPECT_EQ(low_convs, 3) << low;
    onnx::export_model(converted, path, {.opset = std::string(low) == "bf16" ? 22 : 17});
    const Tensor kiln = Predictor::load(path, {.opt_level = "all"}).predict({x})[0];
    std::cout << low << ": |Kiln - fp32| " << max_abs_difference(kiln, fp32) << " of max " << max_abs(fp32)
              << "\n";
    EXPECT_LE(max_abs_difference(kiln, fp32), 0.03f * max_abs(fp32)) << low;
    if (std::string(low) == "bf16") {
      run_python("mixed_precision_onnxruntime.py check " + path);
      continue;
    }
    run_python("mixed_precision_onnxruntime.py run " + path + " " + (dir / "input.npy") + " " +
               (dir / "ort_fp16.npy"));
    const Tensor ort = npy::load(dir / "ort_fp16.npy");
    std::cout << "fp16: |Kiln - ORT| " << max_abs_difference(kiln, ort) << "\n";
    // Both compute in fp16 from the same fp16 weights; they differ in accumulation order and in
    // where they round (ORT after each op, oneDNN at the ends of fused chains).
    EXPECT_LE(max_abs_difference(kiln, ort), 0.01f * max_abs(fp32));
  }
}

}  // namespace
}  // namespace kiln::mixed_precision
