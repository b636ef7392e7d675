// Running MXNet graphs: the Symbol API's Executor (one compiled plan reused across forwards, fed
// the arrays' current values) and inputs imported without a type, which bind as float32.
#include <gtest/gtest.h>

#include <functional>

#include "frontends/mxnet/import.h"
#include "kiln/error.hpp"
#include "kiln/predictor.hpp"
#include "kiln/symbol.hpp"
#include "runtime/executor.h"
#include "runtime/plan.h"
#include "test_support.h"

namespace kiln {
namespace {

using testing::code_of;

// relu(data) -> FullyConnected with 2 outputs: y = relu(x) W^T + b.
Symbol relu_fc() {
  return sym::FullyConnected(sym::Activation(Symbol::Variable("data"), "relu"), 2, false, true, "fc");
}

TEST(MxnetExecutor, ForwardsReadTheArraysCurrentValues) {
  Executor exe = relu_fc().simple_bind(cpu(), {{"data", Shape{1, 3}}});
  exe.arg_dict()["data"] = nd::array<float>({-1, 2, 3}, Shape{1, 3});
  exe.arg_dict()["fc_weight"] = nd::array<float>({1, 1, 1, 0, 0, 1}, Shape{2, 3});
  exe.arg_dict()["fc_bias"] = nd::array<float>({0.5f, 0}, Shape{2});
  exe.forward(false);
  EXPECT_EQ(exe.outputs()[0].to_vector<float>(), (std::vector<float>{5.5f, 3.0f}));

  // Weights changed in place, then replaced: each forward uses what the arrays hold now.
  exe.arg_dict()["fc_weight"] += 1.0;  // W = [[2, 2, 2], [1, 1, 2]]
  exe.forward(false);
  EXPECT_EQ(exe.outputs()[0].to_vector<float>(), (std::vector<float>{10.5f, 8.0f}));
  exe.arg_dict()["fc_bias"] = nd::array<float>({0, -1}, Shape{2});
  exe.forward(false);
  EXPECT_EQ(exe.outputs()[0].to_vector<float>(), (std::vector<float>{10.0f, 7.0f}));

  // A new batch size compiles a new plan.
  exe.arg_dict()["data"] = nd::array<float>({-1, 2, 3, 1, 0, 0}, Shape{2, 3});
  exe.forward(false);
  EXPECT_EQ(exe.outputs()[0].shape(), (Shape{2, 2}));
  EXPECT_EQ(exe.outputs()[0].to_vector<float>(), (std::vector<float>{10.0f, 7.0f, 2.0f, 0.0f}));

  // A copy has its own arrays (sharing their data) and its own plan.
  Executor copy = exe;
  copy.arg_dict()["fc_bias"] = nd::array<float>({1, 1}, Shape{2});
  copy.forward(false);
  exe.forward(false);
  EXPECT_EQ(copy.outputs()[0].to_vector<float>(), (std::vector<float>{11.0f, 9.0f, 3.0f, 2.0f}));
  EXPECT_EQ(exe.outputs()[0].to_vector<float>(), (std::vector<float>{10.0f, 7.0f, 2.0f, 0.0f}));

  EXPECT_NO_THROW(exe.forward(true));  // training mode (Executor::backward) is supported
  exe.arg_dict().erase("fc_bias");
  EXPECT_EQ(code_of([&] { exe.forward(false); }), ErrorCode::kNotFound);
}

// A variable's __shape__ and __dtype__ give its array when no shape is passed for it, as MXNet's
// shape and type inference take them; int32 values then flow through a Cast that needs their type.
TEST(MxnetExecutor, SimpleBindTakesVariablesShapeAndDtype) {
  const Symbol b = Symbol::Variable("b", {{"__shape__", "(2, 3)"}, {"__dtype__", "4"}});
  const Symbol net = Symbol::Variable("a") + Symbol::Create("Cast", {b}, {{"dtype", "float32"}});
  Executor exe = net.simple_bind(cpu(), {{"a", Shape{2, 3}}}, "null");
  EXPECT_EQ(exe.arg_dict().at("b").dtype(), DType::kInt32);
  EXPECT_EQ(exe.arg_dict().at("b").shape(), (Shape{2, 3}));
  exe.arg_dict()["a"] = nd::array<float>({1, 2, 3, 4, 5, 6}, Shape{2, 3});
  exe.arg_dict()["b"] = nd::array<int32_t>({10, 20, 30, 40, 50, 60}, Shape{2, 3});
  exe.forward(false);
  EXPECT_EQ(exe.outputs()[0].to_vector<float>(), (std::vector<float>{11, 22, 33, 44, 55, 66}));
  // A shape given wins over the attribute.
  EXPECT_EQ(
      net.simple_bind(cpu(), {{"a", Shape{4, 3}}, {"b", Shape{4, 3}}}, "null").arg_dict().at("b").shape(),
      (Shape{4, 3}));
}

TEST(MxnetImport, InputsWithoutAShapeBindAsFloat32) {
  const mxnet::NamedTensors params{{"arg:fc_weight", "arg:fc_bias"},
                                   {Tensor::from_vector(std::vector<float>{1, 1, 1, 0, 0, 1}, Shape{2, 3}),
                                    Tensor::from_vector(std::vector<float>{0.5f, 0}, Shape{2})}};
  graph::Graph g = mxnet::import_symbol(relu_fc().to_mxnet(), params, "net");
  ASSERT_EQ(g.inputs().size(), 1u);
  EXPECT_FALSE(g.inputs()[0]->info.has_value());  // neither __shape__ nor __dtype__

  // What `kiln info --shape data=1,3` does.
  const graph::Graph bound = runtime::bind_input_shapes(g, {{"data", Shape{1, 3}}});
  EXPECT_EQ(bound.inputs()[0]->info->dtype, DType::kFloat32);
  EXPECT_EQ(bound.outputs()[0]->info->shape, (Shape{1, 2}));
  runtime::Executor exec(runtime::compile(bound));
  const Tensor x = Tensor::from_vector(std::vector<float>{-1, 2, 3}, Shape{1, 3});
  EXPECT_EQ(exec.run({x})[0].to_vector<float>(), (std::vector<float>{5.5f, 3.0f}));
  EXPECT_EQ(Predictor(std::move(g)).predict({x})[0].to_vector<float>(), (std::vector<float>{5.5f, 3.0f}));

  // A declared __dtype__ is kept where the shape is known.
  const Symbol idx = Symbol::Variable("idx", {{"__dtype__", "4"}, {"__shape__", "(2,)"}});
  const graph::Graph typed =
      mxnet::import_symbol(Symbol::Create("_copy", {idx}, {}, "c").to_mxnet(), {}, "t");
  EXPECT_EQ(typed.inputs()[0]->info->dtype, DType::kInt32);
}

}  // namespace
}  // namespace kiln
