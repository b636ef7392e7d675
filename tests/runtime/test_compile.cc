// compile() and bind_input_shapes(): concrete shapes, error messages that name the place,
// the plan's structure (order, constants, in-place, outputs outside the arena) and pluggable
// kernel providers.
#include <gtest/gtest.h>

#include "runtime/executor.h"
#include "runtime/plan.h"
#include "runtime_test_util.h"

namespace kiln::runtime {
namespace {

using namespace testing;

std::string error_of(const std::function<void()>& fn) {
  try {
    fn();
  } catch (const Error& e) {
    return e.what();
  }
  return "(no error)";
}

TEST(BindInputShapes, MakesFreeDimensionsConcrete) {
  std::mt19937 rng(1);
  const Graph g = small_cnn(rng);
  const Graph bound = bind_input_shapes(g, {{"data", Shape{4, 3, 32, 32}}});
  EXPECT_EQ(bound.inputs()[0]->info->shape, Shape({4, 3, 32, 32}));
  EXPECT_EQ(bound.outputs()[0]->info->shape, Shape({4, 10}));
  EXPECT_EQ(g.inputs()[0]->info->shape, Shape({-1, 3, 32, 32}));  // the source is untouched
}

TEST(BindInputShapes, ErrorsNameTheInputAndBothShapes) {
  std::mt19937 rng(1);
  const Graph g = small_cnn(rng);
  std::string msg = error_of([&] { bind_input_shapes(g, {{"data", Shape{1, 3, 20, 20}}}); });
  EXPECT_NE(msg.find("input 'data': expected (?, 3, 32, 32), got (1, 3, 20, 20)"), std::string::npos) << msg;
  msg = error_of([&] { bind_input_shapes(g, {{"data", Shape{1, 3, 32}}}); });
  EXPECT_NE(msg.find("got (1, 3, 32)"), std::string::npos) << msg;
  msg = error_of([&] { bind_input_shapes(g, {{"image", Shape{1, 3, 32, 32}}}); });
  EXPECT_NE(msg.find("no input named 'image'"), std::string::npos) << msg;
  EXPECT_NE(msg.find("'data'"), std::string::npos) << msg;
  msg = error_of([&] { bind_input_shapes(g, {{"data", Shape{-1, 3, 32, 32}}}); });
  EXPECT_NE(msg.find("not concrete"), std::string::npos) << msg;
}

TEST(Compile, RequiresConcreteShapes) {
  std::mt19937 rng(1);
  const Graph g = mlp({8, 4}, rng);
  const std::string msg = error_of([&] { compile(g); });
  EXPECT_NE(msg.find("graph 'mlp'"), std::string::npos) << msg;
  EXPECT_NE(msg.find("'x'"), std::string::npos) << msg;
  EXPECT_NE(msg.find("(?, 8)"), std::string::npos) << msg;
  EXPECT_NE(msg.find("bind_input_shapes"), std::string::npos) << msg;
}

TEST(Compile, ListsEveryUnsupportedOpAtOnce) {
  std::mt19937 rng(1);
  Graph g = mlp({8, 4, 2}, rng);
  g.find_node("fc1/relu")->op = "FancyRelu";
  g.find_node("fc2/add")->op = "FancyAdd";
  const std::string msg = error_of([&] { compile(bind_input_shapes(g, {{"x", Shape{1, 8}}})); });
  EXPECT_NE(msg.find("2 node(s)"), std::string::npos) << msg;
  EXPECT_NE(msg.find("FancyRelu 'fc1/relu'"), std::string::npos) << msg;
  EXPECT_NE(msg.find("FancyAdd 'fc2/add'"), std::string::npos) << msg;
}

TEST(Compile, BadAttributesNameTheNode) {
  Graph g;
  g.name = "bad";
  Value* x = g.add_input("x", TensorInfo{DType::kFloat32, Shape{2, 3}});
  g.set_outputs({g.add_node("Softmax", {x}, {{"axiz", 1}}, "sm")->outputs[0]});
  const std::string msg = error_of([&] { compile(g); });
  EXPECT_NE(msg.find("'sm'"), std::string::npos) << msg;
  EXPECT_NE(msg.find("Softmax"), std::string::npos) << msg;
  EXPECT_NE(msg.find("axiz"), std::string::npos) << msg;
}

TEST(Compile, PlanHoldsStepsConstantsAndOffsets) {
  std::mt19937 rng(1);
  const auto plan = compile(bind_input_shapes(mlp({8, 4, 2}, rng), {{"x", Shape{3, 8}}}));
  ASSERT_EQ(plan->steps.size(), 6u);
  EXPECT_EQ(plan->steps[0].label, "MatMul 'fc1/matmul'");
  EXPECT_EQ(plan->steps[0].provider, "reference");
  EXPECT_EQ(plan->constants.size(), 4u);
  ASSERT_EQ(plan->inputs.size(), 1u);
  EXPECT_EQ(plan->values[static_cast<size_t>(plan->inputs[0])].kind, PlanValue::Kind::kInput);
  ASSERT_EQ(plan->outputs.size(), 1u);
  EXPECT_EQ(plan->values[static_cast<size_t>(plan->outputs[0])].kind, PlanValue::Kind::kOutput);
  for (const PlanValue& v : plan->values) {
    EXPECT_TRUE(v.info.shape.is_known()) << v.name;
    if (v.kind == PlanValue::Kind::kArena) {
      EXPECT_LE(v.offset + v.nbytes(), plan->arena_bytes) << v.name;
    }
  }
}

TEST(Compile, ElementwiseOpsWriteOverTheirLastReadInput) {
  std::mt19937 rng(1);
  const auto plan = compile(bind_input_shapes(mlp({8, 16, 16}, rng), {{"x", Shape{1, 8}}}));
  // Per layer, Add takes over MatMul's output and Relu Add's: three values, one buffer; the
  // last Relu is the graph output, outside the arena.
  EXPECT_EQ(plan->memory.num_inplace, 3);
  const auto offset_of = [&](const std::string& step) {
    for (const PlanStep& s : plan->steps)
      if (s.label.find(step) != std::string::npos)
        return plan->values[static_cast<size_t>(s.outputs[0])].offset;
    return size_t{12345};
  };
  EXPECT_EQ(offset_of("fc1/matmul"), offset_of("fc1/add"));
  EXPECT_EQ(offset_of("fc1/add"), offset_of("fc1/relu"));
}

TEST(Compile, AnElementwiseChainRunsInOneBuffer) {
  Graph g;
  Value* v = g.add_input("x", TensorInfo{DType::kFloat32, Shape{64}});
  for (const char* op : {"Relu", "Neg", "Abs", "Exp", "Sigmoid"}) v = g.add_node(op, {v})->outputs[0];
  g.set_outputs({v});
  const auto plan = compile(g);
  EXPECT_EQ(plan->memory.num_inplace, 3);
  EXPECT_EQ(plan->arena_bytes, 256u);
  CompileOptions no_inplace;
  no_inplace.inplace = false;
  EXPECT_EQ(compile(g, no_inplace)->arena_bytes, 512u);
  CompileOptions naive;
  naive.share_memory = naive.inplace = false;
  EXPECT_EQ(compile(g, naive)->arena_bytes, 4 * 256u);
}

TEST(Compile, ReadsOfALaterStepBlockInPlace) {
  // h = Relu(x); y = Neg(h); z = Add(y, h): Neg is not h's last reader, so it may not take h.
  Graph g;
  Value* x = g.add_input("x", TensorInfo{DType::kFloat32, Shape{4, 4}});
  Value* h = g.add_node("Relu", {x}, {}, "h")->outputs[0];
  Value* y = g.add_node("Neg", {h}, {}, "y")->outputs[0];
  g.set_outputs({g.add_node("Add", {y, h}, {}, "z")->outputs[0]});
  const auto plan = compile(g);
  EXPECT_EQ(plan->memory.num_inplace, 0);
  EXPECT_NE(plan->values[static_cast<size_t>(plan->steps[0].outputs[0])].offset,
            plan->values[static_cast<size_t>(plan->steps[1].outputs[0])].offset);
}

TEST(Compile, VariadicOpsNeverWriteOverTheirInputs) {
  // Sum folds pairwise into its output, writing it before reading its third input: it is not
  // marked elementwise, so no input may share the output's bytes.
  Graph g;
  Value* x = g.add_input("x", TensorInfo{DType::kFloat32, Shape{4}});
  Value* a = g.add_node("Relu", {x}, {}, "a")->outputs[0];
  Value* b = g.add_node("Neg", {x}, {}, "b")->outputs[0];
  Value* c = g.add_node("Abs", {x}, {}, "c")->outputs[0];
  Value* sum = g.add_node("Sum", {c, b, a}, {}, "sum")->outputs[0];
  g.set_outputs({g.add_node("Relu", {sum}, {}, "out")->outputs[0]});
  const auto plan = compile(g);
  const PlanStep& step = plan->steps[3];
  ASSERT_EQ(step.label, "Sum 'sum'");
  const size_t out = plan->values[static_cast<size_t>(step.outputs[0])].offset;
  for (int in : step.inputs) EXPECT_NE(out, plan->values[static_cast<size_t>(in)].offset);

  Executor exec(plan);
  const Tensor in = Tensor::from_vector<float>({-2.f, -1.f, 1.f, 2.f}, {4});
  EXPECT_EQ(exec.run({in})[0].to_vector<float>(), std::vector<float>({4.f, 2.f, 1.f, 2.f}));
}

TEST(Compile, ReshapesTakeOverTheirInputsBytes) {
  // a = Relu(x); r = Reshape(a, (3, 8)); f = Flatten(Unsqueeze(r)); y = Neg(f): the three
  // reshapes are a's bytes under other shapes, so a, r, the unsqueezed value and f share one buffer.
  Graph g;
  Value* x = g.add_input("x", TensorInfo{DType::kFloat32, Shape{4, 6}});
  Value* a = g.add_node("Relu", {x}, {}, "a")->outputs[0];
  Value* shape = g.add_initializer("shape", Tensor::from_vector<int64_t>({3, 8}, {2}));
  Value* r = g.add_node("Reshape", {a, shape}, {}, "r")->outputs[0];
  Value* axes = g.add_initializer("axes", Tensor::from_vector<int64_t>({0}, {1}));
  Value* u = g.add_node("Unsqueeze", {r, axes}, {}, "u")->outputs[0];
  Value* f = g.add_node("Flatten", {u}, {{"axis", 2}}, "f")->outputs[0];
  g.set_outputs({g.add_node("Neg", {f}, {}, "y")->outputs[0]});
  const auto plan = compile(g);
  EXPECT_EQ(plan->memory.num_inplace, 3);
  EXPECT_EQ(plan->arena_bytes, 128u);  // 96 bytes, rounded up to the arena alignment

  std::vector<float> values(24), expected(24);
  for (size_t i = 0; i < values.size(); ++i) {
    values[i] = static_cast<float>(i) - 11.5f;
    expected[i] = -std::max(values[i], 0.f);
  }
  Executor exec(plan);
  const std::vector<Tensor> out = exec.run({Tensor::from_vector<float>(values, {4, 6})});
  EXPECT_EQ(out[0].shape(), Shape({3, 8}));
  EXPECT_EQ(out[0].to_vector<float>(), expected);
}

TEST(Compile, AReshapeKeepsAnInputReadLater) {
  // r = Reshape(a); y = Add(Reshape back(r), a): a is read after the reshape, so r needs bytes of
  // its own.
  Graph g;
  Value* x = g.add_input("x", TensorInfo{DType::kFloat32, Shape{2, 3}});
  Value* a = g.add_node("Relu", {x}, {}, "a")->outputs[0];
  Value* flat = g.add_initializer("flat", Tensor::from_vector<int64_t>({6}, {1}));
  Value* back = g.add_initializer("back", Tensor::from_vector<int64_t>({2, 3}, {2}));
  Value* r = g.add_node("Reshape", {a, flat}, {}, "r")->outputs[0];
  Value* b = g.add_node("Reshape", {r, back}, {}, "b")->outputs[0];
  g.set_outputs({g.add_node("Add", {b, a}, {}, "y")->outputs[0]});
  const auto plan = compile(g);
  const auto offset = [&](size_t step) {
    return plan->values[static_cast<size_t>(plan->steps[step].outputs[0])].offset;
  };
  EXPECT_NE(offset(0), offset(1));
  EXPECT_EQ(offset(1), offset(2));  // the second reshape is r's last reader
  Executor exec(plan);
  const Tensor in = Tensor::from_vector<float>({-1.f, 2.f, -3.f, 4.f, 5.f, -6.f}, {2, 3});
  EXPECT_EQ(exec.run({in})[0].to_vector<float>(), std::vector<float>({0.f, 4.f, 0.f, 8.f, 10.f, 0.f}));
}

// A provider that supplies its own Relu and leaves everything else to the reference kernels.
class CountingRelu final : public KernelProvider {
 public:
  std::string name() const override { return "counting"; }
  ops::KernelFn choose_kernel(const graph::Node& node, const Attrs&) const override {
    if (node.op != "Relu") return {};
    return [this](ops::KernelContext& ctx) {
      ++calls;
      const float* in = ctx.input(0).data<float>();
      float* out = ctx.output(0).data<float>();
      for (int64_t i = 0; i < ctx.input(0).numel(); ++i) out[i] = in[i] > 0.f ? in[i] : 0.f;
    };
  }
  mutable int calls = 0;
};

TEST(Compile, KernelProvidersPlugIn) {
  std::mt19937 rng(1);
  const Graph g = bind_input_shapes(mlp({8, 16, 4}, rng), {{"x", Shape{2, 8}}});
  CountingRelu provider;
  CompileOptions options;
  options.providers = {&provider};
  const auto plan = compile(g, options);
  for (const PlanStep& s : plan->steps)
    EXPECT_EQ(s.provider, s.schema->name() == "Relu" ? "counting" : "reference") << s.label;
  Executor exec(plan);
  const Tensor x = random_tensor({2, 8}, rng);
  expect_same(exec.run({x}), reference_evaluate(g, {x}));
  EXPECT_EQ(provider.calls, 2);
}

}  // namespace
}  // namespace kiln::runtime
