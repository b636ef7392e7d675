// The MXNet exporter: a graph written with export_graph (through the JSON text and .params bytes)
// and read back with the importer computes what the original computes (graph::evaluate on both);
// ops MXNet has become MXNet ops, the others `_kiln_` nodes that come back unchanged; errors name
// the node. Real MXNet 1.9.1 runs exported files in mxnet_export.py.
#include <gtest/gtest.h>

#include <cmath>
#include <filesystem>
#include <functional>
#include <limits>
#include <set>
#include <sstream>

#include "frontends/export_test_graphs.h"
#include "frontends/mxnet/export.h"
#include "frontends/mxnet/import.h"
#include "graph/evaluate.h"
#include "kiln/error.hpp"
#include "kiln/predictor.hpp"
#include "test_support.h"

namespace kiln::mxnet {
namespace {

using graph::Graph;
using graph::Value;
using ops::TensorInfo;
using kiln::testing::code_of;
using kiln::testing::message_of;
using testing::conv_net;
using testing::ints;
using testing::onnx_mix;
using testing::op;
using testing::random_tensor;
using testing::scalar;
using Strings = std::vector<std::string>;

// The model as MXNet's files hold it: JSON text and .params bytes, read back.
ExportedModel through_files(const ExportedModel& m) {
  std::stringstream params;
  write_params(params, m.params, "memory");
  return {parse_symbol_json(to_symbol_json(m.symbol), "memory"), read_params(params, "memory")};
}

Graph round_trip(const Graph& g, const std::map<std::string, Shape>& shapes = {}) {
  const ExportedModel m = through_files(export_graph(g));
  return import_symbol(m.symbol, m.params, g.name, shapes);
}

// Same shapes and dtypes, values within `tolerance` of the largest magnitude (at least 1).
void expect_close(const std::vector<Tensor>& got, const std::vector<Tensor>& want, double tolerance = 1e-5) {
  ASSERT_EQ(got.size(), want.size());
  for (size_t i = 0; i < got.size(); ++i) {
    ASSERT_EQ(got[i].shape(), want[i].shape()) << "output " << i;
    ASSERT_EQ(got[i].dtype(), want[i].dtype()) << "output " << i;
    const auto a = got[i].cast(DType::kFloat64).to_vector<double>();
    const auto b = want[i].cast(DType::kFloat64).to_vector<double>();
    double scale = 1.0, error = 0.0;
    for (size_t j = 0; j < a.size(); ++j) {
      scale = std::max(scale, std::abs(b[j]));
      error = std::max(error, std::abs(a[j] - b[j]));
    }
    EXPECT_LE(error, tolerance * scale) << "output " << i;
  }
}

std::multiset<std::string> ops_of(const MxnetSymbol& s) {
  std::multiset<std::string> ops;
  for (const MxnetSymbol::Node& n : s.nodes)
    if (n.op != "null") ops.insert(n.op);
  return ops;
}

std::multiset<std::string> ops_of(const Graph& g) {
  std::multiset<std::string> ops;
  for (const graph::Node* n : g.nodes()) ops.insert(n->op);
  return ops;
}

const MxnetSymbol::Node& node_named(const MxnetSymbol& s, const std::string& name) {
  for (const MxnetSymbol::Node& n : s.nodes)
    if (n.name == name) return n;
  throw Error(ErrorCode::kNotFound, "no node named " + name);
}

TEST(MxnetExport, ConvNetBecomesMxnetOps) {
  std::mt19937 rng(1);
  const Graph g = conv_net(rng);
  const ExportedModel m = export_graph(g);
  EXPECT_EQ(ops_of(m.symbol), (std::multiset<std::string>{"Convolution", "BatchNorm", "Activation", "Pooling",
                                                          "Flatten", "FullyConnected", "softmax"}));
  EXPECT_EQ(node_named(m.symbol, "data").attrs,
            (std::map<std::string, std::string>{{"__shape__", "(1, 3, 8, 8)"}}));
  EXPECT_EQ(node_named(m.symbol, "conv").attrs, (std::map<std::string, std::string>{{"kernel", "(3, 3)"},
                                                                                    {"stride", "(1, 1)"},
                                                                                    {"dilate", "(1, 1)"},
                                                                                    {"pad", "(1, 1)"},
                                                                                    {"num_filter", "4"},
                                                                                    {"num_group", "1"},
                                                                                    {"no_bias", "False"}}));
  EXPECT_EQ(node_named(m.symbol, "bn").attrs.at("eps"), "1e-04");
  EXPECT_EQ(node_named(m.symbol, "bn").attrs.at("use_global_stats"), "True");
  EXPECT_EQ(
      node_named(m.symbol, "fc").attrs,
      (std::map<std::string, std::string>{{"num_hidden", "10"}, {"no_bias", "False"}, {"flatten", "True"}}));
  // Arguments, then BatchNorm's moving statistics as auxiliary states.
  EXPECT_EQ(m.params.names, (Strings{"arg:conv_w", "arg:conv_b", "arg:bn_scale", "arg:bn_bias", "arg:fc_w",
                                     "arg:fc_b", "aux:bn_mean", "aux:bn_var"}));
  EXPECT_EQ(m.symbol.arg_nodes.size(), 9u);

  const Graph back = round_trip(g);
  EXPECT_EQ(ops_of(back), (std::multiset<std::string>{"Conv", "BatchNormalization", "Relu", "MaxPool",
                                                      "Flatten", "Gemm", "Softmax"}));
  const Tensor x = random_tensor({1, 3, 8, 8}, rng);
  expect_close(graph::evaluate(back, {{"data", x}}), graph::evaluate(g, {{"data", x}}));
}

TEST(MxnetExport, UnknownDimensionsAreMxnetZeros) {
  std::mt19937 rng(2);
  const Graph g = conv_net(rng, Shape::kUnknown);
  const ExportedModel m = export_graph(g);
  EXPECT_EQ(node_named(m.symbol, "data").attrs.at("__shape__"), "(0, 3, 8, 8)");
  const Graph back = round_trip(g);
  EXPECT_EQ(back.inputs()[0]->info->shape, (Shape{-1, 3, 8, 8}));
  const Tensor x = random_tensor({3, 3, 8, 8}, rng);
  expect_close(graph::evaluate(back, {{"data", x}}), graph::evaluate(g, {{"data", x}}));

  // A Reshape whose shape uses only ONNX's 0 and -1 comes back without the input's shape.
  Graph r;
  r.name = "reshape";
  Value* in = r.add_input("x", TensorInfo{DType::kFloat32, Shape{-1, 4, 6}});
  r.set_outputs(
      {op(r, "Softmax", {op(r, "Reshape", {in, ints(r, "shape", {0, -1})}, {}, "flat")}, {}, "sm")});
  EXPECT_EQ(node_named(export_graph(r).symbol, "flat").attrs.at("shape"), "(0, -1)");
  const Tensor y = random_tensor({2, 4, 6}, rng);
  expect_close(graph::evaluate(round_trip(r), {{"x", y}}), graph::evaluate(r, {{"x", y}}));
}

TEST(MxnetExport, OnnxStyleOpsAllBecomeMxnetOps) {
  std::mt19937 rng(3);
  const Graph g = onnx_mix(rng);
  const ExportedModel m = export_graph(g);
  for (const std::string& o : ops_of(m.symbol)) EXPECT_EQ(o.rfind(kKilnOpPrefix, 0), std::string::npos) << o;
  EXPECT_EQ(node_named(m.symbol, "clip_max").attrs,
            (std::map<std::string, std::string>{{"a_min", "-inf"}, {"a_max", "0.20000000298023224"}}));
  EXPECT_EQ(node_named(m.symbol, "slice_end").attrs,
            (std::map<std::string, std::string>{{"axis", "2"}, {"begin", "1"}, {"end", "None"}}));
  EXPECT_EQ(node_named(m.symbol, "slice_neg").attrs,
            (std::map<std::string, std::string>{{"axis", "-1"}, {"begin", "2"}, {"end", "5"}}));
  EXPECT_EQ(node_named(m.symbol, "rminus_scalar").op, "_rminus_scalar");
  EXPECT_EQ(node_named(m.symbol, "rdiv_scalar").op, "_rdiv_scalar");
  EXPECT_EQ(node_named(m.symbol, "broadcast_div").op, "broadcast_div");
  EXPECT_EQ(node_named(m.symbol, "dot").op, "dot");
  EXPECT_EQ(node_named(m.symbol, "batch_dot").op, "batch_dot");
  EXPECT_EQ(node_named(m.symbol, "avg_ceil").attrs.at("pooling_convention"), "full");
  EXPECT_EQ(node_named(m.symbol, "deconv").attrs.at("adj"), "(1, 1)");
  // Gemm without transB: the weight is written transposed and the (1, 5) bias as (5,).
  const MxnetSymbol::Node& gemm = node_named(m.symbol, "gemm");
  EXPECT_EQ(gemm.op, "FullyConnected");
  EXPECT_EQ(m.symbol.nodes[static_cast<size_t>(gemm.inputs[1].node)].name, "gemm_w_t");
  const auto it = std::find(m.params.names.begin(), m.params.names.end(), "arg:gemm_w_t");
  ASSERT_NE(it, m.params.names.end());
  EXPECT_EQ(m.params.tensors[static_cast<size_t>(it - m.params.names.begin())].shape(), (Shape{5, 144}));
  // The PReLU slope (4, 1, 1) is MXNet's (4,) gamma.
  const MxnetSymbol::Node& prelu = node_named(m.symbol, "prelu");
  EXPECT_EQ(prelu.attrs.at("act_type"), "prelu");
  EXPECT_EQ(m.symbol.nodes[static_cast<size_t>(prelu.inputs[1].node)].name, "slope_flat");

  const Tensor x = random_tensor({2, 4, 6, 6}, rng);
  expect_close(graph::evaluate(round_trip(g), {{"x", x}}), graph::evaluate(g, {{"x", x}}));
}

// Ops MXNet lacks, a missing optional input, multi-output nodes, an int64 graph input.
Graph kiln_only(std::mt19937& rng) {
  Graph g;
  g.name = "kiln_only";
  Value* x = g.add_input("x", TensorInfo{DType::kFloat32, Shape{1, 2, 4, 4}});
  Value* idx = g.add_input("idx", TensorInfo{DType::kInt64, Shape{2}});
  Value* scales = g.add_initializer("scales", Tensor::from_vector(std::vector<float>{1, 1, 2, 2}, Shape{4}));
  Value* resize = op(g, "Resize", {x, nullptr, scales},
                     {{"mode", "linear"}, {"coordinate_transformation_mode", "align_corners"}}, "resize");
  Value* ln = op(g, "LayerNormalization",
                 {x, g.add_initializer("ln_scale", random_tensor({4, 4}, rng)),
                  g.add_initializer("ln_bias", random_tensor({4, 4}, rng))},
                 {{"axis", 2}, {"epsilon", 1e-3}}, "ln");  // over two axes: MXNet's LayerNorm takes one
  Value* gather = op(g, "Gather", {x, idx}, {{"axis", 2}}, "gather");
  Value* positive = op(g, "Greater", {x, scalar(g, "zero", 0.f)}, {}, "positive");
  Value* where = op(g, "Where", {positive, x, op(g, "Mul", {x, scalar(g, "tenth", 0.1f)})}, {}, "where");
  graph::Node* topk =
      g.add_node("TopK", {op(g, "Flatten", {x}, {{"axis", 1}}), ints(g, "k", {3})}, {{"axis", -1}}, "topk");
  graph::Node* split = g.add_node("Split", {x, ints(g, "sizes", {1, 3})}, {{"axis", 3}}, "split", 2);
  Value* hard = op(g, "HardSigmoid", {x}, {{"alpha", 0.3}}, "hard");
  g.set_outputs({resize, ln, gather, where, topk->outputs[0], topk->outputs[1], split->outputs[0],
                 split->outputs[1], hard});
  return g;
}

TEST(MxnetExport, KilnOnlyOpsTravelAsKilnNodes) {
  std::mt19937 rng(4);
  const Graph g = kiln_only(rng);
  const ExportedModel m = export_graph(g);
  EXPECT_EQ(node_named(m.symbol, "resize").op, "_kiln_Resize");
  EXPECT_EQ(node_named(m.symbol, "resize").attrs,
            (std::map<std::string, std::string>{{"mode", "linear"},
                                                {"coordinate_transformation_mode", "align_corners"},
                                                {kMissingInputsAttr, "(1,)"}}));
  EXPECT_EQ(node_named(m.symbol, "resize").inputs.size(), 2u);
  EXPECT_EQ(node_named(m.symbol, "ln").attrs.at("epsilon"), "0.001");
  EXPECT_EQ(node_named(m.symbol, "topk").attrs.at(kNumOutputsAttr), "2");
  EXPECT_EQ(node_named(m.symbol, "split").op, "_kiln_Split");  // uneven parts: not SliceChannel
  EXPECT_EQ(node_named(m.symbol, "idx").attrs,
            (std::map<std::string, std::string>{{"__shape__", "(2,)"}, {"__dtype__", "6"}}));
  EXPECT_EQ(node_named(m.symbol, "where").op, "_kiln_Where");
  EXPECT_EQ(node_named(m.symbol, "hard").attrs.at("alpha"), "0.3");

  const Graph back = round_trip(g);
  const graph::Node* resize = back.find_node("resize");
  ASSERT_NE(resize, nullptr);
  EXPECT_EQ(resize->op, "Resize");
  ASSERT_EQ(resize->inputs.size(), 3u);
  EXPECT_EQ(resize->inputs[1], nullptr);
  EXPECT_EQ(resize->attrs.at("mode").to_string(), "\"linear\"");
  EXPECT_EQ(back.find_node("topk")->outputs.size(), 2u);
  EXPECT_EQ(back.find_node("hard")->attrs.at("alpha").to_string(), "0.3");
  EXPECT_EQ(back.find_value("idx")->info->dtype, DType::kInt64);

  const std::map<std::string, Tensor> feed{
      {"x", random_tensor({1, 2, 4, 4}, rng)},
      {"idx", Tensor::from_vector(std::vector<int64_t>{3, 0}, Shape{2})}};
  expect_close(graph::evaluate(back, feed), graph::evaluate(g, feed), 0.0);
}

TEST(MxnetExport, SharedValuesAndOutputsKeepTheirWiring) {
  std::mt19937 rng(5);
  Graph g;
  g.name = "shared";
  const TensorInfo info{DType::kFloat32, Shape{2, 3}};
  Value* a = g.add_input("a", info);
  // Named like the MXNet output of node "relu": one of the two must be renamed in MXNet.
  Value* b = g.add_input("relu_output", info);
  Value* w = g.add_initializer("w", random_tensor({2, 3}, rng));
  Value* s = op(g, "Add", {a, b}, {}, "sum");
  Value* r = g.add_node_with_outputs("Relu", {s}, {}, "relu", {"r"})->outputs[0];
  Value* t = op(g, "Tanh", {s}, {}, "tanh");
  Value* mix = op(g, "Add", {op(g, "Mul", {r, w}), op(g, "Mul", {t, w})}, {}, "mix");
  graph::Node* split = g.add_node("Split", {a}, {{"axis", 0}, {"num_outputs", 2}}, "split", 2);
  g.set_outputs({s, r, a, r, w, mix, split->outputs[1]});

  const ExportedModel m = export_graph(g);
  std::set<std::string> names;
  for (const MxnetSymbol::Node& n : m.symbol.nodes) names.insert(n.name);
  EXPECT_EQ(names.size(), m.symbol.nodes.size());
  ASSERT_EQ(m.symbol.heads.size(), 7u);
  EXPECT_EQ(m.symbol.heads[1], m.symbol.heads[3]);
  EXPECT_EQ(m.symbol.nodes[static_cast<size_t>(m.symbol.heads[2].node)].name, "a");
  EXPECT_EQ(m.symbol.nodes[static_cast<size_t>(m.symbol.heads[4].node)].name, "w");
  EXPECT_EQ(m.symbol.heads[6].index, 1);
  EXPECT_EQ(m.symbol.nodes[static_cast<size_t>(m.symbol.heads[6].node)].op, "SliceChannel");
  // `s` feeds two nodes through one entry; `w` is one variable.
  EXPECT_EQ(std::count_if(m.symbol.nodes.begin(), m.symbol.nodes.end(),
                          [](const MxnetSymbol::Node& n) { return n.name == "w"; }),
            1);

  const std::map<std::string, Tensor> feed{{"a", random_tensor({2, 3}, rng)},
                                           {"relu_output", random_tensor({2, 3}, rng)}};
  expect_close(graph::evaluate(round_trip(g), feed), graph::evaluate(g, feed), 0.0);
}

TEST(MxnetExport, KilnAttributeTextRoundTrips) {
  const auto check = [](const AttrValue& v, AttrType type, const std::string& text) {
    EXPECT_EQ(format_kiln_attr(v, "a"), text);
    EXPECT_EQ(parse_kiln_attr(text, type, "a").to_string(), v.to_string()) << text;
  };
  check(int64_t{-7}, AttrType::kInt, "-7");
  check(0.1, AttrType::kFloat, "0.1");
  check(1e-5, AttrType::kFloat, "1e-05");
  check(static_cast<double>(0.1f), AttrType::kFloat, "0.10000000149011612");
  check(std::numeric_limits<double>::denorm_min(), AttrType::kFloat, "5e-324");
  check(-std::numeric_limits<double>::infinity(), AttrType::kFloat, "-inf");
  check(std::string("a, (b) \"c\""), AttrType::kString, "a, (b) \"c\"");
  check(std::vector<int64_t>{}, AttrType::kInts, "()");
  check(std::vector<int64_t>{3}, AttrType::kInts, "(3,)");
  check(std::vector<int64_t>{1, -2}, AttrType::kInts, "(1, -2)");
  check(std::vector<double>{0.5}, AttrType::kFloats, "(0.5,)");
  check(std::vector<double>{0.25, -2.5e-8}, AttrType::kFloats, "(0.25, -2.5e-08)");
  check(std::vector<std::string>{"a", "b,\"c\""}, AttrType::kStrings, "[\"a\",\"b,\\\"c\\\"\"]");
  EXPECT_TRUE(std::isnan(std::get<double>(parse_kiln_attr("nan", AttrType::kFloat, "a").variant())));
  EXPECT_EQ(code_of([] { parse_kiln_attr("(1,,2)", AttrType::kFloats, "a"); }), ErrorCode::kInvalidArgument);
  EXPECT_EQ(code_of([] { parse_kiln_attr("[1]", AttrType::kStrings, "a"); }), ErrorCode::kInvalidArgument);
  EXPECT_EQ(code_of([] { format_kiln_attr(Tensor::full(Shape{1}, 0.0, DType::kFloat32), "a"); }),
            ErrorCode::kUnsupported);
}

TEST(MxnetExport, ErrorsNameTheNode) {
  Graph g;
  g.name = "fill";
  Value* shape = g.add_input("shape", TensorInfo{DType::kInt64, Shape{2}});
  g.set_outputs(
      {op(g, "ConstantOfShape", {shape}, {{"value", Tensor::full(Shape{1}, 2.0, DType::kFloat32)}}, "fill")});
  std::string msg = message_of([&] { export_graph(g); });
  EXPECT_EQ(code_of([&] { export_graph(g); }), ErrorCode::kUnsupported);
  EXPECT_NE(msg.find("ConstantOfShape 'fill'"), std::string::npos) << msg;
  EXPECT_NE(msg.find("'value'"), std::string::npos) << msg;

  // `_kiln_` nodes that do not fit the op's schema.
  const auto import_kiln = [](const std::string& op, std::map<std::string, std::string> attrs) {
    MxnetSymbol s;
    s.nodes = {{"null", "x", {{"__shape__", "(2, 3)"}}, {}}, {op, "node", std::move(attrs), {{0, 0, 0}}}};
    s.arg_nodes = {0};
    s.heads = {{1, 0, 0}};
    import_symbol(s, {}, "net");
  };
  msg = message_of([&] { import_kiln("_kiln_Relu", {{"alpha", "0.5"}}); });
  EXPECT_NE(msg.find("_kiln_Relu 'node': Kiln op Relu has no attribute 'alpha'"), std::string::npos) << msg;
  msg = message_of([&] { import_kiln("_kiln_LeakyRelu", {{"alpha", "abc"}}); });
  EXPECT_NE(msg.find("attribute alpha = 'abc'"), std::string::npos) << msg;
  msg = message_of([&] { import_kiln("_kiln_Resize", {{kMissingInputsAttr, "(5,)"}}); });
  EXPECT_NE(msg.find("lists input 5"), std::string::npos) << msg;
  EXPECT_EQ(code_of([&] { import_kiln("_kiln_Frobnicate", {}); }), ErrorCode::kUnsupported);
  // Hidden MXNet attributes are ignored.
  EXPECT_NO_THROW(import_kiln("_kiln_Relu", {{"__lr_mult__", "2"}}));

  std::mt19937 rng(6);
  const Graph net = conv_net(rng);
  EXPECT_EQ(code_of([&] { save_checkpoint(net, "unused", -1); }), ErrorCode::kInvalidArgument);
  EXPECT_EQ(code_of([&] { save_checkpoint(net, "/nonexistent-dir/net", 0); }), ErrorCode::kIo);
}

TEST(MxnetExport, SaveCheckpointWritesMxnetFileNames) {
  std::mt19937 rng(7);
  const Graph g = conv_net(rng);
  const std::filesystem::path dir = std::filesystem::temp_directory_path() / "kiln_mxnet_export_test";
  std::filesystem::create_directories(dir);
  save_checkpoint(g, (dir / "net").string(), 7);
  EXPECT_TRUE(std::filesystem::exists(dir / "net-symbol.json"));
  EXPECT_TRUE(std::filesystem::exists(dir / "net-0007.params"));
  const Predictor predictor = Predictor::load((dir / "net").string());
  const Tensor x = random_tensor({1, 3, 8, 8}, rng);
  expect_close(predictor.predict({x}), graph::evaluate(g, {{"data", x}}));
  std::filesystem::remove_all(dir);
}

}  // namespace
}  // namespace kiln::mxnet
