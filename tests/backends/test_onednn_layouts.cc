// Activations kept in oneDNN's layouts between oneDNN kernels (OnednnLayout), and bf16 plans:
// a small residual CNN runs with the fast kernels and agrees with the reference kernels, its
// intermediates really stay in oneDNN layouts, and the values other kernels read (Flatten) or
// the caller gets (graph outputs, also one in the middle of the chain) are row-major. Concat joins
// values in oneDNN layouts, float32 and the int8 ones of int8 convolutions.
#include <gtest/gtest.h>

#include <algorithm>

#include "onednn_test_util.h"

namespace kiln::onednn {
namespace {

using graph::Value;

// conv 3x3 (3 -> 32) + relu -> max pool 2x2 -> conv 3x3 (32 -> 32) + the pooled input as a
// residual + relu -> conv 1x1 (32 -> 48) -> global average pool -> flatten; the pooled tensor is
// also a graph output.
graph::Graph residual_cnn(std::mt19937& rng) {
  graph::Graph g;
  g.name = "residual_cnn";
  Value* x = g.add_input("data", ops::TensorInfo{DType::kFloat32, Shape{2, 3, 20, 20}});
  const auto weight = [&](const std::string& name, const Shape& shape) {
    return g.add_initializer(name, random_tensor(shape, rng, -0.3f, 0.3f));
  };
  const AttrMap pad1{{"pads", std::vector<int64_t>{1, 1, 1, 1}}};
  AttrMap relu = pad1;
  relu.insert_or_assign("activation", AttrValue(std::string("Relu")));
  Value* c1 =
      g.add_node("FusedConv", {x, weight("w1", {32, 3, 3, 3}), weight("b1", {32})}, relu, "c1")->outputs[0];
  Value* p1 =
      g.add_node("MaxPool", {c1},
                 {{"kernel_shape", std::vector<int64_t>{2, 2}}, {"strides", std::vector<int64_t>{2, 2}}},
                 "p1")
          ->outputs[0];
  Value* c2 = g.add_node("FusedConv", {p1, weight("w2", {32, 32, 3, 3}), weight("b2", {32}), p1}, relu, "c2")
                  ->outputs[0];
  Value* c3 = g.add_node("Conv", {c2, weight("w3", {48, 32, 1, 1})}, {}, "c3")->outputs[0];
  Value* gap = g.add_node("GlobalAveragePool", {c3}, {}, "gap")->outputs[0];
  g.set_outputs({g.add_node("Flatten", {gap}, {}, "flat")->outputs[0], p1});
  g.infer_shapes();
  return g;
}

void expect_close(const std::vector<Tensor>& got, const std::vector<Tensor>& want, double tolerance) {
  ASSERT_EQ(got.size(), want.size());
  for (size_t k = 0; k < got.size(); ++k) {
    ASSERT_EQ(got[k].shape(), want[k].shape());
    const auto a = got[k].to_vector<float>(), b = want[k].to_vector<float>();
    float scale = 1e-6f;
    for (float v : b) scale = std::max(scale, std::fabs(v));
    for (size_t i = 0; i < a.size(); ++i)
      ASSERT_NEAR(a[i], b[i], tolerance * scale) << "output " << k << " element " << i;
  }
}

struct Compiled {
  std::shared_ptr<const runtime::Plan> plan;
  std::vector<std::string> layouts;  // describe() of every value kept in a oneDNN layout
  int reorders = 0;                  // steps converting to row-major
};

Compiled compile_fast(const graph::Graph& g, runtime::Precision precision) {
  Compiled c;
  c.plan = runtime::compile(g, {.providers = {onednn_provider()}, .precision = precision});
  for (const runtime::PlanValue& v : c.plan->values)
    if (v.layout != nullptr) c.layouts.push_back(v.layout->describe());
  for (const runtime::PlanStep& s : c.plan->steps) c.reorders += s.schema->name() == "Reorder" ? 1 : 0;
  for (int id : c.plan->outputs) EXPECT_EQ(c.plan->values[static_cast<size_t>(id)].layout, nullptr);
  return c;
}

TEST(OnednnLayouts, ChainsStayInOneDnnLayoutsAndAgreeWithTheReference) {
  std::mt19937 rng(7);
  const graph::Graph g = residual_cnn(rng);
  const Tensor x = random_tensor({2, 3, 20, 20}, rng);
  const std::vector<Tensor> want = runtime::Executor(runtime::compile(g)).run({x});
  const Compiled fast = compile_fast(g, runtime::Precision::kFloat32);
  // c1 and c2 feed only oneDNN kernels; c3 feeds the pool; the pool feeds Flatten (a reorder).
  EXPECT_GE(fast.layouts.size(), 3u);
  EXPECT_EQ(fast.reorders, 1);
  for (const std::string& d : fast.layouts) EXPECT_NE(d.find(" f32"), std::string::npos) << d;
  expect_close(runtime::Executor(fast.plan).run({x}), want, 1e-5);
}

TEST(OnednnLayouts, Bfloat16PlansComputeConvolutionsInBfloat16) {
  std::mt19937 rng(8);
  const graph::Graph g = residual_cnn(rng);
  const Tensor x = random_tensor({2, 3, 20, 20}, rng);
  const std::vector<Tensor> want = runtime::Executor(runtime::compile(g)).run({x});
  const Compiled bf16 = compile_fast(g, runtime::Precision::kBFloat16);
  // Where oneDNN computes no bfloat16 (AVX2 CPUs) the plan keeps float32 layouts and accuracy.
  const bool computes_bf16 = cpu_computes_bf16();
  ASSERT_FALSE(bf16.layouts.empty());
  for (const std::string& d : bf16.layouts)
    EXPECT_NE(d.find(computes_bf16 ? " bf16" : " f32"), std::string::npos) << d;
  const std::vector<Tensor> got = runtime::Executor(bf16.plan).run({x});
  for (const Tensor& t : got) EXPECT_EQ(t.dtype(), DType::kFloat32);
  // bf16 keeps 8 bits of mantissa: a few 2^-8 of relative error over three layers.
  expect_close(got, want, computes_bf16 ? 3e-2 : 1e-5);
}

// Two convolutions joined along the channels and convolved again (YOLO's C3 block): the Concat
// takes and keeps their layout, so nothing goes to row-major until the graph output.
TEST(OnednnLayouts, ConcatJoinsValuesInOneDnnLayouts) {
  std::mt19937 rng(9);
  graph::Graph g;
  g.name = "c3";
  Value* x = g.add_input("data", ops::TensorInfo{DType::kFloat32, Shape{1, 16, 12, 12}});
  const auto conv = [&](Value* in, int64_t in_channels, int64_t out_channels, const std::string& name) {
    Value* w =
        g.add_initializer(name + "_w", random_tensor({out_channels, in_channels, 1, 1}, rng, -0.3f, 0.3f));
    return g.add_node("Conv", {in, w}, {}, name)->outputs[0];
  };
  Value* a = conv(x, 16, 16, "a");
  Value* b = conv(x, 16, 32, "b");
  Value* joined = g.add_node("Concat", {a, b}, {{"axis", int64_t{1}}}, "join")->outputs[0];
  g.set_outputs({conv(joined, 48, 16, "c")});
  g.infer_shapes();
  const Tensor in = random_tensor({1, 16, 12, 12}, rng);
  const std::vector<Tensor> want = runtime::Executor(runtime::compile(g)).run({in});
  const Compiled fast = compile_fast(g, runtime::Precision::kFloat32);
  for (const runtime::PlanStep& s : fast.plan->steps) EXPECT_EQ(s.provider, "onednn") << s.label;
  EXPECT_EQ(fast.reorders, 0);
  expect_close(runtime::Executor(fast.plan).run({in}), want, 1e-5);
}

// A float residual's buffer becomes the output's when the FusedConv is its last reader: the sum
// post-op accumulates onto Z where it lies, with no copy (Z and the output share an arena offset),
// on random batch sizes, channel counts (blocks of 16, so that both convolutions pick one layout)
// and image sizes; the result is the reference kernels'. With Z read again after the FusedConv,
// it is copied into the output instead and stays intact for that reader. Likewise in a bf16 plan.
TEST(OnednnLayouts, FloatResidualAccumulatesInPlace) {
  std::mt19937 rng(13);
  std::uniform_int_distribution<int64_t> batch(1, 3), blocks(1, 3), side(5, 17);
  for (int trial = 0; trial < 6; ++trial) {
    const bool z_read_later = trial % 3 == 2;
    const Shape shape{batch(rng), 16 * blocks(rng), side(rng), side(rng)};
    SCOPED_TRACE(shape.to_string() + (z_read_later ? ", Z read later" : ""));
    const int64_t c = shape[1];
    graph::Graph g;
    g.name = "float_residual";
    Value* x = g.add_input("x", ops::TensorInfo{DType::kFloat32, shape});
    const auto weight = [&](const std::string& name, const Shape& w) {
      return g.add_initializer(name, random_tensor(w, rng, -0.3f, 0.3f));
    };
    Value* z = g.add_node("FusedConv", {x, weight("w1", {c, c, 1, 1}), weight("b1", {c})},
                          {{"activation", AttrValue(std::string("Relu"))}}, "z")
                   ->outputs[0];
    Value* y = g.add_node("FusedConv", {x, weight("w2", {c, c, 3, 3}), weight("b2", {c}), z},
                          {{"pads", std::vector<int64_t>{1, 1, 1, 1}},
                           {"activation", AttrValue(std::string("Relu"))}},
                          "y")
                   ->outputs[0];
    // Graph outputs are allocated by the call, outside the arena: pool y (a 1x1 window) into one.
    const AttrMap window{{"kernel_shape", std::vector<int64_t>{1, 1}}};
    std::vector<Value*> outputs{g.add_node("MaxPool", {y}, window, "out")->outputs[0]};
    if (z_read_later) outputs.push_back(g.add_node("Add", {y, z}, {}, "again")->outputs[0]);
    g.set_outputs(outputs);
    g.infer_shapes();
    const Tensor in = random_tensor(shape, rng);
    const std::vector<Tensor> want = runtime::Executor(runtime::compile(g)).run({in});
    const Compiled fast = compile_fast(g, runtime::Precision::kFloat32);
    ASSERT_EQ(fast.plan->steps.at(1).provider, "onednn");
    const runtime::PlanValue& z_value =
        fast.plan->values.at(static_cast<size_t>(fast.plan->steps[0].outputs[0]));
    const runtime::PlanValue& y_value =
        fast.plan->values.at(static_cast<size_t>(fast.plan->steps[1].outputs[0]));
    ASSERT_NE(z_value.layout, nullptr);
    if (z_read_later) {
      EXPECT_NE(y_value.offset, z_value.offset) << "Z is read after the FusedConv and must stay intact";
    } else {
      EXPECT_EQ(y_value.offset, z_value.offset) << "the output did not take over the residual's buffer";
    }
    expect_close(runtime::Executor(fast.plan).run({in}), want, 1e-5);
    // A bf16 plan keeps Z in bf16 in the output's layout: the same buffer sharing, 8-bit mantissas.
    const Compiled bf16 = compile_fast(g, runtime::Precision::kBFloat16);
    const auto offset_of = [&](int step) {
      return bf16.plan->values
          .at(static_cast<size_t>(bf16.plan->steps.at(static_cast<size_t>(step)).outputs[0]))
          .offset;
    };
    // Where oneDNN computes no bfloat16 (AVX2 CPUs) that plan is float32's.
    if (!z_read_later && cpu_computes_bf16()) {
      EXPECT_EQ(offset_of(1), offset_of(0)) << "bf16: the output did not take over Z's buffer";
    }
    expect_close(runtime::Executor(bf16.plan).run({in}), want, cpu_computes_bf16() ? 3e-2 : 1e-5);
  }
}

// An int8 convolution: u8 x (scale 0.02) and s8 weights (scale 0.005), u8 output (scale 0.05). The
// weights lie in [-64, 63], which oneDNN multiplies exactly on CPUs without VNNI too.
Value* int8_conv(graph::Graph& g, Value* x, int64_t in_channels, int64_t out_channels,
                 const std::string& name, std::mt19937& rng) {
  std::uniform_int_distribution<int> dist(-64, 63);
  std::vector<float> w(static_cast<size_t>(out_channels * in_channels));
  for (float& v : w) v = static_cast<float>(dist(rng));
  const auto scalar = [&](const std::string& what, double v, DType type) {
    return g.add_initializer(name + "_" + what, Tensor::scalar(v, type));
  };
  return g
      .add_node("FusedQLinearConv",
                {x, scalar("x_scale", 0.02, DType::kFloat32), nullptr,
                 g.add_initializer(
                     name + "_w",
                     Tensor::from_vector(w, Shape{out_channels, in_channels, 1, 1}).cast(DType::kInt8)),
                 scalar("w_scale", 0.005, DType::kFloat32), nullptr, scalar("y_scale", 0.05, DType::kFloat32),
                 scalar("y_zero_point", 0, DType::kUInt8)},
                {}, name)
      ->outputs[0];
}

TEST(OnednnLayouts, ConcatJoinsInt8ValuesInOneDnnLayouts) {
  std::mt19937 rng(11);
  graph::Graph g;
  g.name = "c3_int8";
  Value* x = g.add_input("data", ops::TensorInfo{DType::kUInt8, Shape{1, 16, 9, 7}});
  Value* joined = g.add_node("Concat", {int8_conv(g, x, 16, 16, "a", rng), int8_conv(g, x, 16, 24, "b", rng)},
                             {{"axis", int64_t{1}}}, "join")
                      ->outputs[0];
  g.set_outputs({int8_conv(g, joined, 40, 8, "c", rng)});
  g.infer_shapes();
  std::uniform_int_distribution<int> dist(0, 255);
  std::vector<float> values(16 * 9 * 7);
  for (float& v : values) v = static_cast<float>(dist(rng));
  const Tensor in = Tensor::from_vector(values, Shape{1, 16, 9, 7}).cast(DType::kUInt8);
  const std::vector<Tensor> want = runtime::Executor(runtime::compile(g)).run({in});
  const Compiled fast = compile_fast(g, runtime::Precision::kFloat32);
  for (const runtime::PlanStep& s : fast.plan->steps) EXPECT_EQ(s.provider, "onednn") << s.label;
  EXPECT_EQ(fast.reorders, 0);
  // The int8 kernels round once, the reference in float: an output may land one step away.
  const std::vector<Tensor> got = runtime::Executor(fast.plan).run({in});
  const auto a = got[0].cast(DType::kFloat32).to_vector<float>(),
             b = want[0].cast(DType::kFloat32).to_vector<float>();
  ASSERT_EQ(a.size(), b.size());
  for (size_t i = 0; i < a.size(); ++i) ASSERT_NEAR(a[i], b[i], 1.0f) << "element " << i;
}

}  // namespace
}  // namespace kiln::onednn
