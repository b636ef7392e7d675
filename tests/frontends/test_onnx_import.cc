// The ONNX importer on models built here with the protobuf API: older opset forms give the same
// numbers as the newest form, free dimensions stay free, external data is read, and every kind of
// bad file is refused with an error that names the problem, before anything is allocated.
#include <gtest/gtest.h>

#include <cmath>
#include <fstream>

#include "frontends/onnx/import.h"
#include "frontends/onnx/tensor_proto.h"
#include "graph/evaluate.h"
#include "kiln/predictor.hpp"
#include "onnx/onnx_pb.h"
#include "test_support.h"

namespace kiln::onnx {
namespace {

using kiln::testing::expect_error;
using kiln::testing::TempDir;

// A model under construction: one graph in the default domain at `opset`.
class ModelBuilder {
 public:
  explicit ModelBuilder(int opset = 17) {
    model_.set_ir_version(8);
    auto* entry = model_.add_opset_import();
    entry->set_domain("");
    entry->set_version(opset);
    model_.mutable_graph()->set_name("test");
  }

  ModelBuilder& input(const std::string& name, std::vector<int64_t> dims, int elem_type = 1,
                      const std::string& free_dim = "N") {
    auto* tensor = model_.mutable_graph()->add_input()->mutable_type()->mutable_tensor_type();
    model_.mutable_graph()->mutable_input()->rbegin()->set_name(name);
    tensor->set_elem_type(elem_type);
    for (int64_t d : dims) {
      auto* dim = tensor->mutable_shape()->add_dim();
      if (d < 0)
        dim->set_dim_param(free_dim);
      else
        dim->set_dim_value(d);
    }
    return *this;
  }
  ModelBuilder& initializer(const Tensor& value, const std::string& name) {
    *model_.mutable_graph()->add_initializer() = tensor_to_proto(value, name);
    return *this;
  }
  ::onnx::NodeProto& node(const std::string& op, std::vector<std::string> inputs,
                          std::vector<std::string> outputs, const std::string& name = "") {
    auto* n = model_.mutable_graph()->add_node();
    n->set_op_type(op);
    n->set_name(name.empty() ? op + std::to_string(model_.graph().node_size()) : name);
    for (const auto& in : inputs) n->add_input(in);
    for (const auto& out : outputs) n->add_output(out);
    return *n;
  }
  ModelBuilder& output(const std::string& name) {
    model_.mutable_graph()->add_output()->set_name(name);
    return *this;
  }
  ::onnx::ModelProto& proto() { return model_; }
  std::string bytes() const { return model_.SerializeAsString(); }
  graph::Graph import(const std::string& base_dir = "") const {
    return import_model_bytes(bytes(), base_dir, "test");
  }

 private:
  ::onnx::ModelProto model_;
};

void set_ints(::onnx::NodeProto& node, const std::string& name, const std::vector<int64_t>& values) {
  auto* attr = node.add_attribute();
  attr->set_name(name);
  attr->set_type(::onnx::AttributeProto::INTS);
  for (int64_t v : values) attr->add_ints(v);
}

void set_int(::onnx::NodeProto& node, const std::string& name, int64_t value) {
  auto* attr = node.add_attribute();
  attr->set_name(name);
  attr->set_type(::onnx::AttributeProto::INT);
  attr->set_i(value);
}

void set_float(::onnx::NodeProto& node, const std::string& name, float value) {
  auto* attr = node.add_attribute();
  attr->set_name(name);
  attr->set_type(::onnx::AttributeProto::FLOAT);
  attr->set_f(value);
}

Tensor iota(const Shape& shape, float start = 0.f, float step = 1.f) {
  std::vector<float> v(static_cast<size_t>(shape.numel()));
  for (size_t i = 0; i < v.size(); ++i) v[i] = start + step * static_cast<float>(i);
  return Tensor::from_vector<float>(v, shape);
}

std::vector<float> run(const graph::Graph& g, const std::map<std::string, Tensor>& inputs, int output = 0) {
  return graph::evaluate(g, inputs).at(static_cast<size_t>(output)).to_vector<float>();
}

TEST(OnnxImport, OldOpsetAttributesBecomeInputs) {
  // Opset 9: Unsqueeze/Squeeze/ReduceSum/Split/Slice take attributes that are inputs since, and
  // Clip's bounds are attributes.
  ModelBuilder m(9);
  m.input("x", {2, 6});
  set_ints(m.node("Unsqueeze", {"x"}, {"u"}), "axes", {0});
  set_ints(m.node("Squeeze", {"u"}, {"s"}), "axes", {0});
  auto& clip = m.node("Clip", {"s"}, {"c"});
  set_float(clip, "min", 2.f);
  set_float(clip, "max", 8.f);
  auto& split = m.node("Split", {"c"}, {"a", "b"});
  set_int(split, "axis", 1);
  set_ints(split, "split", {2, 4});
  auto& reduce = m.node("ReduceSum", {"b"}, {"r"});
  set_ints(reduce, "axes", {1});
  set_int(reduce, "keepdims", 0);
  auto& slice = m.node("Slice", {"a"}, {"sl"});
  set_ints(slice, "starts", {1});
  set_ints(slice, "ends", {2});
  set_ints(slice, "axes", {1});
  m.output("r").output("sl");
  const graph::Graph g = m.import();
  const auto outs = graph::evaluate(g, {{"x", iota({2, 6})}});
  // Row 0 = 0..5 clipped to [2, 8] = 2 2 2 3 4 5; row 1 = 6..11 -> 6 7 8 8 8 8.
  EXPECT_EQ(outs[0].to_vector<float>(), (std::vector<float>{2 + 3 + 4 + 5, 8 + 8 + 8 + 8}));
  EXPECT_EQ(outs[1].to_vector<float>(), (std::vector<float>{2, 7}));
}

TEST(OnnxImport, SoftmaxBeforeOpset13WorksOnTheInputFlattenedAtAxis) {
  ModelBuilder m(11);
  m.input("x", {2, 2, 3});
  set_int(m.node("Softmax", {"x"}, {"y"}), "axis", 1);  // over the last 6 elements of each batch
  m.output("y");
  const graph::Graph g = m.import();
  const auto y = run(g, {{"x", iota({2, 2, 3}, 0.f, 0.5f)}});
  ASSERT_EQ(y.size(), 12u);
  for (int b = 0; b < 2; ++b) {
    double denom = 0;
    for (int i = 0; i < 6; ++i) denom += std::exp(0.5 * (b * 6 + i));
    for (int i = 0; i < 6; ++i)
      EXPECT_NEAR(y[static_cast<size_t>(b * 6 + i)], std::exp(0.5 * (b * 6 + i)) / denom, 1e-6);
  }
}

TEST(OnnxImport, FreeBatchDimensionStaysFreeAndInputsMayBeInitializers) {
  ModelBuilder m(13);
  m.input("x", {-1, 3}).input("w", {3, 2});
  m.initializer(iota({3, 2}), "w");
  m.node("MatMul", {"x", "w"}, {"y"});
  m.output("y");
  const graph::Graph g = m.import();
  ASSERT_EQ(g.inputs().size(), 1u);
  EXPECT_EQ(g.inputs()[0]->info->shape, Shape({Shape::kUnknown, 3}));
  for (int64_t batch : {1, 5}) {
    const auto y = graph::evaluate(g, {{"x", Tensor::full({batch, 3}, 1.0, DType::kFloat32)}});
    EXPECT_EQ(y[0].shape(), Shape({batch, 2}));
    EXPECT_EQ(y[0].to_vector<float>()[0], 0.f + 2.f + 4.f);
  }
}

// An input with an element type but no shape (allowed by ONNX) runs on whatever it is given; a
// Predictor compiles one plan per shape and element type.
TEST(OnnxImport, InputsWithoutAShapeTakeTheGivenShapeAndType) {
  ModelBuilder m(13);
  m.proto().mutable_graph()->add_input()->set_name("x");
  m.proto().mutable_graph()->mutable_input(0)->mutable_type()->mutable_tensor_type()->set_elem_type(
      ::onnx::TensorProto::DOUBLE);
  m.node("Add", {"x", "x"}, {"y"});
  m.output("y");
  const Predictor predictor(m.import());
  const Tensor doubles = Tensor::from_vector<double>({0.5, -1.25, 1e-300}, Shape{3});
  const Tensor y = predictor.predict({doubles})[0];
  EXPECT_EQ(y.dtype(), DType::kFloat64);
  EXPECT_EQ(y.to_vector<double>(), (std::vector<double>{1.0, -2.5, 2e-300}));
  const Tensor floats = Tensor::from_vector<float>({1.5f, 2.f}, Shape{1, 2});
  EXPECT_EQ(predictor.predict({floats})[0].to_vector<float>(), (std::vector<float>{3.f, 4.f}));
  EXPECT_EQ(predictor.predict({doubles})[0].dtype(), DType::kFloat64);
  EXPECT_EQ(predictor.num_cached_plans(), 2u);
}

TEST(OnnxImport, ConstantNodesAndExternalDataAreRead) {
  TempDir dir;
  const Tensor w = iota({4}, 1.f);
  {
    std::ofstream out(dir / "weights.bin", std::ios::binary);
    out << "pad!";  // the tensor starts at offset 4
    out.write(static_cast<const char*>(w.raw_data()), static_cast<std::streamsize>(w.nbytes()));
  }
  ModelBuilder m(17);
  m.input("x", {4});
  auto& init = *m.proto().mutable_graph()->add_initializer();
  init.set_name("w");
  init.set_data_type(1);
  init.add_dims(4);
  init.set_data_location(::onnx::TensorProto::EXTERNAL);
  for (auto [key, value] : {std::pair{"location", "weights.bin"}, {"offset", "4"}, {"length", "16"}}) {
    auto* entry = init.add_external_data();
    entry->set_key(key);
    entry->set_value(value);
  }
  auto& constant = m.node("Constant", {}, {"k"});
  set_float(constant, "value_float", 10.f);
  m.node("Mul", {"x", "w"}, {"xw"});
  m.node("Add", {"xw", "k"}, {"y"});
  m.output("y");
  const auto y = run(m.import(dir.path().string()), {{"x", Tensor::full({4}, 2.0, DType::kFloat32)}});
  EXPECT_EQ(y, (std::vector<float>{12, 14, 16, 18}));

  // The same file may not point outside the model's folder.
  init.mutable_external_data(0)->set_value("../weights.bin");
  expect_error([&] { m.import(dir.path().string()); }, ErrorCode::kIo,
               {"initializer 'w'", "leaves the model"});
}

TEST(OnnxImport, EverythingUnsupportedIsListedAtOnce) {
  ModelBuilder m(17);
  m.input("x", {2});
  m.node("Abs", {"x"}, {"a"}, "abs");
  m.node("NoSuchOp", {"a"}, {"b"}, "mystery");
  m.node("FusedThing", {"b"}, {"c"}, "vendor").set_domain("com.example");
  auto& loop = m.node("Loop", {"", ""}, {"d"}, "loop");
  set_int(loop, "dummy", 0);
  auto& bad_attr = m.node("Relu", {"a"}, {"e"}, "relu");
  set_int(bad_attr, "alpha", 3);
  m.output("c").output("d").output("e");
  expect_error([&] { m.import(); }, ErrorCode::kUnsupported,
               {"4 things cannot be imported",
                "NoSuchOp 'mystery' (domain ai.onnx, opset 17): Kiln has no op NoSuchOp",
                "FusedThing 'vendor' (domain com.example", "Loop 'loop'", "unknown attribute 'dummy'",
                "Relu 'relu'", "alpha"});
}

TEST(OnnxImport, OpsetsOutsideTheRangeAreRefused) {
  ModelBuilder future(kNewestOpset + 1);
  future.input("x", {1});
  future.node("Relu", {"x"}, {"y"});
  future.output("y");
  expect_error([&] { future.import(); }, ErrorCode::kUnsupported,
               {"opset " + std::to_string(kNewestOpset + 1), "1 to"});
}

void set_string(::onnx::NodeProto& node, const std::string& name, const std::string& value) {
  auto* attr = node.add_attribute();
  attr->set_name(name);
  attr->set_type(::onnx::AttributeProto::STRING);
  attr->set_s(value);
}

// Opsets 1 to 6: consumed_inputs is dropped, Add broadcasts B along `axis` (B's dims line up with
// A's from axis 1, not from the end), Reshape's shape and Cast's type name are attributes, Concat
// joins along axis 1 by default. The values are worked out by hand.
TEST(OnnxImport, OpsetsBefore7KeepTheirMeaning) {
  ModelBuilder m(1);
  m.input("x", {2, 3, 2});
  m.initializer(Tensor::from_vector<float>({10, 20, 30}, Shape{3}), "b");
  auto& add = m.node("Add", {"x", "b"}, {"sum"});
  set_int(add, "broadcast", 1);
  set_int(add, "axis", 1);
  set_ints(add, "consumed_inputs", {0, 0});
  auto& relu = m.node("Relu", {"sum"}, {"r"});
  set_ints(relu, "consumed_inputs", {1});
  auto& reshape = m.node("Reshape", {"r"}, {"flat"});
  set_ints(reshape, "shape", {2, 6});
  set_string(m.node("Cast", {"flat"}, {"whole"}), "to", "INT32");
  set_string(m.node("Cast", {"whole"}, {"back"}), "to", "FLOAT");
  m.node("Concat", {"back", "back"}, {"joined"});
  m.output("joined");
  const graph::Graph g = m.import();
  // x = 0..11 as (2, 3, 2); b adds 10, 20, 30 along axis 1.
  const std::vector<float> row0{10, 11, 22, 23, 34, 35}, row1{16, 17, 28, 29, 40, 41};
  std::vector<float> want;
  for (const auto* row : {&row0, &row0, &row1, &row1}) want.insert(want.end(), row->begin(), row->end());
  EXPECT_EQ(run(g, {{"x", iota({2, 3, 2})}}), want);

  ModelBuilder tile(5);
  tile.input("x", {2});
  tile.initializer(Tensor::from_vector<int64_t>({3}, Shape{}), "tiles");
  tile.initializer(Tensor::from_vector<int64_t>({0}, Shape{}), "axis");
  tile.node("Tile", {"x", "tiles", "axis"}, {"y"});
  tile.output("y");
  expect_error([&] { tile.import(); }, ErrorCode::kUnsupported, {"Tile", "opset 5"});
}

TEST(OnnxImport, MalformedGraphsAreRefusedNamingTheProblem) {
  {
    ModelBuilder m;
    m.input("x", {1});
    m.node("Relu", {"missing"}, {"y"}, "r");
    m.output("y");
    expect_error([&] { m.import(); }, ErrorCode::kIo, {"node 'r'", "reads 'missing'"});
  }
  {
    ModelBuilder m;
    m.input("x", {1});
    m.node("Add", {"x", "b"}, {"a"}, "first");
    m.node("Relu", {"a"}, {"b"}, "second");
    m.output("b");
    expect_error([&] { m.import(); }, ErrorCode::kIo, {"is on a cycle"});
  }
  {
    ModelBuilder m;
    m.input("x", {1});
    m.node("Relu", {"x"}, {"y"});
    m.node("Abs", {"x"}, {"y"});
    m.output("y");
    expect_error([&] { m.import(); }, ErrorCode::kIo, {"'y' is produced more than once"});
  }
  {
    ModelBuilder m;
    m.input("x", {1});
    m.output("nothing");
    expect_error([&] { m.import(); }, ErrorCode::kIo, {"graph output 'nothing'"});
  }
  expect_error([&] { import_model_bytes("\x08\x96\x01garbage\xff\xff", "", "junk"); }, ErrorCode::kIo,
               {"onnx model 'junk'", "does not parse"});
}

TEST(OnnxImport, TensorsWhoseBytesDoNotMatchTheirShapeAreRefusedBeforeAllocation) {
  const auto model_with = [](const std::function<void(::onnx::TensorProto&)>& edit) {
    ModelBuilder m;
    m.input("x", {2});
    m.initializer(iota({2}), "w");
    edit(*m.proto().mutable_graph()->mutable_initializer(0));
    m.node("Add", {"x", "w"}, {"y"});
    m.output("y");
    return m;
  };
  expect_error([&] { model_with([](auto& t) { t.set_dims(0, -2); }).import(); }, ErrorCode::kIo,
               {"initializer 'w'", "negative dimension -2"});
  expect_error([&] { model_with([](auto& t) { t.set_dims(0, 3); }).import(); }, ErrorCode::kIo,
               {"raw_data has 8 bytes", "needs 12"});
  // Terabytes declared, eight bytes given: an error, not an allocation.
  expect_error([&] { model_with([](auto& t) { t.set_dims(0, int64_t{1} << 40); }).import(); }, ErrorCode::kIo,
               {"raw_data has 8 bytes"});
  expect_error(
      [&] {
        model_with([](auto& t) {
          t.clear_raw_data();
          t.add_float_data(1.f);
        }).import();
      },
      ErrorCode::kIo, {"float_data has 1 elements", "needs 2"});
  // A string tensor written as raw bytes (ONNX keeps strings in string_data).
  expect_error([&] { model_with([](auto& t) { t.set_data_type(8); }).import(); }, ErrorCode::kIo,
               {"initializer 'w'", "string_data, not in raw or external data"});
  expect_error([&] { model_with([](auto& t) { t.set_data_type(99); }).import(); }, ErrorCode::kUnsupported,
               {"initializer 'w'", "ONNX data type 99"});
}

TEST(OnnxImport, TensorFilesRoundTrip) {
  TempDir dir;
  const Tensor t = Tensor::from_vector<int64_t>({1, -2, 3, 4, 5, 6}, Shape{2, 3});
  save_tensor_pb(dir / "t.pb", t, "t");
  const Tensor back = load_tensor_pb(dir / "t.pb");
  EXPECT_EQ(back.dtype(), DType::kInt64);
  EXPECT_EQ(back.shape(), t.shape());
  EXPECT_EQ(back.to_vector<int64_t>(), t.to_vector<int64_t>());
  expect_error([&] { load_tensor_pb(dir / "none.pb"); }, ErrorCode::kNotFound, {"none.pb"});
}

}  // namespace
}  // namespace kiln::onnx
