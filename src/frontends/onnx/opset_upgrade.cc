// The opset upgrade rules, one function per kind of change, and the table that says from which
// opset on each op has its newest form.
#include "frontends/onnx/opset_upgrade.h"

#include <limits>
#include <map>

#include "kiln/error.hpp"

namespace kiln::onnx {

std::optional<AttrValue> UpgradeContext::take_attr(const std::string& name) {
  auto it = node_.attrs.find(name);
  if (it == node_.attrs.end()) return std::nullopt;
  AttrValue value = it->second;
  node_.attrs.erase(it);
  return value;
}

void UpgradeContext::set_input(int slot, graph::Value* value) {
  if (static_cast<int>(node_.inputs.size()) <= slot)
    node_.inputs.resize(static_cast<size_t>(slot) + 1, nullptr);
  node_.inputs[static_cast<size_t>(slot)] = value;
}

std::optional<int> UpgradeContext::input_rank(int i) const {
  if (i >= static_cast<int>(node_.inputs.size())) return std::nullopt;
  const graph::Value* v = node_.inputs[static_cast<size_t>(i)];
  if (v == nullptr || !v->info) return std::nullopt;
  return v->info->shape.ndim();
}

DType UpgradeContext::input_dtype(int i, DType fallback) const {
  if (i >= static_cast<int>(node_.inputs.size())) return fallback;
  const graph::Value* v = node_.inputs[static_cast<size_t>(i)];
  return v != nullptr && v->info ? v->info->dtype : fallback;
}

graph::Value* UpgradeContext::constant(Tensor value, const std::string& suffix) {
  return graph_.add_initializer(graph_.fresh_name(node_.name + "/" + suffix), std::move(value));
}

graph::Value* UpgradeContext::ints(const std::vector<int64_t>& values, const std::string& suffix) {
  return constant(Tensor::from_vector<int64_t>(values, Shape{static_cast<int64_t>(values.size())}), suffix);
}

graph::Value* UpgradeContext::add(const std::string& op, std::vector<graph::Value*> inputs, AttrMap attrs,
                                  const std::string& suffix) {
  graph::Node* n =
      graph_.add_node(op, std::move(inputs), std::move(attrs), graph_.fresh_name(node_.name + "/" + suffix));
  return n->outputs[0];
}

namespace {

using Rule = void (*)(UpgradeContext&);

// For deprecated ops that are always renamed, whatever the opset.
constexpr int kAlways = std::numeric_limits<int>::max();

std::vector<int64_t> as_ints(const AttrValue& value, const std::string& what) {
  return std::get<std::vector<int64_t>>(value.coerced_to(AttrType::kInts, what).variant());
}

// An ints attribute that became input `slot` (Split's split, Squeeze's axes, Reduce*'s axes).
template <int Slot>
void ints_attr_to_input(UpgradeContext& ctx, const char* attr) {
  if (auto value = ctx.take_attr(attr)) ctx.set_input(Slot, ctx.ints(as_ints(*value, attr), attr));
}

void split_attr(UpgradeContext& ctx) {
  ints_attr_to_input<1>(ctx, "split");
}
void axes_attr(UpgradeContext& ctx) {
  ints_attr_to_input<1>(ctx, "axes");
}

void slice_attrs(UpgradeContext& ctx) {
  const auto starts = ctx.take_attr("starts");
  const auto ends = ctx.take_attr("ends");
  const auto axes = ctx.take_attr("axes");
  KILN_CHECK(starts && ends, ErrorCode::kIo, "Slice '", ctx.node().name, "': opset ", ctx.opset(),
             " needs the starts and ends attributes");
  ctx.set_input(1, ctx.ints(as_ints(*starts, "starts"), "starts"));
  ctx.set_input(2, ctx.ints(as_ints(*ends, "ends"), "ends"));
  if (axes) ctx.set_input(3, ctx.ints(as_ints(*axes, "axes"), "axes"));
}

// Clip's min and max were float attributes (float inputs only); the defaults meant no bound.
void clip_attrs(UpgradeContext& ctx) {
  const DType dtype = ctx.input_dtype(0, DType::kFloat32);
  const auto bound = [&](const char* name, int slot) {
    if (auto value = ctx.take_attr(name)) {
      const double v = std::get<double>(value->coerced_to(AttrType::kFloat, name).variant());
      ctx.set_input(slot, ctx.constant(Tensor::scalar(v, dtype), name));
    }
  };
  bound("min", 1);
  bound("max", 2);
}

void pad_attrs(UpgradeContext& ctx) {
  const auto pads = ctx.take_attr("pads");
  KILN_CHECK(pads.has_value(), ErrorCode::kIo, "Pad '", ctx.node().name, "': opset ", ctx.opset(),
             " needs the pads attribute");
  ctx.set_input(1, ctx.ints(as_ints(*pads, "pads"), "pads"));
  if (auto value = ctx.take_attr("value")) {
    const double v = std::get<double>(value->coerced_to(AttrType::kFloat, "value").variant());
    ctx.set_input(2, ctx.constant(Tensor::scalar(v, ctx.input_dtype(0, DType::kFloat32)), "value"));
  }
}

void dropout_attrs(UpgradeContext& ctx) {
  ctx.take_attr("is_test");
  if (auto ratio = ctx.take_attr("ratio")) {
    const double v = std::get<double>(ratio->coerced_to(AttrType::kFloat, "ratio").variant());
    ctx.set_input(1, ctx.constant(Tensor::scalar(v, DType::kFloat32), "ratio"));
  }
}

void topk_attr(UpgradeContext& ctx) {
  const auto k = ctx.take_attr("k");
  KILN_CHECK(k.has_value(), ErrorCode::kIo, "TopK '", ctx.node().name, "': opset ", ctx.opset(),
             " needs the k attribute");
  ctx.set_input(1, ctx.ints({std::get<int64_t>(k->coerced_to(AttrType::kInt, "k").variant())}, "k"));
}

void upsample_scales_attr(UpgradeContext& ctx) {
  if (auto scales = ctx.take_attr("scales")) {
    const auto values =
        std::get<std::vector<double>>(scales->coerced_to(AttrType::kFloats, "scales").variant());
    std::vector<float> as_float(values.begin(), values.end());
    ctx.set_input(
        1, ctx.constant(Tensor::from_vector<float>(as_float, Shape{static_cast<int64_t>(values.size())}),
                        "scales"));
  }
}

// Resize 10 took (X, scales) and behaved like Upsample: asymmetric coordinates, nearest rounding
// down when enlarging.
void resize_10(UpgradeContext& ctx) {
  graph::Value* scales = ctx.node().inputs.size() > 1 ? ctx.node().inputs[1] : nullptr;
  ctx.node().inputs.resize(1);
  ctx.set_input(2, scales);
  ctx.node().attrs.insert_or_assign("coordinate_transformation_mode", AttrValue("asymmetric"));
  ctx.node().attrs.insert_or_assign("nearest_mode", AttrValue("floor"));
}

// Before opset 13 these ops flattened the input to 2-D at `axis` (default 1) and worked along the
// second dimension. When `axis` is the last dimension that is the newest form; otherwise the
// flattening is spelled out.
void coerced_2d_softmax(UpgradeContext& ctx) {
  const auto axis_attr = ctx.take_attr("axis");
  int64_t axis = axis_attr ? std::get<int64_t>(axis_attr->coerced_to(AttrType::kInt, "axis").variant()) : 1;
  const std::optional<int> rank = ctx.input_rank(0);
  if (rank && axis < 0) axis += *rank;
  if (axis == -1 || (rank && axis == *rank - 1)) {
    ctx.node().attrs.insert_or_assign("axis", AttrValue(int64_t{-1}));
    return;
  }
  KILN_CHECK(!ctx.node().inputs.empty() && ctx.node().inputs[0] != nullptr, ErrorCode::kIo, ctx.node().op,
             " '", ctx.node().name, "': has no input");
  graph::Value* x = ctx.node().inputs[0];
  graph::Value* shape = ctx.add("Shape", {x}, {}, "shape");
  graph::Value* flat = ctx.add("Flatten", {x}, {{"axis", axis}}, "flatten");
  graph::Value* y = ctx.add(ctx.node().op, {flat}, {{"axis", int64_t{1}}}, "2d");
  ctx.replace_with({ctx.add("Reshape", {y, shape}, {}, "reshape")});
}

void scatter_to_scatter_elements(UpgradeContext& ctx) {
  ctx.node().op = "ScatterElements";
}

// GridSample before 20 named its modes after 2-D sampling.
void grid_sample_mode_names(UpgradeContext& ctx) {
  if (auto mode = ctx.take_attr("mode")) {
    std::string name = std::get<std::string>(mode->coerced_to(AttrType::kString, "mode").variant());
    if (name == "bilinear") name = "linear";
    if (name == "bicubic") name = "cubic";
    ctx.node().attrs.insert_or_assign("mode", AttrValue(name));
  }
}

// RoiAlign before 16 had no coordinate_transformation_mode and behaved as output_half_pixel.
void roi_align_coordinates(UpgradeContext& ctx) {
  ctx.node().attrs.insert_or_assign("coordinate_transformation_mode", AttrValue("output_half_pixel"));
}

// BatchNormalization 7-8 had `spatial` (1: per channel, the only form since 9).
void batchnorm_spatial(UpgradeContext& ctx) {
  if (auto spatial = ctx.take_attr("spatial")) {
    KILN_CHECK(std::get<int64_t>(spatial->coerced_to(AttrType::kInt, "spatial").variant()) == 1,
               ErrorCode::kUnsupported, "attribute spatial=0 (per-element statistics) is not supported");
  }
}

// GroupNormalization 18-20 took scale and bias per group; since 21 they are per channel. Each
// group's value is repeated for the group's C / num_groups channels: (G) -> (G, 1) -> (G, C/G) -> (C),
// with C read from the input's shape at run time (constant folding removes it when C is known).
void group_norm_affine_per_channel(UpgradeContext& ctx) {
  ImportedNode& node = ctx.node();
  KILN_CHECK(node.inputs.size() == 3 && node.inputs[0] != nullptr && node.inputs[1] != nullptr &&
                 node.inputs[2] != nullptr,
             ErrorCode::kIo, "GroupNormalization '", node.name, "': expected inputs X, scale and bias, got ",
             node.inputs.size(), " inputs");
  const auto groups_attr = node.attrs.find("num_groups");
  KILN_CHECK(groups_attr != node.attrs.end(), ErrorCode::kIo, "GroupNormalization '", node.name,
             "': missing attribute num_groups");
  const int64_t groups =
      std::get<int64_t>(groups_attr->second.coerced_to(AttrType::kInt, "num_groups").variant());
  graph::Value* channels =
      ctx.add("Shape", {node.inputs[0]}, {{"start", int64_t{1}}, {"end", int64_t{2}}}, "channels");
  graph::Value* group_count = ctx.ints({groups}, "num_groups");
  graph::Value* per_group = ctx.add("Div", {channels, group_count}, {}, "channels_per_group");
  graph::Value* grid = ctx.add("Concat", {group_count, per_group}, {{"axis", int64_t{0}}}, "group_grid");
  for (const auto& [slot, name] : {std::pair{1, "scale"}, std::pair{2, "bias"}}) {
    graph::Value* column =
        ctx.add("Unsqueeze", {node.inputs[static_cast<size_t>(slot)], ctx.ints({1}, "axis")}, {}, name);
    graph::Value* spread = ctx.add("Expand", {column, grid}, {}, std::string(name) + "_per_group");
    ctx.set_input(
        slot, ctx.add("Reshape", {spread, ctx.ints({-1}, "flat")}, {}, std::string(name) + "_per_channel"));
  }
}

// Opsets 1 to 5 marked inputs an op could overwrite (`consumed_inputs`), a hint for in-place
// execution with no effect on the result; opset 6 dropped it.
void drop_consumed_inputs(UpgradeContext& ctx) {
  ctx.take_attr("consumed_inputs");
}

// Binary ops before 7 broadcast only with broadcast=1, and then B's dimensions line up with A's
// from `axis` on (from the end without it, as numpy's rule does); without broadcast the shapes
// are equal. An `axis` short of the end becomes trailing dimensions of one on B.
void legacy_broadcast(UpgradeContext& ctx) {
  const auto broadcast = ctx.take_attr("broadcast");
  const auto axis = ctx.take_attr("axis");
  if (!broadcast || std::get<int64_t>(broadcast->coerced_to(AttrType::kInt, "broadcast").variant()) == 0 ||
      !axis)
    return;
  const std::optional<int> a_rank = ctx.input_rank(0), b_rank = ctx.input_rank(1);
  KILN_CHECK(a_rank && b_rank, ErrorCode::kUnsupported, ctx.node().op, " '", ctx.node().name, "': opset ",
             ctx.opset(), " broadcasts along an axis, which needs both input ranks at import");
  int64_t start = std::get<int64_t>(axis->coerced_to(AttrType::kInt, "axis").variant());
  if (start < 0) start += *a_rank;
  const int64_t trailing = *a_rank - start - *b_rank;
  KILN_CHECK(start >= 0 && trailing >= 0, ErrorCode::kIo, ctx.node().op, " '", ctx.node().name, "': axis ",
             start, " does not fit B (rank ", *b_rank, ") into A (rank ", *a_rank, ")");
  if (trailing == 0) return;
  std::vector<int64_t> new_axes;
  for (int64_t k = 0; k < trailing; ++k) new_axes.push_back(*b_rank + k);
  ctx.set_input(1, ctx.add("Unsqueeze", {ctx.node().inputs[1], ctx.ints(new_axes, "axes")}, {}, "aligned"));
}

// Gemm before 7 said with `broadcast` whether C broadcasts; since 7 it always may.
void gemm_broadcast(UpgradeContext& ctx) {
  ctx.take_attr("broadcast");
}

// BatchNormalization and Dropout before 7 had is_test (training mode is not what a model file runs).
void drop_is_test(UpgradeContext& ctx) {
  ctx.take_attr("is_test");
}

// Reshape before 5 took the shape as an attribute.
void reshape_shape_attr(UpgradeContext& ctx) {
  if (auto shape = ctx.take_attr("shape")) ctx.set_input(1, ctx.ints(as_ints(*shape, "shape"), "shape"));
}

// Concat before 4 had axis 1 by default.
void concat_default_axis(UpgradeContext& ctx) {
  if (!ctx.node().attrs.count("axis")) ctx.node().attrs.insert_or_assign("axis", AttrValue(int64_t{1}));
}

// Cast before 6 named the target type ("FLOAT", "INT64", ...), as TensorProto.DataType spells it.
void cast_type_name(UpgradeContext& ctx) {
  const auto to = ctx.node().attrs.find("to");
  if (to == ctx.node().attrs.end() || to->second.type() != AttrType::kString) return;
  static const std::map<std::string, int64_t> codes = {
      {"FLOAT", 1},   {"UINT8", 2},   {"INT8", 3},   {"UINT16", 4}, {"INT16", 5},
      {"INT32", 6},   {"INT64", 7},   {"STRING", 8}, {"BOOL", 9},   {"FLOAT16", 10},
      {"DOUBLE", 11}, {"UINT32", 12}, {"UINT64", 13}};
  const std::string& name = std::get<std::string>(to->second.variant());
  const auto code = codes.find(name);
  KILN_CHECK(code != codes.end(), ErrorCode::kIo, "Cast '", ctx.node().name, "': unknown type name '", name,
             "'");
  to->second = AttrValue(code->second);
}

// Pad 1 named its pads `paddings`.
void pad_paddings(UpgradeContext& ctx) {
  if (auto paddings = ctx.take_attr("paddings")) ctx.node().attrs.insert_or_assign("pads", *paddings);
}

// Tile before 6 repeated along one axis (inputs tiles and axis), a form Kiln does not rewrite.
void tile_along_axis(UpgradeContext& ctx) {
  raise(ErrorCode::kUnsupported, "Tile '", ctx.node().name, "': opset ", ctx.opset(),
        " (tiles and axis inputs) is not supported; opset 6 and later are");
}

// DFT before 20 took its axis as an attribute, default 1; from 20 it is input 2, default -2.
void dft_axis_attr(UpgradeContext& ctx) {
  const auto axis = ctx.take_attr("axis");
  ctx.set_input(
      2,
      ctx.ints({axis ? std::get<int64_t>(axis->coerced_to(AttrType::kInt, "axis").variant()) : 1}, "axis"));
}

struct UpgradeRule {
  int newest_since;  // the rule applies to models whose opset is older than this
  Rule rule;
};

const std::multimap<std::string, UpgradeRule>& rules() {
  static const std::multimap<std::string, UpgradeRule> table = [] {
    std::multimap<std::string, UpgradeRule> t{
        {"Pad", {2, pad_paddings}},  // before the Pad rule of 11, which reads `pads`
        {"Concat", {4, concat_default_axis}},
        {"Reshape", {5, reshape_shape_attr}},
        {"Cast", {6, cast_type_name}},
        {"Tile", {6, tile_along_axis}},
        {"Gemm", {7, gemm_broadcast}},
        {"BatchNormalization", {7, drop_is_test}},
        {"Dropout", {7, drop_is_test}},
        {"Split", {13, split_attr}},
        {"Squeeze", {13, axes_attr}},
        {"Unsqueeze", {13, axes_attr}},
        {"ReduceSum", {13, axes_attr}},
        {"Slice", {10, slice_attrs}},
        {"Clip", {11, clip_attrs}},
        {"Pad", {11, pad_attrs}},
        {"Dropout", {12, dropout_attrs}},
        {"TopK", {10, topk_attr}},
        {"Upsample", {9, upsample_scales_attr}},
        {"Resize", {11, resize_10}},
        {"Softmax", {13, coerced_2d_softmax}},
        {"LogSoftmax", {13, coerced_2d_softmax}},
        {"Hardmax", {13, coerced_2d_softmax}},
        {"Scatter", {kAlways, scatter_to_scatter_elements}},
        {"BatchNormalization", {9, batchnorm_spatial}},
        {"GridSample", {20, grid_sample_mode_names}},
        {"RoiAlign", {16, roi_align_coordinates}},
        {"GroupNormalization", {21, group_norm_affine_per_channel}},
        {"DFT", {20, dft_axis_attr}},
    };
    for (const char* op : {"Abs",       "Add",         "BatchNormalization",
                           "Ceil",      "Clip",        "Div",
                           "Dropout",   "Elu",         "Exp",
                           "Floor",     "HardSigmoid", "InstanceNormalization",
                           "LeakyRelu", "Log",         "Max",
                           "Mean",      "Min",         "Mul",
                           "Neg",       "PRelu",       "Reciprocal",
                           "Relu",      "Reshape",     "Selu",
                           "Sigmoid",   "Sqrt",        "Sub",
                           "Sum",       "Tanh"}) {
      t.insert({op, {6, drop_consumed_inputs}});
    }
    for (const char* op :
         {"Add", "Sub", "Mul", "Div", "Pow", "And", "Or", "Xor", "Equal", "Greater", "Less"}) {
      t.insert({op, {7, legacy_broadcast}});
    }
    for (const char* reduce : {"ReduceMean", "ReduceMax", "ReduceMin", "ReduceProd", "ReduceL1", "ReduceL2",
                               "ReduceLogSum", "ReduceLogSumExp", "ReduceSumSquare"}) {
      t.insert({reduce, {18, axes_attr}});
    }
    return t;
  }();
  return table;
}

}  // namespace

void upgrade_to_newest(UpgradeContext& ctx) {
  const auto [first, last] = rules().equal_range(ctx.node().op);
  for (auto it = first; it != last; ++it) {
    if (ctx.opset() < it->second.newest_since) it->second.rule(ctx);
  }
}

}  // namespace kiln::onnx
