// oneDNN's int8 kernels against the reference kernels, which compute the QDQ graph's own result
// in float. FusedQLinearConv: u8 and s8 activations with and without zero points, per-tensor and
// per-channel weight scales, bias, residual (of the output's type and of the other 8-bit type),
// Relu, Clip, SiLU, HardSwish and LeakyRelu (the residual before or after it), grouped and depthwise, strided
// and padded, float32 output. FusedQLinearMatMul: 2-D and batched rows, per-column and per-tensor scales,
// zero points, bias, Relu, float32 output; FusedDynamicQLinearMatMul. The kernels compute in integers and
// round once at the end, the reference in float: an output may land on the neighbouring 8-bit step, never
// further. Also MaxPool on 8-bit values.
#include <gtest/gtest.h>

#include <random>

#include "backends/onednn_test_util.h"

namespace kiln::onednn {
namespace {

using Ints = std::vector<int64_t>;

struct QConvCase {
  Shape x, w;
  AttrMap attrs;
  DType x_type = DType::kUInt8;
  int x_zero = 0;
  bool per_channel = true;
  bool bias = true;
  std::optional<DType> z_type;  // a residual of this type
  std::optional<DType> y_type;  // nullopt: float32 output
  int y_zero = 0;
  std::optional<DType> mid_type;  // ONNX Runtime's requantization before the residual
};

Tensor random_8bit(const Shape& shape, DType type, std::mt19937& rng) {
  const bool is_signed = type == DType::kInt8;
  std::uniform_int_distribution<int> dist(is_signed ? -128 : 0, is_signed ? 127 : 255);
  std::vector<float> v(static_cast<size_t>(shape.numel()));
  for (float& e : v) e = static_cast<float>(dist(rng));
  return Tensor::from_vector(v, shape).cast(type);
}

// Weights oneDNN multiplies exactly on any CPU: in [-64, 63] (see int8_products_exact); the full
// s8 range has a test of its own.
Tensor random_weights(const Shape& shape, std::mt19937& rng) {
  std::uniform_int_distribution<int> dist(-64, 63);
  std::vector<float> v(static_cast<size_t>(shape.numel()));
  for (float& e : v) e = static_cast<float>(dist(rng));
  return Tensor::from_vector(v, shape).cast(DType::kInt8);
}

void check(const QConvCase& c, std::mt19937& rng) {
  const int64_t out_channels = c.w[0];
  std::vector<Operand> in(12);
  in[0] = {random_8bit(c.x, c.x_type, rng)};
  in[1] = {Tensor::scalar(0.02, DType::kFloat32), true};
  if (c.x_zero != 0) in[2] = {Tensor::scalar(c.x_zero, c.x_type), true};
  Tensor w = random_weights(c.w, rng);
  in[3] = {w, true};
  in[4] = {c.per_channel ? random_tensor(Shape{out_channels}, rng, 0.002f, 0.01f)
                         : Tensor::scalar(0.005, DType::kFloat32),
           true};
  in[5] = {Tensor::zeros(c.per_channel ? Shape{out_channels} : Shape{}, DType::kInt8), true};
  if (c.bias) in[8] = {random_tensor(Shape{out_channels}, rng, -0.5f, 0.5f), true};
  // The output's scale: its float range (computed by the reference) over about 200 steps.
  std::vector<Tensor> float_inputs;
  for (const Operand& o : in) float_inputs.push_back(o.value);
  const ops::OpSchema& schema = ops::OpRegistry::global().get("FusedQLinearConv");
  const Shape y_shape =
      schema.run_reference(schema.bind(c.attrs), {float_inputs.begin(), float_inputs.begin() + 9})[0].shape();
  if (c.z_type) {
    in[9] = {random_8bit(y_shape, *c.z_type, rng)};
    in[10] = {Tensor::scalar(0.03, DType::kFloat32), true};
  }
  in.resize(14);
  if (c.mid_type) {
    in[12] = {Tensor::scalar(0.04, DType::kFloat32), true};
    in[13] = {Tensor::scalar(*c.mid_type == DType::kUInt8 ? 100 : -3, *c.mid_type), true};
  }
  float_inputs.clear();
  for (const Operand& o : in) float_inputs.push_back(o.value);
  const Tensor y_float = schema.run_reference(schema.bind(c.attrs), float_inputs)[0];
  double range = 1e-3;
  for (float v : y_float.to_vector<float>()) range = std::max(range, static_cast<double>(std::fabs(v)));
  if (c.y_type) {
    in[6] = {Tensor::scalar(range / 100, DType::kFloat32), true};
    in[7] = {Tensor::scalar(c.y_zero, *c.y_type), true};
  }
  while (!in.back().value.defined()) in.pop_back();
  // Integer outputs: one step, as a share of the output's largest value; float: the rounding of
  // float32 sums.
  double tolerance = 1e-4;
  if (c.y_type) {
    float_inputs.clear();
    for (const Operand& o : in) float_inputs.push_back(o.value);
    const Tensor want = schema.run_reference(schema.bind(c.attrs), float_inputs)[0];
    double largest = 1;
    for (float v : want.cast(DType::kFloat32).to_vector<float>())
      largest = std::max(largest, std::fabs(double{v}));
    tolerance = 1.01 / largest;
  }
  // oneDNN's AVX2 int8 kernels do not cover every grouped convolution (2 channels per group): either
  // provider may take one on a CPU without VNNI.
  const bool grouped = c.attrs.count("group") && std::get<int64_t>(c.attrs.at("group").variant()) != c.x[1];
  const std::optional<std::string> provider = grouped && !cpu_has_int8_dot_product()
                                                  ? std::nullopt
                                                  : std::optional<std::string>(int8_provider(c.x_type));
  compare("FusedQLinearConv", c.attrs, in, {.provider = provider, .tolerance = tolerance});
}

TEST(OnednnQLinearConv, AgreesWithTheReference) {
  std::mt19937 rng(8);
  const std::vector<QConvCase> cases{
      {{1, 16, 9, 9},
       {32, 16, 3, 3},
       {{"pads", Ints{1, 1, 1, 1}}, {"activation", "Relu"}},
       DType::kUInt8,
       0,
       true,
       true,
       std::nullopt,
       DType::kUInt8},
      {{2, 8, 12, 10},
       {16, 8, 3, 3},
       {{"strides", Ints{2, 2}}, {"pads", Ints{1, 0, 1, 1}}},
       DType::kInt8,
       0,
       false,
       true,
       std::nullopt,
       DType::kInt8},
      // ONNX Runtime's form: uint8 activations with zero points.
      {{1, 8, 7, 7}, {8, 8, 1, 1}, {}, DType::kUInt8, 128, true, true, std::nullopt, DType::kUInt8, 128},
      // Residuals, of the output's type and of the other one, then Relu.
      {{1, 16, 8, 8},
       {16, 16, 1, 1},
       {{"activation", "Relu"}},
       DType::kUInt8,
       0,
       true,
       true,
       DType::kUInt8,
       DType::kUInt8},
      {{1, 16, 8, 8},
       {32, 16, 1, 1},
       {{"activation", "Relu"}},
       DType::kUInt8,
       0,
       true,
       false,
       DType::kInt8,
       DType::kUInt8},
      // Grouped and depthwise, Clip as ReLU6.
      {{1, 8, 10, 10},
       {8, 2, 3, 3},
       {{"group", int64_t{4}}, {"pads", Ints{1, 1, 1, 1}}},
       DType::kUInt8,
       0,
       true,
       true,
       std::nullopt,
       DType::kInt8},
      {{1, 16, 10, 10},
       {16, 1, 3, 3},
       {{"group", int64_t{16}},
        {"strides", Ints{2, 2}},
        {"pads", Ints{1, 1, 1, 1}},
        {"activation", "Clip"},
        {"activation_params", std::vector<double>{0.0, 6.0}}},
       DType::kUInt8,
       0,
       true,
       true,
       std::nullopt,
       DType::kUInt8},
      // ONNX Runtime's residual: requantized (u8 with a zero point, or s8) before the Add, then Relu.
      {{1, 16, 8, 8},
       {16, 16, 1, 1},
       {{"activation", "Relu"}},
       DType::kUInt8,
       0,
       true,
       true,
       DType::kUInt8,
       DType::kUInt8,
       0,
       DType::kUInt8},
      {{1, 8, 6, 6},
       {8, 8, 3, 3},
       {{"pads", Ints{1, 1, 1, 1}}},
       DType::kUInt8,
       7,
       true,
       true,
       DType::kInt8,
       DType::kInt8,
       0,
       DType::kInt8},
      // YOLOv5's SiLU, HardSwish and LeakyRelu before the requantization; odd sizes.
      {{1, 5, 13, 11},
       {7, 5, 3, 3},
       {{"pads", Ints{1, 1, 1, 1}}, {"strides", Ints{2, 2}}, {"activation", "SiLU"}},
       DType::kInt8,
       0,
       true,
       true,
       std::nullopt,
       DType::kInt8},
      {{1, 12, 9, 9},
       {24, 12, 1, 1},
       {{"activation", "HardSwish"}},
       DType::kUInt8,
       3,
       true,
       true,
       std::nullopt,
       DType::kInt8},
      {{1, 6, 7, 5},
       {9, 6, 3, 3},
       {{"pads", Ints{0, 1, 0, 1}},
        {"activation", "LeakyRelu"},
        {"activation_params", std::vector<double>{0.1}}},
       DType::kInt8,
       0,
       false,
       true,
       std::nullopt,
       DType::kUInt8},
      // A residual, then SiLU.
      {{1, 8, 5, 5},
       {8, 8, 1, 1},
       {{"activation", "SiLU"}},
       DType::kInt8,
       0,
       true,
       true,
       DType::kInt8,
       DType::kInt8},
      // YOLOv5's bottleneck: the residual added after the SiLU (a sum post-op after the swish), of
      // the output's type and of the other one.
      {{1, 8, 7, 5},
       {8, 8, 3, 3},
       {{"pads", Ints{1, 1, 1, 1}}, {"activation", "SiLU"}, {"residual_after_activation", int64_t{1}}},
       DType::kInt8,
       0,
       true,
       true,
       DType::kInt8,
       DType::kInt8},
      {{1, 16, 6, 6},
       {16, 16, 1, 1},
       {{"activation", "SiLU"}, {"residual_after_activation", int64_t{1}}},
       DType::kInt8,
       0,
       true,
       true,
       DType::kUInt8,
       DType::kInt8},
      // Float output, where the graph goes on in float.
      {{2, 4, 6, 6}, {6, 4, 3, 3}, {}, DType::kInt8, 0, true, true, std::nullopt, std::nullopt},
  };
  for (size_t i = 0; i < cases.size(); ++i) {
    SCOPED_TRACE("case " + std::to_string(i));
    check(cases[i], rng);
  }
}

TEST(OnednnQLinearConv, NonzeroWeightZeroPointStaysWithTheReference) {
  std::mt19937 rng(9);
  compare("FusedQLinearConv", {},
          {{random_8bit({1, 4, 5, 5}, DType::kUInt8, rng)},
           {Tensor::scalar(0.02, DType::kFloat32), true},
           {},
           {random_8bit({4, 4, 3, 3}, DType::kInt8, rng), true},
           {Tensor::scalar(0.01, DType::kFloat32), true},
           {Tensor::scalar(3, DType::kInt8), true}},
          false);
}

struct QMatMulCase {
  Shape a;
  int64_t n;
  DType a_type = DType::kUInt8;
  int a_zero = 0;
  bool per_column = true;
  bool bias = true;
  std::string activation;
  std::optional<DType> y_type;  // nullopt: float32 output
  int y_zero = 0;
};

void check(const QMatMulCase& c, std::mt19937& rng) {
  const int64_t k = c.a[c.a.ndim() - 1];
  std::vector<Operand> in(9);
  in[0] = {random_8bit(c.a, c.a_type, rng)};
  in[1] = {Tensor::scalar(0.02, DType::kFloat32), true};
  if (c.a_zero != 0) in[2] = {Tensor::scalar(c.a_zero, c.a_type), true};
  in[3] = {random_weights({k, c.n}, rng), true};
  in[4] = {
      c.per_column ? random_tensor(Shape{c.n}, rng, 0.002f, 0.01f) : Tensor::scalar(0.005, DType::kFloat32),
      true};
  if (c.bias) in[8] = {random_tensor(Shape{c.n}, rng, -0.5f, 0.5f), true};
  const AttrMap attrs{{"activation", c.activation}};
  const ops::OpSchema& schema = ops::OpRegistry::global().get("FusedQLinearMatMul");
  const auto run = [&] {
    std::vector<Tensor> values;
    for (const Operand& o : in) values.push_back(o.value);
    return schema.run_reference(schema.bind(attrs), values)[0];
  };
  double range = 1e-3;
  for (float v : run().to_vector<float>()) range = std::max(range, static_cast<double>(std::fabs(v)));
  double tolerance = 1e-4;
  if (c.y_type) {
    in[6] = {Tensor::scalar(range / 100, DType::kFloat32), true};
    in[7] = {Tensor::scalar(c.y_zero, *c.y_type), true};
    double largest = 1;
    for (float v : run().cast(DType::kFloat32).to_vector<float>())
      largest = std::max(largest, std::fabs(double{v}));
    tolerance = 1.01 / largest;  // one 8-bit step
  }
  while (!in.back().value.defined()) in.pop_back();
  compare("FusedQLinearMatMul", attrs, in, {.provider = int8_provider(c.a_type), .tolerance = tolerance});
}

TEST(OnednnQLinearMatMul, AgreesWithTheReference) {
  std::mt19937 rng(12);
  const std::vector<QMatMulCase> cases{
      {{4, 64}, 32, DType::kUInt8, 0, true, true, "Relu", DType::kUInt8},
      {{2, 5, 48}, 24, DType::kInt8, 0, false, true, "", DType::kInt8},
      {{3, 32}, 16, DType::kUInt8, 128, true, false, "", DType::kUInt8, 128},
      {{1, 2048}, 1000, DType::kUInt8, 0, true, true, "", std::nullopt},
  };
  for (size_t i = 0; i < cases.size(); ++i) {
    SCOPED_TRACE("case " + std::to_string(i));
    check(cases[i], rng);
  }
}

// Dynamic quantization: both sides quantize the activation identically (DynamicQuantizeLinear's
// formulas), so only the float32 rounding of the product differs.
TEST(OnednnDynamicQLinearMatMul, AgreesWithTheReference) {
  std::mt19937 rng(13);
  struct Case {
    Shape a;
    int64_t n;
    bool per_column, bias;
    std::string activation;
  };
  for (const Case& c : std::vector<Case>{{{8, 64}, 32, true, true, "Relu"},
                                         {{2, 7, 48}, 24, false, true, ""},
                                         {{3, 32}, 16, true, false, ""}}) {
    const int64_t k = c.a[c.a.ndim() - 1];
    std::vector<Operand> in{{random_tensor(c.a, rng, -3.f, 2.f)},
                            {random_weights({k, c.n}, rng), true},
                            {c.per_column ? random_tensor(Shape{c.n}, rng, 0.002f, 0.01f)
                                          : Tensor::scalar(0.005, DType::kFloat32),
                             true}};
    if (c.bias) {
      in.push_back({});
      in.push_back({random_tensor(Shape{c.n}, rng, -0.5f, 0.5f), true});
    }
    compare("FusedDynamicQLinearMatMul", {{"activation", c.activation}}, in, {.tolerance = 1e-5});
  }
}

// A residual into a float32 output (the last block of a network whose pooling runs in float):
// Z comes from another int8 convolution, in its channels-last layout, and is read by a binary
// post-op.
TEST(OnednnQLinearConv, ResidualIntoAFloatOutput) {
  std::mt19937 rng(14);
  graph::Graph g;
  graph::Value* x = g.add_input("x", ops::TensorInfo{DType::kUInt8, Shape{1, 16, 7, 7}});
  graph::Value* xs = g.add_initializer("xs", Tensor::scalar(0.02, DType::kFloat32));
  graph::Value* ws = g.add_initializer("ws", random_tensor(Shape{16}, rng, 0.002f, 0.01f));
  graph::Value* zs = g.add_initializer("zs", Tensor::scalar(0.05, DType::kFloat32));
  graph::Value* z = g.add_node("FusedQLinearConv",
                               {x, xs, nullptr, g.add_initializer("w1", random_weights({16, 16, 1, 1}, rng)),
                                ws, nullptr, zs, g.add_initializer("zz", Tensor::scalar(0, DType::kUInt8))},
                               {{"activation", "Relu"}})
                        ->outputs[0];
  graph::Value* y =
      g.add_node("FusedQLinearConv",
                 {z, zs, nullptr, g.add_initializer("w2", random_weights({16, 16, 3, 3}, rng)), ws, nullptr,
                  nullptr, nullptr, g.add_initializer("b", random_tensor(Shape{16}, rng)), z, zs},
                 {{"pads", Ints{1, 1, 1, 1}}, {"activation", "Relu"}})
          ->outputs[0];
  g.add_output(y);
  g.infer_shapes();
  const auto reference = runtime::compile(g);
  const auto fast = runtime::compile(g, {.providers = {onednn_provider()}});
  for (const auto& step : fast->steps) EXPECT_EQ(step.provider, "onednn") << step.label;
  const Tensor input = random_8bit({1, 16, 7, 7}, DType::kUInt8, rng);
  const std::vector<float> want = runtime::Executor(reference).run({input})[0].to_vector<float>();
  const std::vector<float> got = runtime::Executor(fast).run({input})[0].to_vector<float>();
  // Z may differ by one 8-bit step (0.05) between the two paths, which the second convolution
  // passes on through its residual.
  for (size_t i = 0; i < got.size(); ++i)
    ASSERT_NEAR(got[i], want[i], 0.051 + 1e-4 * std::fabs(want[i])) << i;
}

// The residual's buffer becomes the output's when the convolution is its last reader: the sum
// post-op accumulates onto Z where it lies, with no copy. Z (from another int8 convolution of the
// same input) and the output share an arena offset, and the result is the reference's.
TEST(OnednnQLinearConv, ResidualAccumulatesInPlace) {
  std::mt19937 rng(15);
  graph::Graph g;
  graph::Value* x = g.add_input("x", ops::TensorInfo{DType::kUInt8, Shape{1, 16, 9, 11}});
  graph::Value* xs = g.add_initializer("xs", Tensor::scalar(0.02, DType::kFloat32));
  graph::Value* ws = g.add_initializer("ws", random_tensor(Shape{16}, rng, 0.002f, 0.01f));
  graph::Value* zs = g.add_initializer("zs", Tensor::scalar(0.05, DType::kFloat32));
  graph::Value* ys = g.add_initializer("ys", Tensor::scalar(0.07, DType::kFloat32));
  graph::Value* zero = g.add_initializer("zero", Tensor::scalar(0, DType::kUInt8));
  graph::Value* z = g.add_node("FusedQLinearConv",
                               {x, xs, nullptr, g.add_initializer("w1", random_weights({16, 16, 1, 1}, rng)),
                                ws, nullptr, zs, zero},
                               {{"activation", "Relu"}})
                        ->outputs[0];
  graph::Value* y =
      g.add_node("FusedQLinearConv",
                 {x, xs, nullptr, g.add_initializer("w2", random_weights({16, 16, 3, 3}, rng)), ws, nullptr,
                  ys, zero, g.add_initializer("b", random_tensor(Shape{16}, rng)), z, zs, zero},
                 {{"pads", Ints{1, 1, 1, 1}}, {"activation", "Relu"}})
          ->outputs[0];
  // A graph output is allocated by the call, outside the arena: pool y (a 1x1 window) into one.
  g.add_output(g.add_node("MaxPool", {y}, {{"kernel_shape", Ints{1, 1}}})->outputs[0]);
  g.infer_shapes();
  const auto reference = runtime::compile(g);
  const auto fast = runtime::compile(g, {.providers = {onednn_provider()}});
  ASSERT_EQ(fast->steps.at(1).provider, "onednn");
  const runtime::PlanValue& z_value = fast->values.at(static_cast<size_t>(fast->steps[0].outputs[0]));
  const runtime::PlanValue& y_value = fast->values.at(static_cast<size_t>(fast->steps[1].outputs[0]));
  EXPECT_EQ(y_value.offset, z_value.offset) << "the output did not take over the residual's buffer";
  EXPECT_EQ(fast->memory.num_inplace, 1);
  const Tensor input = random_8bit({1, 16, 9, 11}, DType::kUInt8, rng);
  const std::vector<float> want =
      runtime::Executor(reference).run({input})[0].cast(DType::kFloat32).to_vector<float>();
  const std::vector<float> got =
      runtime::Executor(fast).run({input})[0].cast(DType::kFloat32).to_vector<float>();
  // Z may land one step (0.05) away from the reference's, which moves y by under a step (0.07),
  // plus y's own rounding: two steps at most.
  for (size_t i = 0; i < got.size(); ++i) ASSERT_NEAR(got[i], want[i], 2.0) << "element " << i;
}

// oneDNN pools 8-bit values in the channels-last layout its int8 convolutions write and read
// (row-major 8-bit values stay with the reference kernel): int8 convolution, MaxPool, int8
// convolution.
TEST(OnednnPool, MaxPoolOn8BitValues) {
  std::mt19937 rng(10);
  for (DType type : {DType::kUInt8, DType::kInt8}) {
    graph::Graph g;
    graph::Value* x = g.add_input("x", ops::TensorInfo{DType::kUInt8, Shape{1, 8, 13, 13}});
    graph::Node* conv = g.add_node("FusedQLinearConv",
                                   {x, g.add_initializer("xs", Tensor::scalar(0.02, DType::kFloat32)),
                                    nullptr, g.add_initializer("w", random_weights({16, 8, 3, 3}, rng)),
                                    g.add_initializer("ws", Tensor::scalar(0.01, DType::kFloat32)), nullptr,
                                    g.add_initializer("ys", Tensor::scalar(0.05, DType::kFloat32)),
                                    g.add_initializer("yz", Tensor::scalar(0, type))},
                                   {{"pads", Ints{1, 1, 1, 1}}});
    graph::Node* pool =
        g.add_node("MaxPool", {conv->outputs[0]},
                   {{"kernel_shape", Ints{3, 3}}, {"strides", Ints{2, 2}}, {"pads", Ints{1, 1, 1, 1}}});
    graph::Node* next = g.add_node(
        "FusedQLinearConv", {pool->outputs[0], g.add_initializer("ps", Tensor::scalar(0.05, DType::kFloat32)),
                             g.find_value("yz"), g.add_initializer("w2", random_weights({4, 16, 1, 1}, rng)),
                             g.add_initializer("ws2", Tensor::scalar(0.01, DType::kFloat32))});
    g.add_output(next->outputs[0]);
    g.infer_shapes();
    const auto reference = runtime::compile(g);
    const auto fast = runtime::compile(g, {.providers = {onednn_provider()}});
    // The second convolution reads the pooled `type` values (see int8_provider).
    // Where the reference kernels take it, its input comes back row-major through one conversion.
    for (const auto& step : fast->steps) {
      const std::string want = step.label == next->label() ? int8_provider(type)
                               : step.provider == "layout" && int8_provider(type) == "reference" ? "layout"
                                                                                                 : "onednn";
      EXPECT_EQ(step.provider, want) << step.label;
    }
    const Tensor input = random_8bit({1, 8, 13, 13}, DType::kUInt8, rng);
    const Tensor want = runtime::Executor(reference).run({input})[0];
    const Tensor got = runtime::Executor(fast).run({input})[0];
    const std::vector<float> a = got.cast(DType::kFloat32).to_vector<float>(),
                             b = want.cast(DType::kFloat32).to_vector<float>();
    for (size_t i = 0; i < a.size(); ++i) ASSERT_NEAR(a[i], b[i], 1.0) << "element " << i;
  }
}

// Weights over the whole s8 range: oneDNN takes them where the CPU sums u8 x s8 products in int32
// (VNNI); without it they would saturate oneDNN's int16 pair sums, so the reference kernels take
// the node. Either way the result is the reference's, within one 8-bit step.
TEST(OnednnQLinearConv, FullRangeWeightsNeedVnni) {
  std::mt19937 rng(16);
  Tensor w = random_8bit({8, 16, 3, 3}, DType::kInt8, rng);
  std::vector<int8_t> values = w.to_vector<int8_t>();
  values[0] = -128;  // at least one weight outside [-64, 63]
  w = Tensor::from_vector(values, w.shape());
  const std::vector<Operand> in{{random_8bit({1, 16, 6, 6}, DType::kUInt8, rng)},
                                {Tensor::scalar(0.02, DType::kFloat32), true},
                                {},
                                {w, true},
                                {Tensor::scalar(0.005, DType::kFloat32), true}};
  compare("FusedQLinearConv", {{"pads", Ints{1, 1, 1, 1}}}, in,
          {.provider = cpu_has_int8_dot_product() ? "onednn" : "reference", .tolerance = 1e-4});
}

}  // namespace
}  // namespace kiln::onednn
