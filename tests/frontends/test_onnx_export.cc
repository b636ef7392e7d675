// The ONNX exporter: graphs exported and imported back compute what they computed before (both run
// by graph::evaluate), at the newest opset and at older ones where nodes are rewritten (Reduce*'s
// axes, Split's num_outputs, Pad's axes, Upsample); the written protobuf has the older forms, free
// dimensions, types and value_info; what an opset cannot express is refused naming every node.
// ONNX Runtime and the ONNX checker judge the files in onnx_export_check.py.
#include <gtest/gtest.h>

#include <cstring>
#include <random>

#include "export_test_graphs.h"
#include "frontends/onnx/export.h"
#include "frontends/onnx/import.h"
#include "graph/evaluate.h"
#include "onnx/onnx_pb.h"
#include "test_support.h"

namespace kiln::onnx {
namespace {

using graph::Graph;
using graph::Value;
using kiln::mxnet::testing::ints;
using kiln::mxnet::testing::op;
using kiln::mxnet::testing::random_tensor;
using kiln::testing::expect_error;
using kiln::testing::TempDir;
using ops::TensorInfo;

::onnx::ModelProto parse(const std::string& bytes) {
  ::onnx::ModelProto model;
  EXPECT_TRUE(model.ParseFromString(bytes));
  return model;
}

const ::onnx::NodeProto& node_named(const ::onnx::ModelProto& model, const std::string& name) {
  for (const auto& node : model.graph().node())
    if (node.name() == name) return node;
  ADD_FAILURE() << "no node '" << name << "'";
  return model.graph().node(0);
}

const ::onnx::AttributeProto* attribute(const ::onnx::NodeProto& node, const std::string& name) {
  for (const auto& attr : node.attribute())
    if (attr.name() == name) return &attr;
  return nullptr;
}

std::vector<int64_t> initializer_ints(const ::onnx::ModelProto& model, const std::string& name) {
  for (const auto& init : model.graph().initializer()) {
    if (init.name() != name) continue;
    EXPECT_EQ(init.data_type(), ::onnx::TensorProto::INT64);
    std::vector<int64_t> values(init.raw_data().size() / sizeof(int64_t));
    std::memcpy(values.data(), init.raw_data().data(), init.raw_data().size());
    return values;
  }
  ADD_FAILURE() << "no initializer '" << name << "'";
  return {};
}

// Exports at `opset`, imports the bytes back and expects every output equal on `inputs`.
Graph round_trip(const Graph& g, int opset, const std::map<std::string, Tensor>& inputs) {
  Graph back = import_model_bytes(export_model_bytes(g, {.opset = opset}), "", g.name);
  const std::vector<Tensor> want = graph::evaluate(g, inputs);
  const std::vector<Tensor> got = graph::evaluate(back, inputs);
  EXPECT_EQ(got.size(), want.size());
  for (size_t i = 0; i < want.size() && i < got.size(); ++i) {
    EXPECT_EQ(got[i].shape(), want[i].shape()) << "opset " << opset << " output " << i;
    EXPECT_EQ(got[i].dtype(), want[i].dtype()) << "opset " << opset << " output " << i;
    // The same reference kernels run on the same values: the bytes must match exactly.
    if (got[i].shape() == want[i].shape() && got[i].dtype() == want[i].dtype()) {
      EXPECT_EQ(
          std::memcmp(got[i].contiguous().raw_data(), want[i].contiguous().raw_data(), want[i].nbytes()), 0)
          << "opset " << opset << " output " << i;
    }
  }
  return back;
}

// data (N, 3, 8, 8): the MXNet exporter's conv net with a free batch dimension.
Graph free_batch_conv_net(std::mt19937& rng) {
  return kiln::mxnet::testing::conv_net(rng, -1);
}

TEST(OnnxExport, ConvNetAtEveryOpset) {
  std::mt19937 rng(1);
  const Graph g = free_batch_conv_net(rng);
  for (int opset : {13, 17, 18, 21, kNewestOpset}) {
    for (int64_t batch : {1, 3}) round_trip(g, opset, {{"data", random_tensor({batch, 3, 8, 8}, rng)}});
    const auto model = parse(export_model_bytes(g, {.opset = opset}));
    EXPECT_EQ(model.opset_import(0).version(), opset);
    EXPECT_EQ(model.producer_name(), "kiln");
  }
  EXPECT_EQ(parse(export_model_bytes(g, {.opset = 13})).ir_version(), 7);
  EXPECT_EQ(parse(export_model_bytes(g, {.opset = 17})).ir_version(), 8);
  EXPECT_EQ(parse(export_model_bytes(g, {.opset = 21})).ir_version(), 10);
}

TEST(OnnxExport, ManyOpsRoundTripAtTheNewestOpset) {
  std::mt19937 rng(2);
  const Graph g = kiln::mxnet::testing::onnx_mix(rng);
  for (int opset : {20, kNewestOpset}) round_trip(g, opset, {{"x", random_tensor({2, 4, 6, 6}, rng)}});
}

TEST(OnnxExport, FreeDimensionsStayFree) {
  std::mt19937 rng(3);
  const Graph g = free_batch_conv_net(rng);
  const auto model = parse(export_model_bytes(g));
  const auto& input = model.graph().input(0);
  EXPECT_EQ(input.name(), "data");
  EXPECT_EQ(input.type().tensor_type().elem_type(), ::onnx::TensorProto::FLOAT);
  const auto& dims = input.type().tensor_type().shape().dim();
  ASSERT_EQ(dims.size(), 4);
  EXPECT_EQ(dims[0].dim_param(), "N");
  EXPECT_EQ(dims[1].dim_value(), 3);
  EXPECT_EQ(dims[3].dim_value(), 8);
  const auto& out = model.graph().output(0).type().tensor_type().shape().dim();
  ASSERT_EQ(out.size(), 2);
  EXPECT_FALSE(out[0].has_dim_value());
  EXPECT_EQ(out[1].dim_value(), 10);
  // Every intermediate has a type: inference knows them all here.
  EXPECT_EQ(model.graph().value_info_size(), static_cast<int>(g.num_nodes()) - 1);
  const Graph back = import_model_bytes(model.SerializeAsString(), "", "back");
  EXPECT_EQ(back.inputs()[0]->info->shape, (Shape{-1, 3, 8, 8}));

  // Two inputs with free first axes may differ in size: one dim_param each.
  Graph two;
  two.name = "two_inputs";
  Value* a = two.add_input("a", TensorInfo{DType::kFloat32, Shape{-1, 4}});
  Value* b = two.add_input("b", TensorInfo{DType::kFloat32, Shape{-1, 4}});
  two.set_outputs({op(two, "Concat", {a, b}, {{"axis", 0}}, "cat")});
  const auto two_model = parse(export_model_bytes(two));
  EXPECT_EQ(two_model.graph().input(0).type().tensor_type().shape().dim(0).dim_param(), "a_dim0");
  EXPECT_EQ(two_model.graph().input(1).type().tensor_type().shape().dim(0).dim_param(), "b_dim0");
}

// x (batch, 6, 4) -> Reshape to Concat(Shape(x)[0], 3, 8) -> Relu, and Relu > 0.5.
Graph runtime_reshape(int64_t batch) {
  Graph g;
  g.name = "shape_arithmetic";
  Value* x = g.add_input("x", TensorInfo{DType::kFloat32, Shape{batch, 6, 4}});
  Value* first = op(g, "Gather", {op(g, "Shape", {x}, {}, "shape"), ints(g, "zero", {0})}, {}, "batch");
  Value* target = op(g, "Concat", {first, ints(g, "rest", {3, 8})}, {{"axis", 0}}, "target");
  Value* y = op(g, "Relu", {op(g, "Reshape", {x, target}, {}, "reshape")}, {}, "relu");
  g.set_outputs({y, op(g, "Greater", {y, g.add_initializer("half", Tensor::scalar(0.5, DType::kFloat32))})});
  return g;
}

// Inference leaves a Reshape whose shape is computed unknown, and everything after it; the
// outputs still get their rank and static dimensions (the ONNX checker requires a shape on every
// graph output): free ones where the batch is free, all of them where it is not.
TEST(OnnxExport, OutputsAfterRunTimeShapesGetRanks) {
  for (int64_t batch : {int64_t{-1}, int64_t{2}}) {
    const Graph g = runtime_reshape(batch);
    const auto model = parse(export_model_bytes(g));
    const auto& y_type = model.graph().output(0).type().tensor_type();
    EXPECT_EQ(y_type.elem_type(), ::onnx::TensorProto::FLOAT);
    ASSERT_EQ(y_type.shape().dim_size(), 3);
    // A missing dim_value reads as 0.
    EXPECT_EQ(y_type.shape().dim(0).dim_value(), batch > 0 ? batch : 0);
    EXPECT_EQ(y_type.shape().dim(1).dim_value(), 3);
    EXPECT_EQ(y_type.shape().dim(2).dim_value(), 8);
    EXPECT_EQ(model.graph().output(1).type().tensor_type().elem_type(), ::onnx::TensorProto::BOOL);
    std::mt19937 rng(4);
    round_trip(g, 17, {{"x", random_tensor({2, 6, 4}, rng)}});
  }
}

Graph reductions() {
  Graph g;
  g.name = "reductions";
  Value* x = g.add_input("x", TensorInfo{DType::kFloat32, Shape{-1, 4, 5}});
  g.set_outputs({
      op(g, "ReduceMean", {x, ints(g, "axis1", {1})}, {{"keepdims", 0}}, "mean"),
      op(g, "ReduceMax", {x, ints(g, "last", {-1})}, {}, "max"),
      op(g, "ReduceL2", {x}, {{"keepdims", 0}}, "l2_all"),
      op(g, "ReduceSumSquare", {x, ints(g, "none", {})}, {{"noop_with_empty_axes", 1}}, "noop"),
      op(g, "ReduceLogSumExp", {x, ints(g, "axes12", {1, 2})}, {{"noop_with_empty_axes", 0}}, "lse"),
      op(g, "ReduceSum", {x, ints(g, "axis2", {2})}, {}, "sum"),
      op(g, "ReduceMax", {x}, {{"noop_with_empty_axes", 1}}, "noop_max"),
  });
  return g;
}

TEST(OnnxExport, ReduceAxesBecomeAttributesBefore18) {
  const Graph g = reductions();
  std::mt19937 rng(5);
  for (int opset : {13, 17, 18}) round_trip(g, opset, {{"x", random_tensor({2, 4, 5}, rng)}});

  const auto old = parse(export_model_bytes(g, {.opset = 17}));
  const auto& mean = node_named(old, "mean");
  EXPECT_EQ(mean.input_size(), 1);
  ASSERT_NE(attribute(mean, "axes"), nullptr);
  EXPECT_EQ(
      std::vector<int64_t>(attribute(mean, "axes")->ints().begin(), attribute(mean, "axes")->ints().end()),
      (std::vector<int64_t>{1}));
  EXPECT_EQ(attribute(node_named(old, "max"), "axes")->ints(0), -1);
  EXPECT_EQ(node_named(old, "l2_all").input_size(), 1);
  EXPECT_EQ(attribute(node_named(old, "l2_all"), "axes"), nullptr);
  // No axes with noop_with_empty_axes: nothing is reduced, but ReduceSumSquare still squares.
  EXPECT_EQ(node_named(old, "noop").op_type(), "Mul");
  EXPECT_EQ(node_named(old, "noop_max").op_type(), "Identity");
  EXPECT_EQ(attribute(node_named(old, "lse"), "noop_with_empty_axes"), nullptr);
  // ReduceSum has taken axes as an input since 13.
  EXPECT_EQ(node_named(old, "sum").input_size(), 2);
  for (const auto& init : old.graph().initializer()) EXPECT_NE(init.name(), "axis1") << "unused initializer";

  const auto newest = parse(export_model_bytes(g, {.opset = 18}));
  EXPECT_EQ(node_named(newest, "mean").input_size(), 2);
  EXPECT_EQ(attribute(node_named(newest, "mean"), "axes"), nullptr);
}

TEST(OnnxExport, ReduceFormsOpset17CannotSayAreRefused) {
  Graph g;
  g.name = "runtime_axes";
  Value* x = g.add_input("x", TensorInfo{DType::kFloat32, Shape{2, 3}});
  Value* axes = g.add_input("axes", TensorInfo{DType::kInt64, Shape{1}});
  g.set_outputs({op(g, "ReduceMean", {x, axes}, {}, "mean")});
  expect_error([&] { export_model_bytes(g, {.opset = 17}); }, ErrorCode::kUnsupported,
               {"ReduceMean 'mean'", "axes (input 1)", "run time", "opset 17"});
  EXPECT_EQ(node_named(parse(export_model_bytes(g, {.opset = 18})), "mean").input_size(), 2);
  // sqrt(x * x) is no single op of opset 17.
  g.set_outputs({op(g, "ReduceL2", {x}, {{"noop_with_empty_axes", 1}}, "l2_noop")});
  expect_error([&] { export_model_bytes(g, {.opset = 17}); }, ErrorCode::kUnsupported,
               {"ReduceL2 'l2_noop'", "noop_with_empty_axes=1"});
}

TEST(OnnxExport, SplitNumOutputsBefore18) {
  Graph g;
  g.name = "splits";
  Value* x = g.add_input("x", TensorInfo{DType::kFloat32, Shape{-1, 8}});
  graph::Node* uneven = g.add_node("Split", {x}, {{"axis", 1}, {"num_outputs", 3}}, "uneven", 3);
  graph::Node* even = g.add_node("Split", {x}, {{"axis", -1}, {"num_outputs", 2}}, "even", 2);
  graph::Node* sized = g.add_node("Split", {x, ints(g, "sizes", {1, 7})}, {{"axis", 1}}, "sized", 2);
  std::vector<Value*> outputs = uneven->outputs;
  outputs.insert(outputs.end(), even->outputs.begin(), even->outputs.end());
  outputs.insert(outputs.end(), sized->outputs.begin(), sized->outputs.end());
  g.set_outputs(outputs);
  std::mt19937 rng(6);
  for (int opset : {13, 17, 18}) round_trip(g, opset, {{"x", random_tensor({3, 8}, rng)}});

  const auto old = parse(export_model_bytes(g, {.opset = 17}));
  for (const char* name : {"uneven", "even", "sized"})
    EXPECT_EQ(attribute(node_named(old, name), "num_outputs"), nullptr) << name;
  // 8 in 3 parts: 3, 3, 2 since opset 18; opset 17 needs them spelled out.
  ASSERT_EQ(node_named(old, "uneven").input_size(), 2);
  EXPECT_EQ(initializer_ints(old, node_named(old, "uneven").input(1)), (std::vector<int64_t>{3, 3, 2}));
  EXPECT_EQ(node_named(old, "even").input_size(), 1);
  EXPECT_NE(attribute(node_named(parse(export_model_bytes(g, {.opset = 18})), "uneven"), "num_outputs"),
            nullptr);
}

TEST(OnnxExport, PadAxesAndUpsampleBecomeOlderForms) {
  Graph g;
  g.name = "pad_upsample";
  Value* x = g.add_input("x", TensorInfo{DType::kFloat32, Shape{1, 2, 3, 4}});
  Value* padded =
      op(g, "Pad",
         {x, ints(g, "pads", {1, 0, 2, 3}), g.add_initializer("value", Tensor::scalar(0.5, DType::kFloat32)),
          ints(g, "pad_axes", {-1, 2})},
         {}, "pad");
  Value* up = op(g, "Upsample",
                 {x, g.add_initializer("scales", Tensor::from_vector<float>({1, 1, 2, 1.5f}, Shape{4}))},
                 {{"mode", "nearest"}}, "upsample");
  g.set_outputs({padded, up});
  std::mt19937 rng(7);
  for (int opset : {13, 17, 18}) round_trip(g, opset, {{"x", random_tensor({1, 2, 3, 4}, rng)}});

  const auto old = parse(export_model_bytes(g, {.opset = 17}));
  const auto& pad = node_named(old, "pad");
  EXPECT_EQ(pad.input_size(), 3);
  // pads (begins, then ends) for axes (3, 2): axis 3 gets 1 before and 2 after, axis 2 0 and 3.
  EXPECT_EQ(initializer_ints(old, pad.input(1)), (std::vector<int64_t>{0, 0, 0, 1, 0, 0, 3, 2}));
  const auto& resize = node_named(old, "upsample");
  EXPECT_EQ(resize.op_type(), "Resize");
  ASSERT_EQ(resize.input_size(), 3);
  EXPECT_EQ(resize.input(1), "");
  EXPECT_EQ(attribute(resize, "coordinate_transformation_mode")->s(), "asymmetric");
  EXPECT_EQ(node_named(parse(export_model_bytes(g, {.opset = 18})), "pad").input_size(), 4);
}

TEST(OnnxExport, AttributesOfEveryKind) {
  Graph g;
  g.name = "attributes";
  Value* x = g.add_input("x", TensorInfo{DType::kFloat32, Shape{2, 3}});
  Value* filled = op(g, "ConstantOfShape", {ints(g, "fill_shape", {2, 3})},
                     {{"value", Tensor::from_vector<float>({2.5f}, Shape{1})}}, "fill");
  Value* gemm = op(g, "Gemm", {x, filled}, {{"alpha", 0.5}, {"beta", 2}, {"transB", 1}}, "gemm");
  Value* resized =
      op(g, "Resize",
         {op(g, "Unsqueeze", {gemm, ints(g, "front", {0, 1})}, {}, "to_4d"), nullptr,
          g.add_initializer("scales", Tensor::from_vector<float>({1, 1, 2, 2}, Shape{4}))},
         {{"mode", "cubic"}, {"cubic_coeff_a", -0.5}, {"coordinate_transformation_mode", "align_corners"}},
         "resize");
  g.set_outputs({op(g, "Transpose", {resized}, {{"perm", {0, 1, 3, 2}}}, "transpose")});
  std::mt19937 rng(8);
  round_trip(g, 17, {{"x", random_tensor({2, 3}, rng)}});

  const auto model = parse(export_model_bytes(g));
  EXPECT_EQ(attribute(node_named(model, "fill"), "value")->type(), ::onnx::AttributeProto::TENSOR);
  // Given as an int, beta is written as the float the schema declares.
  EXPECT_EQ(attribute(node_named(model, "gemm"), "beta")->type(), ::onnx::AttributeProto::FLOAT);
  EXPECT_EQ(attribute(node_named(model, "gemm"), "beta")->f(), 2.f);
  EXPECT_EQ(attribute(node_named(model, "gemm"), "transB")->type(), ::onnx::AttributeProto::INT);
  EXPECT_EQ(attribute(node_named(model, "resize"), "mode")->s(), "cubic");
  EXPECT_EQ(attribute(node_named(model, "transpose"), "perm")->ints_size(), 4);
}

TEST(OnnxExport, ConstantOutputsAndUnusedOptionalOutputs) {
  Graph g;
  g.name = "outputs";
  Value* x = g.add_input("x", TensorInfo{DType::kFloat32, Shape{1, 1, 4, 4}});
  graph::Node* pool = g.add_node("MaxPool", {x}, {{"kernel_shape", {2, 2}}}, "pool", 2);
  graph::Node* dropout = g.add_node("Dropout", {pool->outputs[0]}, {}, "dropout", 2);
  Value* constant = g.add_initializer("constant_out", Tensor::from_vector<float>({1, 2}, Shape{2}));
  g.set_outputs({dropout->outputs[0], constant});
  std::mt19937 rng(9);
  round_trip(g, 13, {{"x", random_tensor({1, 1, 4, 4}, rng)}});

  const auto model = parse(export_model_bytes(g, {.opset = 13}));
  EXPECT_EQ(node_named(model, "pool").output_size(), 1);
  EXPECT_EQ(node_named(model, "dropout").output_size(), 1);
  EXPECT_EQ(node_named(model, "constant_out/constant").op_type(), "Constant");
  EXPECT_EQ(model.graph().initializer_size(), 0);
}

TEST(OnnxExport, WhatTheOpsetCannotSayIsRefusedNamingEveryNode) {
  Graph g;
  g.name = "too_new";
  Value* x = g.add_input("x", TensorInfo{DType::kFloat32, Shape{2, 4}});
  Value* y = op(g, "Gelu", {x}, {}, "gelu");
  y = op(g, "LayerNormalization",
         {y, g.add_initializer("scale", Tensor::full(Shape{4}, 1.0, DType::kFloat32))}, {}, "norm");
  y = op(g, "Resize",
         {op(g, "Unsqueeze", {y, ints(g, "front", {0, 1})}), nullptr,
          g.add_initializer("scales", Tensor::from_vector<float>({1, 1, 2, 2}, Shape{4}))},
         {{"antialias", 1}, {"mode", "linear"}}, "smooth");
  g.set_outputs({y});
  expect_error([&] { export_model_bytes(g, {.opset = 17}); }, ErrorCode::kUnsupported,
               {"to ONNX opset 17: 2 nodes cannot be written", "Gelu 'gelu': Gelu needs opset 20",
                "Resize 'smooth': attribute antialias=1 needs opset 18"});
  expect_error([&] { export_model_bytes(g, {.opset = 13}); }, ErrorCode::kUnsupported,
               {"3 nodes", "LayerNormalization 'norm': LayerNormalization needs opset 17"});
  EXPECT_NO_THROW(export_model_bytes(g, {.opset = 20}));
}

// GroupNormalization scales per channel since opset 21 and per group before; it exists since 18.
TEST(OnnxExport, GroupNormalizationScalesPerGroupBefore21) {
  const auto group_norm = [](const std::vector<float>& scale) {
    Graph g;
    g.name = "group_norm";
    Value* x = g.add_input("x", TensorInfo{DType::kFloat32, Shape{-1, 6, 3, 3}});
    g.set_outputs(
        {op(g, "GroupNormalization",
            {x, g.add_initializer("scale", Tensor::from_vector<float>(scale, Shape{6})),
             g.add_initializer("bias", Tensor::from_vector<float>({0.5f, 0.5f, -1, -1, 2, 2}, Shape{6}))},
            {{"num_groups", 3}}, "norm")});
    return g;
  };
  std::mt19937 rng(11);
  const Graph per_group = group_norm({1.5f, 1.5f, -2, -2, 0.25f, 0.25f});
  for (int opset : {18, 20, 21, kNewestOpset})
    round_trip(per_group, opset, {{"x", random_tensor({2, 6, 3, 3}, rng)}});
  const auto old = parse(export_model_bytes(per_group, {.opset = 20}));
  EXPECT_EQ(old.graph().initializer_size(), 2);
  for (const auto& init : old.graph().initializer()) EXPECT_EQ(init.dims(0), 3) << init.name();

  const Graph per_channel = group_norm({1, 2, 3, 4, 5, 6});
  round_trip(per_channel, 21, {{"x", random_tensor({1, 6, 3, 3}, rng)}});
  expect_error([&] { export_model_bytes(per_channel, {.opset = 20}); }, ErrorCode::kUnsupported,
               {"GroupNormalization 'norm'", "scale differs within group 0", "opset 21"});
  expect_error([&] { export_model_bytes(per_group, {.opset = 17}); }, ErrorCode::kUnsupported,
               {"GroupNormalization needs opset 18"});
}

TEST(OnnxExport, OpsetsOutsideTheRangeAreRefused) {
  std::mt19937 rng(10);
  const Graph g = free_batch_conv_net(rng);
  expect_error([&] { export_model_bytes(g, {.opset = 12}); }, ErrorCode::kInvalidArgument,
               {"opset 12", "13 to"});
  expect_error([&] { export_model_bytes(g, {.opset = kNewestOpset + 1}); }, ErrorCode::kInvalidArgument,
               {"opset " + std::to_string(kNewestOpset + 1)});
}

TEST(OnnxExport, WritesFiles) {
  TempDir dir;
  std::mt19937 rng(11);
  const Graph g = free_batch_conv_net(rng);
  export_model(g, dir / "net.onnx", {.opset = 13});
  const Graph back = import_model(dir / "net.onnx");
  EXPECT_EQ(back.num_nodes(), g.num_nodes());
  EXPECT_EQ(back.name, "net");
  expect_error([&] { export_model(g, dir / "no/such/folder/net.onnx"); }, ErrorCode::kIo,
               {"no/such/folder/net.onnx"});
}

}  // namespace
}  // namespace kiln::onnx
