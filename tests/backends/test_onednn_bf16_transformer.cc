// A transformer encoder layer in a bf16 plan: the values between MatMuls (projections, attention
// heads through Reshape and Transpose, Softmax's output, the feed-forward's hidden layer) stay in
// bf16 with no conversion step, the attention scores and the residual stream stay float32 (the
// precision islands), and the result agrees with the reference kernels. In a float32 plan the same
// graph runs on the fast kernels within 1e-5 of the reference, with every value row-major.
#include <gtest/gtest.h>

#include <algorithm>
#include <set>

#include "onednn_test_util.h"

namespace kiln::onednn {
namespace {

using graph::Value;

constexpr int64_t kBatch = 2, kSeq = 16, kHidden = 64, kHeads = 4, kHeadDim = 16, kInner = 128;

struct Layer {
  graph::Graph graph;
  std::set<std::string> float32_values;  // what the bf16 plan must keep in float32
};

// BERT's layer as PyTorch exports it (Gelu already recognized and fused into the first
// feed-forward MatMul with its bias), on an input of (kBatch, kSeq, kHidden) and an additive mask
// of (kBatch, 1, 1, kSeq).
Layer encoder_layer(std::mt19937& rng) {
  Layer layer;
  graph::Graph& g = layer.graph;
  g.name = "encoder_layer";
  Value* x = g.add_input("x", ops::TensorInfo{DType::kFloat32, Shape{kBatch, kSeq, kHidden}});
  Value* mask = g.add_input("mask", ops::TensorInfo{DType::kFloat32, Shape{kBatch, 1, 1, kSeq}});
  const auto constant = [&](const std::string& name, const Tensor& value) {
    return g.add_initializer(name, value);
  };
  const auto weight = [&](const std::string& name, const Shape& shape) {
    return constant(name, random_tensor(shape, rng, -0.15f, 0.15f));
  };
  const auto shape = [&](const std::string& name, std::vector<int64_t> dims) {
    const auto n = static_cast<int64_t>(dims.size());
    return constant(name, Tensor::from_vector<int64_t>(dims, Shape{n}));
  };
  const auto node = [&](const std::string& op, std::vector<Value*> inputs, const std::string& name,
                        AttrMap attrs = {}) {
    return g.add_node(op, std::move(inputs), attrs, name)->outputs[0];
  };
  const auto norm = [&](Value* in, const std::string& name) {
    return node("LayerNormalization",
                {in, constant(name + "_g", random_tensor({kHidden}, rng, 0.5f, 1.5f)),
                 constant(name + "_b", random_tensor({kHidden}, rng))},
                name, {{"axis", int64_t{-1}}});
  };
  const auto heads = [&](Value* in, const std::string& name, std::vector<int64_t> perm) {
    Value* split =
        node("Reshape", {in, shape(name + "_shape", {kBatch, kSeq, kHeads, kHeadDim})}, name + "_split");
    return node("Transpose", {split}, name + "_heads", {{"perm", perm}});
  };
  Value* h = norm(x, "ln0");
  Value* q = heads(node("MatMul", {h, weight("wq", {kHidden, kHidden})}, "q"), "q", {0, 2, 1, 3});
  Value* k = heads(node("MatMul", {h, weight("wk", {kHidden, kHidden})}, "k"), "k", {0, 2, 3, 1});
  Value* v = heads(node("MatMul", {h, weight("wv", {kHidden, kHidden})}, "v"), "v", {0, 2, 1, 3});
  Value* scores = node("MatMul", {q, k}, "scores");
  Value* scaled = node("Div", {scores, constant("scale", Tensor::scalar(4.0, DType::kFloat32))}, "scaled");
  Value* masked = node("Add", {scaled, mask}, "masked");
  Value* probs = node("Softmax", {masked}, "probs", {{"axis", int64_t{-1}}});
  Value* context = node("MatMul", {probs, v}, "context");
  Value* merged =
      node("Reshape",
           {node("Transpose", {context}, "context_t", {{"perm", std::vector<int64_t>{0, 2, 1, 3}}}),
            shape("merge_shape", {kBatch, kSeq, kHidden})},
           "merged");
  Value* attention = node("MatMul", {merged, weight("wo", {kHidden, kHidden})}, "attention");
  Value* sum1 = node("Add", {attention, h}, "sum1");
  Value* h1 = norm(sum1, "ln1");
  Value* inner = node("FusedMatMul", {h1, weight("w1", {kHidden, kInner}), weight("b1", {kInner})}, "ffn1",
                      {{"activation", std::string("Gelu")}});
  Value* ffn = node("MatMul", {inner, weight("w2", {kInner, kHidden})}, "ffn2");
  Value* sum2 = node("Add", {ffn, h1}, "sum2");
  g.set_outputs({norm(sum2, "ln2")});
  g.infer_shapes();
  // Softmax's input and everything on the residual stream (the normalized values, the sums and
  // the MatMul outputs added to them).
  layer.float32_values = {"scores", "scaled", "masked", "ln0", "ln1", "attention", "sum1", "ffn2", "sum2"};
  return layer;
}

std::vector<Tensor> layer_inputs(std::mt19937& rng) {
  std::vector<float> mask(static_cast<size_t>(kBatch * kSeq), 0.f);
  for (int64_t j = kSeq - 5; j < kSeq; ++j) mask[static_cast<size_t>(kSeq + j)] = -10000.f;  // padding
  return {random_tensor({kBatch, kSeq, kHidden}, rng), Tensor::from_vector(mask, Shape{kBatch, 1, 1, kSeq})};
}

double max_relative_difference(const Tensor& got, const Tensor& want) {
  const auto a = got.to_vector<float>(), b = want.to_vector<float>();
  double diff = 0, scale = 1e-6;
  for (size_t i = 0; i < a.size(); ++i) {
    diff = std::max(diff, static_cast<double>(std::fabs(a[i] - b[i])));
    scale = std::max(scale, static_cast<double>(std::fabs(b[i])));
  }
  return diff / scale;
}

// On a CPU where oneDNN computes no bfloat16, a bf16 plan must be the float32 plan: the same
// kernels, step for step (not the reference kernels where oneDNN refuses bf16).
void expect_providers_of_float32_plan_unless_bf16(const graph::Graph& g, const runtime::Plan& plan) {
  if (cpu_computes_bf16()) return;
  const auto float32 = runtime::compile(g, {.providers = {onednn_provider()}});
  ASSERT_EQ(plan.steps.size(), float32->steps.size());
  for (size_t i = 0; i < plan.steps.size(); ++i)
    EXPECT_EQ(plan.steps[i].provider, float32->steps[i].provider) << plan.steps[i].label;
}

TEST(OnednnBf16Transformer, ValuesStayInBfloat16BetweenKernelsWithFloat32Islands) {
  std::mt19937 rng(21);
  const Layer layer = encoder_layer(rng);
  const std::vector<Tensor> inputs = layer_inputs(rng);
  const std::vector<Tensor> want = runtime::Executor(runtime::compile(layer.graph)).run(inputs);
  const auto plan = runtime::compile(
      layer.graph, {.providers = {onednn_provider()}, .precision = runtime::Precision::kBFloat16});
  // Small float32 sums and scalings may stay with the reference kernels; everything else is oneDNN's.
  // Where oneDNN computes no bfloat16 (AVX2 CPUs) the plan is the float32 plan, kernel for kernel:
  // no bf16 value, and float32's accuracy.
  const bool bf16 = cpu_computes_bf16();
  expect_providers_of_float32_plan_unless_bf16(layer.graph, *plan);
  const std::set<std::string> elementwise = {"Add", "Div"};
  for (const runtime::PlanStep& step : plan->steps) {
    EXPECT_NE(step.schema->name(), "Reorder") << "a conversion step: " << step.label;
    if (bf16 && !elementwise.count(step.schema->name())) {
      EXPECT_EQ(step.provider, "onednn") << step.label;
    }
  }
  int bf16_values = 0;
  for (const runtime::PlanValue& value : plan->values) {
    if (layer.float32_values.count(value.name)) {
      EXPECT_EQ(value.layout, nullptr) << value.name << " must stay float32 row-major";
    } else if (value.layout != nullptr) {
      const bool in_bf16 = value.layout->describe().find(" bf16") != std::string::npos;
      EXPECT_EQ(in_bf16, bf16) << value.layout->describe();
      bf16_values += in_bf16 ? 1 : 0;
    }
  }
  // q, k and v with their split and transposed heads, probs, context and its merged form, ffn1.
  EXPECT_EQ(bf16_values, bf16 ? 14 : 0);
  const std::vector<Tensor> got = runtime::Executor(plan).run(inputs);
  ASSERT_EQ(got.size(), 1u);
  EXPECT_EQ(got[0].dtype(), DType::kFloat32);
  // Three bf16 MatMul stages with float32 accumulation: a few 2^-8 of the output's range.
  EXPECT_LT(max_relative_difference(got[0], want[0]), bf16 ? 3e-2 : 1e-4);
}

// A bf16 value that a Transpose (default perm: reversed axes) and a Reshape read: both run on
// oneDNN in bf16, and the graph outputs they produce come back row-major float32.
TEST(OnednnBf16Transformer, TransposeAndReshapeOfBfloat16ValuesFeedGraphOutputs) {
  std::mt19937 rng(23);
  graph::Graph g;
  g.name = "heads";
  Value* x = g.add_input("x", ops::TensorInfo{DType::kFloat32, Shape{2, 6, 8}});
  Value* w = g.add_initializer("w", random_tensor({8, 12}, rng));
  Value* y = g.add_node("MatMul", {x, w}, {}, "proj")->outputs[0];
  Value* t = g.add_node("Transpose", {y}, {}, "flip")->outputs[0];
  Value* r = g.add_node("Reshape",
                        {y, g.add_initializer("shape", Tensor::from_vector<int64_t>({2, 6, 3, 4}, Shape{4}))},
                        {}, "split")
                 ->outputs[0];
  Value* h = g.add_node("Transpose", {r}, {{"perm", std::vector<int64_t>{0, 2, 1, 3}}}, "heads")->outputs[0];
  g.set_outputs({t, h});
  g.infer_shapes();
  const std::vector<Tensor> inputs{random_tensor({2, 6, 8}, rng)};
  const std::vector<Tensor> want = runtime::Executor(runtime::compile(g)).run(inputs);
  const auto plan =
      runtime::compile(g, {.providers = {onednn_provider()}, .precision = runtime::Precision::kBFloat16});
  expect_providers_of_float32_plan_unless_bf16(g, *plan);
  for (const runtime::PlanStep& step : plan->steps) {
    if (step.schema->name() == "Reshape" && cpu_computes_bf16()) {
      EXPECT_EQ(step.provider, "onednn") << step.label;
    }
  }
  const std::vector<Tensor> got = runtime::Executor(plan).run(inputs);
  ASSERT_EQ(got.size(), 2u);
  for (size_t k = 0; k < got.size(); ++k) {
    EXPECT_EQ(got[k].dtype(), DType::kFloat32);
    EXPECT_EQ(got[k].shape(), want[k].shape());
    EXPECT_LT(max_relative_difference(got[k], want[k]), 1e-2) << "output " << k;
  }
}

TEST(OnednnBf16Transformer, Float32PlansKeepEveryValueRowMajorAndMatchTheReference) {
  std::mt19937 rng(22);
  const Layer layer = encoder_layer(rng);
  const std::vector<Tensor> inputs = layer_inputs(rng);
  const std::vector<Tensor> want = runtime::Executor(runtime::compile(layer.graph)).run(inputs);
  const auto plan = runtime::compile(layer.graph, {.providers = {onednn_provider()}});
  for (const runtime::PlanValue& value : plan->values) EXPECT_EQ(value.layout, nullptr) << value.name;
  const std::vector<Tensor> got = runtime::Executor(plan).run(inputs);
  EXPECT_LT(max_relative_difference(got[0], want[0]), 1e-5);
}

}  // namespace
}  // namespace kiln::onednn
