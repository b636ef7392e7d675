// The MXNet importer and the Symbol API: attribute strings, Reshape's special values, every
// unsupported node reported in one error, small graphs run against hand-computed values, and
// the Symbol API's lists and shapes against what MXNet 1.9.1 prints for the same net.
#include <gtest/gtest.h>

#include <cmath>
#include <functional>
#include <string>
#include <vector>

#include "frontends/mxnet/attr_parse.h"
#include "frontends/mxnet/import.h"
#include "graph/evaluate.h"
#include "kiln/error.hpp"
#include "kiln/symbol.hpp"
#include "test_support.h"

namespace kiln::mxnet {
namespace {

using Strings = std::vector<std::string>;

using kiln::testing::code_of;
using kiln::testing::message_of;

TEST(MxnetAttrParse, TuplesIntsFloatsAndBools) {
  EXPECT_EQ(parse_ints_attr("(3, 3)", "k"), (std::vector<int64_t>{3, 3}));
  EXPECT_EQ(parse_ints_attr("[1,2,3]", "k"), (std::vector<int64_t>{1, 2, 3}));
  EXPECT_EQ(parse_ints_attr("(3,)", "k"), (std::vector<int64_t>{3}));
  EXPECT_EQ(parse_ints_attr("()", "k"), (std::vector<int64_t>{}));
  EXPECT_EQ(parse_ints_attr("7", "k"), (std::vector<int64_t>{7}));
  EXPECT_EQ(parse_ints_attr("(0, -1, -4)", "k"), (std::vector<int64_t>{0, -1, -4}));
  EXPECT_EQ(parse_int_attr(" 32 ", "n"), 32);
  EXPECT_EQ(parse_int_attr("2.0", "n"), 2);
  EXPECT_DOUBLE_EQ(parse_float_attr("1e-05", "eps"), 1e-5);
  EXPECT_TRUE(parse_bool_attr("True", "b"));
  EXPECT_TRUE(parse_bool_attr("1", "b"));
  EXPECT_FALSE(parse_bool_attr("false", "b"));
  EXPECT_TRUE(is_none_attr("None"));
}

TEST(MxnetAttrParse, ErrorsNameTheAttribute) {
  EXPECT_EQ(code_of([] { parse_ints_attr("(3, x)", "Convolution 'c': attribute kernel"); }),
            ErrorCode::kInvalidArgument);
  EXPECT_NE(message_of([] { parse_ints_attr("(3, x)", "Convolution 'c': attribute kernel"); }).find("kernel"),
            std::string::npos);
  EXPECT_EQ(code_of([] { parse_bool_attr("maybe", "b"); }), ErrorCode::kInvalidArgument);
  EXPECT_EQ(code_of([] { parse_ints_attr("(3, 3", "k"); }), ErrorCode::kInvalidArgument);
  EXPECT_EQ(code_of([] { parse_float_attr("1.5x", "f"); }), ErrorCode::kInvalidArgument);
  const std::map<std::string, std::string> raw{{"kernel", "(2, 2)"}, {"axis", "None"}};
  const MxnetAttrs attrs(raw, "Pooling 'p'");
  EXPECT_EQ(attrs.get_ints("kernel"), (std::vector<int64_t>{2, 2}));
  EXPECT_FALSE(attrs.has("axis"));
  EXPECT_EQ(attrs.get_int("axis", -1), -1);
  EXPECT_NE(message_of([&] { attrs.require_int("num_filter"); }).find("Pooling 'p'"), std::string::npos);
}

TEST(MxnetReshape, SpecialValues) {
  const Shape in{2, 3, 4};
  using V = std::vector<int64_t>;
  EXPECT_EQ(resolve_reshape(in, {0, -1}, false, "r"), (V{2, 12}));
  EXPECT_EQ(resolve_reshape(in, {4, 0, 2}, false, "r"), (V{4, 3, 2}));
  EXPECT_EQ(resolve_reshape(in, {-2}, false, "r"), (V{2, 3, 4}));
  EXPECT_EQ(resolve_reshape(in, {2, -2}, false, "r"), (V{2, 3, 4}));
  EXPECT_EQ(resolve_reshape(in, {-3, 4}, false, "r"), (V{6, 4}));
  EXPECT_EQ(resolve_reshape(in, {0, -3}, false, "r"), (V{2, 12}));
  EXPECT_EQ(resolve_reshape(in, {-4, 1, 2, -2}, false, "r"), (V{1, 2, 3, 4}));
  EXPECT_EQ(resolve_reshape(in, {2, -4, -1, 3, -2}, false, "r"), (V{2, 1, 3, 4}));
  // MXNet's documented reverse example: (10, 5, 4) with (-1, 0) is (40, 5), reversed (50, 4).
  EXPECT_EQ(resolve_reshape(Shape{10, 5, 4}, {-1, 0}, false, "r"), (V{40, 5}));
  EXPECT_EQ(resolve_reshape(Shape{10, 5, 4}, {-1, 0}, true, "r"), (V{50, 4}));
  EXPECT_EQ(code_of([&] { resolve_reshape(in, {5, 5}, false, "r"); }), ErrorCode::kShapeMismatch);
  EXPECT_EQ(code_of([&] { resolve_reshape(in, {-1, -1}, false, "r"); }), ErrorCode::kShapeMismatch);
}

TEST(MxnetImport, ReshapeNeedsAKnownInputShape) {
  // -3 (merge two dimensions) has no ONNX equivalent: it is resolved against the input's shape.
  const Symbol net = sym::Reshape(Symbol::Variable("data"), {0, -3}, "flat");
  graph::Graph g = import_symbol(net.to_mxnet(), {}, "net", {{"data", Shape{2, 3, 4}}});
  const Tensor x = Tensor::from_vector(std::vector<float>(24, 1.0f), Shape{2, 3, 4});
  const auto out = graph::evaluate(g, {{"data", x}});
  EXPECT_EQ(out[0].shape(), (Shape{2, 12}));
  EXPECT_EQ(g.outputs()[0]->name, "flat_output");
  const std::string msg = message_of([&] { import_symbol(net.to_mxnet(), {}, "net"); });
  EXPECT_EQ(code_of([&] { import_symbol(net.to_mxnet(), {}, "net"); }), ErrorCode::kUnsupported);
  EXPECT_NE(msg.find("Reshape 'flat'"), std::string::npos) << msg;
}

TEST(MxnetImport, EveryUnsupportedNodeInOneError) {
  const Symbol data = Symbol::Variable("data");
  const Symbol st = Symbol::Create("SpatialTransformer", {data, Symbol::Variable("loc")},
                                   {{"target_shape", "(5, 5)"}, {"transform_type", "affine"}}, "st1");
  const Symbol odd = Symbol::Create("_contrib_Frobnicate", {st}, {}, "frob");
  const Symbol nhwc = Symbol::Create(
      "Convolution", {data, Symbol::Variable("w")},
      {{"kernel", "(3, 3)"}, {"num_filter", "4"}, {"layout", "NHWC"}, {"no_bias", "True"}}, "conv_nhwc");
  const Symbol act = Symbol::Create("Activation", {data}, {{"act_type", "swishy"}}, "act");
  const Symbol after = sym::Flatten(odd, "after_frob");  // fed by a failed node: not reported again
  const Symbol net = Symbol::Group({after, nhwc, act});
  std::string msg;
  ErrorCode code = ErrorCode::kInternal;
  try {
    import_symbol(net.to_mxnet(), {}, "odd_model");
  } catch (const Error& e) {
    msg = e.what();
    code = e.code();
  }
  EXPECT_EQ(code, ErrorCode::kUnsupported);
  for (const char* part : {"odd_model", "4 nodes", "SpatialTransformer 'st1'", "_contrib_Frobnicate 'frob'",
                           "Convolution 'conv_nhwc'", "NHWC", "Activation 'act'", "swishy"})
    EXPECT_NE(msg.find(part), std::string::npos) << part << " missing from: " << msg;
  EXPECT_EQ(msg.find("after_frob"), std::string::npos) << msg;
}

// data (1, 2, 2, 2) = 1..8; checks FullyConnected both ways, scalar ops, sum pooling,
// split with squeeze_axis, SoftmaxOutput's unused label and MXNet's output names.
TEST(MxnetImport, SmallGraphValues) {
  const Symbol data = Symbol::Variable("data");
  const Symbol fc = sym::FullyConnected(data, 2, false, true, "fc");
  const Symbol fc_last = sym::FullyConnected(data, 3, true, false, "fc_last");
  const Symbol pool = sym::Pooling(data, {.pool_type = "sum", .kernel = {2, 2}}, "pool");
  const Symbol scaled = (pool * 2.0) - 1.0;
  const Symbol parts =
      Symbol::Create("SliceChannel", {data}, {{"num_outputs", "2"}, {"squeeze_axis", "1"}}, "sp");
  const Symbol prob = sym::SoftmaxOutput(fc, "softmax");
  const Symbol net = Symbol::Group({prob, fc_last, scaled, parts[1]});

  NamedTensors params;
  params.names = {"arg:fc_weight", "arg:fc_bias", "arg:fc_last_weight"};
  std::vector<float> w(16, 0.0f);
  w[0] = 1.0f;   // unit 0 reads element 0
  w[15] = 1.0f;  // unit 1 reads element 7
  params.tensors = {Tensor::from_vector(w, Shape{2, 8}),
                    Tensor::from_vector(std::vector<float>{0.0f, 7.0f}, Shape{2}),
                    Tensor::from_vector(std::vector<float>{1, 0, 0, 1, 1, 1}, Shape{3, 2})};
  graph::Graph g = import_symbol(net.to_mxnet(), params, "small", {{"data", Shape{1, 2, 2, 2}}});
  ASSERT_EQ(g.inputs().size(), 1u);  // softmax_label is never read
  EXPECT_EQ(g.inputs()[0]->name, "data");
  std::vector<std::string> names;
  for (const graph::Value* v : g.outputs()) names.push_back(v->name);
  EXPECT_EQ(names, (Strings{"softmax_output", "fc_last_output", scaled.list_outputs()[0], "sp_output1"}));

  std::vector<float> x(8);
  for (int i = 0; i < 8; ++i) x[static_cast<size_t>(i)] = static_cast<float>(i + 1);
  const auto out = graph::evaluate(g, {{"data", Tensor::from_vector(x, Shape{1, 2, 2, 2})}});
  // fc = (1, 8 + 7): softmax of (1, 15).
  const auto p = out[0].to_vector<float>();
  EXPECT_NEAR(p[1], 1.0 / (1.0 + std::exp(-14.0)), 1e-6);
  // fc_last on the last axis (2 values) of every row: (a, b) -> (a, b, a + b).
  EXPECT_EQ(out[1].shape(), (Shape{1, 2, 2, 3}));
  EXPECT_EQ(out[1].to_vector<float>()[2], 3.0f);
  // sum pooling of each 2x2 channel: 10 and 26; then * 2 - 1.
  EXPECT_EQ(out[2].to_vector<float>(), (std::vector<float>{19.0f, 51.0f}));
  EXPECT_EQ(out[3].shape(), (Shape{1, 2, 2}));
  EXPECT_EQ(out[3].to_vector<float>()[0], 5.0f);
}

// What MXNet 1.9.1 prints for this net (mx.sym with the same names; data (2, 3, 16, 16)).
TEST(MxnetSymbol, ListsAndShapesMatchMxnet) {
  const Symbol data = Symbol::Variable("data");
  const Symbol conv = sym::Convolution(data, {.kernel = {3, 3}, .num_filter = 8, .pad = {1, 1}}, "conv0");
  const Symbol bn = sym::BatchNorm(conv, {}, "bn0");
  const Symbol relu = sym::Activation(bn, "relu", "relu0");
  const Symbol pool = sym::Pooling(relu, {.pool_type = "max", .kernel = {2, 2}, .stride = {2, 2}}, "pool0");
  const Symbol fc = sym::FullyConnected(sym::Flatten(pool, "flat0"), 10, false, true, "fc0");
  const Symbol net = sym::SoftmaxOutput(fc, "softmax");

  const Strings args{"data",     "conv0_weight", "conv0_bias", "bn0_gamma",
                     "bn0_beta", "fc0_weight",   "fc0_bias",   "softmax_label"};
  EXPECT_EQ(net.list_arguments(), args);
  EXPECT_EQ(net.list_outputs(), Strings{"softmax_output"});
  EXPECT_EQ(net.list_auxiliary_states(), (Strings{"bn0_moving_mean", "bn0_moving_var"}));

  const Symbol::InferredShapes s = net.infer_shape({{"data", Shape{2, 3, 16, 16}}});
  EXPECT_TRUE(s.complete);
  EXPECT_EQ(s.arg_shapes, (std::vector<Shape>{Shape{2, 3, 16, 16}, Shape{8, 3, 3, 3}, Shape{8}, Shape{8},
                                              Shape{8}, Shape{10, 512}, Shape{10}, Shape{2}}));
  EXPECT_EQ(s.out_shapes, (std::vector<Shape>{Shape{2, 10}}));
  EXPECT_EQ(s.aux_shapes, (std::vector<Shape>{Shape{8}, Shape{8}}));

  // The JSON keeps the graph: loading it back lists the same names and holds the same nodes.
  const Symbol back = Symbol::load_json(net.tojson());
  EXPECT_EQ(back.list_arguments(), args);
  EXPECT_EQ(back.list_auxiliary_states(), net.list_auxiliary_states());
  EXPECT_EQ(back.list_outputs(), net.list_outputs());
  EXPECT_EQ(back.to_mxnet().nodes, net.to_mxnet().nodes);
  const MxnetSymbol m = net.to_mxnet();
  EXPECT_EQ(m.nodes[3].attrs, (std::map<std::string, std::string>{
                                  {"kernel", "(3, 3)"}, {"num_filter", "8"}, {"pad", "(1, 1)"}}));
  EXPECT_EQ(m.arg_nodes, (std::vector<int>{0, 1, 2, 4, 5, 6, 7, 12, 13, 15}));

  const Symbol parts = Symbol::Create("SliceChannel", {data}, {{"num_outputs", "3"}}, "sp");
  EXPECT_EQ(parts.list_outputs(), (Strings{"sp_output0", "sp_output1", "sp_output2"}));
}

TEST(MxnetSymbol, AutomaticNamesFollowMxnet) {
  const Symbol data = Symbol::Variable("data");
  const Symbol conv = sym::Convolution(data, {.kernel = {3, 3}, .num_filter = 4});
  EXPECT_EQ(conv.name().rfind("convolution", 0), 0u) << conv.name();
  EXPECT_EQ(conv.list_arguments(), (Strings{"data", conv.name() + "_weight", conv.name() + "_bias"}));
  EXPECT_EQ((conv + conv).name().rfind("_plus", 0), 0u);
  EXPECT_EQ((conv * 2.0).name().rfind("_mulscalar", 0), 0u);
  EXPECT_EQ((conv * 2.0).to_mxnet().nodes.back().attrs.at("scalar"), "2.0");
}

TEST(MxnetSymbol, SimpleBindAndForward) {
  const Symbol data = Symbol::Variable("data");
  const Symbol net = sym::FullyConnected(sym::Activation(data, "relu"), 2, false, true, "fc");
  Executor exe = net.simple_bind(cpu(), {{"data", Shape{1, 3}}});
  EXPECT_EQ(exe.arg_dict().at("fc_weight").shape(), (Shape{2, 3}));
  exe.arg_dict()["data"] = nd::array<float>({-1, 2, 3}, Shape{1, 3});
  exe.arg_dict()["fc_weight"] = nd::array<float>({1, 1, 1, 0, 0, 1}, Shape{2, 3});
  exe.arg_dict()["fc_bias"] = nd::array<float>({0.5f, 0}, Shape{2});
  exe.forward(false);
  EXPECT_EQ(exe.outputs()[0].to_vector<float>(), (std::vector<float>{5.5f, 3.0f}));
  EXPECT_NO_THROW(exe.forward(true));  // training mode (Executor::backward) is supported
}

}  // namespace
}  // namespace kiln::mxnet
