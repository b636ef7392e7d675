// Values kept in a backend's own layout between its kernels (runtime::ValueLayout): compile()
// hands a layout only to providers that take it, converts to row-major once per value for every
// other reader, keeps graph outputs row-major and sizes the arena by the layout's bytes.
#include <gtest/gtest.h>

#include <algorithm>

#include "runtime/executor.h"
#include "runtime/plan.h"
#include "runtime_test_util.h"

namespace kiln::runtime {
namespace {

using namespace testing;

// A toy layout: the elements in reverse order, after 16 bytes of padding (so its size differs
// from the row-major one, as a blocked layout's may).
class Reversed final : public ValueLayout {
 public:
  std::string describe() const override { return "reversed"; }
  size_t nbytes() const override { return 16 + count * sizeof(float); }
  bool same_as(const ValueLayout& other) const override {
    return dynamic_cast<const Reversed*>(&other) != nullptr;
  }
  KernelChoice to_row_major() const override {
    return {[](ops::KernelContext& ctx) {
      const Tensor& in = ctx.input(0);
      const float* from = reinterpret_cast<const float*>(static_cast<const char*>(in.raw_data()) + 16);
      float* to = ctx.output(0).data<float>();
      std::reverse_copy(from, from + in.numel(), to);
    }};
  }
  int64_t count = 0;
};

// Relu that reads row-major or reversed input and writes reversed output (row-major where it
// must), counting the calls that got a reversed input.
class ReversingRelu final : public KernelProvider {
 public:
  std::string name() const override { return "reversing"; }
  ops::KernelFn choose_kernel(const graph::Node&, const Attrs&) const override { return {}; }
  KernelChoice choose(const KernelQuery& query) const override {
    if (query.node.op != "Relu") return {};
    const bool in_reversed = query.input_layouts[0] != nullptr;
    if (in_reversed && dynamic_cast<const Reversed*>(query.input_layouts[0].get()) == nullptr) return {};
    const bool out_reversed = !query.output_row_major[0];
    auto layout = std::make_shared<Reversed>();
    layout->count = query.node.outputs[0]->info->shape.numel();
    KernelChoice choice;
    choice.kernel = [this, in_reversed, out_reversed](ops::KernelContext& ctx) {
      if (in_reversed) ++reversed_inputs;
      const int64_t n = ctx.input(0).numel();
      const float* in = static_cast<const float*>(ctx.input(0).raw_data()) + (in_reversed ? 4 : 0);
      float* out = static_cast<float*>(ctx.output(0).raw_data()) + (out_reversed ? 4 : 0);
      for (int64_t i = 0; i < n; ++i) {
        const float v = in[in_reversed ? n - 1 - i : i];
        out[out_reversed ? n - 1 - i : i] = v > 0.f ? v : 0.f;
      }
    };
    if (out_reversed) choice.output_layouts = {layout};
    return choice;
  }
  mutable int reversed_inputs = 0;
};

int count_steps(const Plan& plan, const std::string& op) {
  return static_cast<int>(std::count_if(plan.steps.begin(), plan.steps.end(),
                                        [&](const PlanStep& s) { return s.schema->name() == op; }));
}

TEST(ValueLayouts, StayBetweenKernelsThatTakeThemAndAreConvertedOnceForOthers) {
  Graph g;
  Value* x = g.add_input("x", TensorInfo{DType::kFloat32, Shape{2, 3}});
  Value* a = g.add_node("Relu", {x}, {}, "a")->outputs[0];
  Value* b = g.add_node("Relu", {a}, {}, "b")->outputs[0];  // reversed in, reversed out
  Value* c = g.add_node("Neg", {b}, {}, "c")->outputs[0];   // reference: row-major copy of b
  Value* d = g.add_node("Abs", {b}, {}, "d")->outputs[0];   // shares that copy
  Value* e = g.add_node("Relu", {b}, {}, "e")->outputs[0];  // a graph output: row-major
  g.set_outputs({c, d, e});
  ReversingRelu provider;
  CompileOptions options;
  options.providers = {&provider};
  g.infer_shapes();
  const auto plan = compile(g, options);
  EXPECT_EQ(count_steps(*plan, "Reorder"), 1);
  int with_layout = 0;
  for (const PlanValue& v : plan->values) {
    if (v.layout == nullptr) continue;
    ++with_layout;
    EXPECT_EQ(v.nbytes(), 16 + 6 * sizeof(float)) << v.name;
  }
  EXPECT_EQ(with_layout, 2);  // a and b
  for (int id : plan->outputs) EXPECT_EQ(plan->values[static_cast<size_t>(id)].layout, nullptr);

  std::mt19937 rng(3);
  const Tensor in = random_tensor({2, 3}, rng);
  Executor exec(plan);
  expect_same(exec.run({in}), reference_evaluate(g, {in}));
  EXPECT_EQ(provider.reversed_inputs, 2);  // b and e
}

TEST(ValueLayouts, InPlaceOnlyBetweenEqualLayouts) {
  // Neg may write over its input only when both are row-major: the reversed value of 'a' goes
  // through a row-major copy, which Neg may then reuse.
  Graph g;
  Value* x = g.add_input("x", TensorInfo{DType::kFloat32, Shape{4}});
  Value* a = g.add_node("Relu", {x}, {}, "a")->outputs[0];
  Value* n = g.add_node("Neg", {a}, {}, "n")->outputs[0];
  g.set_outputs({g.add_node("Abs", {n}, {}, "out")->outputs[0]});
  g.infer_shapes();
  ReversingRelu provider;
  CompileOptions options;
  options.providers = {&provider};
  const auto plan = compile(g, options);
  for (const PlanStep& s : plan->steps) {
    if (s.schema->name() != "Neg") continue;
    const PlanValue& in = plan->values[static_cast<size_t>(s.inputs[0])];
    EXPECT_EQ(in.layout, nullptr);  // it reads the row-major copy
  }
  Executor exec(plan);
  const Tensor in = Tensor::from_vector<float>({-1.f, 2.f, -3.f, 4.f}, {4});
  EXPECT_EQ(exec.run({in})[0].to_vector<float>(), std::vector<float>({0.f, 2.f, 0.f, 4.f}));
}

TEST(Precision, ParsesTheThreeNames) {
  EXPECT_EQ(parse_precision("bf16"), Precision::kBFloat16);
  EXPECT_EQ(std::string(precision_name(parse_precision("fp16"))), "fp16");
  try {
    parse_precision("int4");
    FAIL() << "no error";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("'int4'"), std::string::npos) << e.what();
  }
}

}  // namespace
}  // namespace kiln::runtime
