// The opset downgrade rules, one function per kind of change, the table that says from which
// opset on each op has its newest form, and the opsets that introduced Kiln's newer ops. Version
// changes that only widened the accepted types (most of them since 13) need no rule.
#include "frontends/onnx/opset_downgrade.h"

#include <limits>
#include <map>

#include "kiln/error.hpp"

namespace kiln::onnx {

std::optional<AttrValue> DowngradeContext::take_attr(const std::string& name) {
  auto it = node_.attrs.find(name);
  if (it == node_.attrs.end()) return std::nullopt;
  AttrValue value = it->second;
  node_.attrs.erase(it);
  return value;
}

const AttrValue* DowngradeContext::find_attr(const std::string& name) const {
  auto it = node_.attrs.find(name);
  return it == node_.attrs.end() ? nullptr : &it->second;
}

graph::Value* DowngradeContext::input(int i) const {
  return i < static_cast<int>(node_.inputs.size()) ? node_.inputs[static_cast<size_t>(i)] : nullptr;
}

void DowngradeContext::drop_input(int slot) {
  if (slot < static_cast<int>(node_.inputs.size())) node_.inputs[static_cast<size_t>(slot)] = nullptr;
  while (!node_.inputs.empty() && node_.inputs.back() == nullptr) node_.inputs.pop_back();
}

void DowngradeContext::set_input(int slot, graph::Value* value) {
  if (static_cast<int>(node_.inputs.size()) <= slot)
    node_.inputs.resize(static_cast<size_t>(slot) + 1, nullptr);
  node_.inputs[static_cast<size_t>(slot)] = value;
}

std::optional<std::vector<int64_t>> DowngradeContext::constant_ints(int i) const {
  const graph::Value* v = input(i);
  if (v == nullptr || !v->is_constant()) return std::nullopt;
  return v->constant.cast(DType::kInt64).to_vector<int64_t>();
}

std::optional<Shape> DowngradeContext::input_shape(int i) const {
  const graph::Value* v = input(i);
  if (v == nullptr || !v->info) return std::nullopt;
  return v->info->shape;
}

graph::Value* DowngradeContext::constant(Tensor value, const std::string& suffix) {
  return graph_.add_initializer(graph_.fresh_name(node_.name + "/" + suffix), std::move(value));
}

graph::Value* DowngradeContext::ints(const std::vector<int64_t>& values, const std::string& suffix) {
  return constant(Tensor::from_vector<int64_t>(values, Shape{static_cast<int64_t>(values.size())}), suffix);
}

void DowngradeContext::refuse(const std::string& why) const {
  raise(ErrorCode::kUnsupported, label(), ": ", why, " (exporting to opset ", opset_, ")");
}

namespace {

using Rule = void (*)(DowngradeContext&);

// For deprecated ops that are always rewritten, whatever the opset.
constexpr int kAlways = std::numeric_limits<int>::max();

int64_t int_of(const AttrValue& value, const std::string& what) {
  return std::get<int64_t>(value.coerced_to(AttrType::kInt, what).variant());
}

std::string string_of(const AttrValue& value, const std::string& what) {
  return std::get<std::string>(value.coerced_to(AttrType::kString, what).variant());
}

std::vector<int64_t> ints_of(const AttrValue& value, const std::string& what) {
  return std::get<std::vector<int64_t>>(value.coerced_to(AttrType::kInts, what).variant());
}

// Drops an attribute that opsets before `since` lack when it holds `behaves_as`, what they did.
void drop_int_attr_if(DowngradeContext& ctx, const char* name, int64_t behaves_as, int since) {
  if (auto value = ctx.take_attr(name); value && int_of(*value, name) != behaves_as)
    ctx.refuse(std::string("attribute ") + name + "=" + std::to_string(int_of(*value, name)) +
               " needs opset " + std::to_string(since));
}

void drop_string_attr_if(DowngradeContext& ctx, const char* name, const std::string& behaves_as, int since) {
  if (auto value = ctx.take_attr(name); value && string_of(*value, name) != behaves_as)
    ctx.refuse(std::string("attribute ") + name + "='" + string_of(*value, name) + "' needs opset " +
               std::to_string(since));
}

void drop_unit_dilations(DowngradeContext& ctx, int since) {
  if (auto value = ctx.take_attr("dilations")) {
    for (int64_t d : ints_of(*value, "dilations"))
      if (d != 1) ctx.refuse("dilations other than 1 need opset " + std::to_string(since));
  }
}

// Reduce* with noop_with_empty_axes and no axes reduces nothing but still applies its elementwise
// part (ReduceSumSquare squares), as one op of older opsets where there is one.
void reduce_nothing(DowngradeContext& ctx) {
  static const std::map<std::string, std::string> kElementwise{
      {"ReduceMean", "Identity"}, {"ReduceMax", "Identity"}, {"ReduceMin", "Identity"},
      {"ReduceProd", "Identity"}, {"ReduceL1", "Abs"},       {"ReduceLogSum", "Log"},
      {"ReduceSumSquare", "Mul"}};
  const auto it = kElementwise.find(ctx.node().op);
  if (it == kElementwise.end()) ctx.refuse("noop_with_empty_axes=1 without axes needs opset 18");
  ExportedNode& node = ctx.node();
  node.op = it->second;
  node.attrs.clear();
  node.inputs.resize(1);
  if (node.op == "Mul") node.inputs.push_back(node.inputs[0]);
}

// Reduce* (except ReduceSum) took `axes` as an attribute before 18 and had no
// noop_with_empty_axes: no axes meant all of them.
void reduce_axes_to_attr(DowngradeContext& ctx) {
  const auto noop = ctx.take_attr("noop_with_empty_axes");
  const bool empty_is_noop = noop && int_of(*noop, "noop_with_empty_axes") != 0;
  std::vector<int64_t> axes;
  if (ctx.input(1) != nullptr) {
    const auto values = ctx.constant_ints(1);
    if (!values)
      ctx.refuse("its axes (input 1) are computed at run time, and this opset takes them as an attribute");
    axes = *values;
    ctx.drop_input(1);
  }
  if (axes.empty()) {
    if (empty_is_noop) reduce_nothing(ctx);
    return;
  }
  ctx.node().attrs.insert_or_assign("axes", AttrValue(axes));
}

// Split had no num_outputs before 18: without `split` it cut into as many equal parts as it has
// outputs. Since 18 an axis that does not divide evenly leaves the last part smaller; when the
// length is known that becomes an explicit `split`. When it is not, the older form computes the
// same parts whenever they are equal, and fails at run time otherwise.
void split_num_outputs(DowngradeContext& ctx) {
  if (!ctx.take_attr("num_outputs") || ctx.input(1) != nullptr) return;
  const auto shape = ctx.input_shape(0);
  if (!shape) return;
  const AttrValue* axis_attr = ctx.find_attr("axis");
  const int axis = normalize_axis(axis_attr ? int_of(*axis_attr, "axis") : 0, shape->ndim(), ctx.label());
  const int64_t length = (*shape)[axis];
  const auto parts = static_cast<int64_t>(ctx.node().outputs.size());
  if (length < 0 || parts == 0 || length % parts == 0) return;
  const int64_t chunk = (length + parts - 1) / parts;
  std::vector<int64_t> sizes(static_cast<size_t>(parts), chunk);
  sizes.back() = length - chunk * (parts - 1);
  ctx.set_input(1, ctx.ints(sizes, "split"));
}

// Pad took no `axes` before 18: constant axes and pads become pads over every axis.
void pad_axes(DowngradeContext& ctx) {
  if (ctx.input(3) == nullptr) return;
  const auto axes = ctx.constant_ints(3);
  const auto pads = ctx.constant_ints(1);
  const auto shape = ctx.input_shape(0);
  if (!axes || !pads || !shape)
    ctx.refuse("input 3 (axes) needs opset 18 unless axes, pads and the input's rank are known");
  const int rank = shape->ndim();
  const size_t n = axes->size();
  KILN_CHECK(pads->size() == 2 * n, ErrorCode::kInvalidArgument, ctx.label(), ": ", pads->size(),
             " pads for ", n, " axes; expected ", 2 * n);
  std::vector<int64_t> full(2 * static_cast<size_t>(rank), 0);
  for (size_t k = 0; k < n; ++k) {
    const auto a = static_cast<size_t>(normalize_axis((*axes)[k], rank, ctx.label()));
    full[a] = (*pads)[k];
    full[a + static_cast<size_t>(rank)] = (*pads)[k + n];
  }
  ctx.set_input(1, ctx.ints(full, "pads"));
  ctx.drop_input(3);
}

void pad_wrap(DowngradeContext& ctx) {
  if (const AttrValue* mode = ctx.find_attr("mode"); mode && string_of(*mode, "mode") == "wrap")
    ctx.refuse("mode 'wrap' needs opset 19");
}

// Resize gained antialias, axes and keep_aspect_ratio_policy in 18.
void resize_18(DowngradeContext& ctx) {
  drop_int_attr_if(ctx, "antialias", 0, 18);
  drop_string_attr_if(ctx, "keep_aspect_ratio_policy", "stretch", 18);
  if (ctx.find_attr("axes") != nullptr) ctx.refuse("attribute axes needs opset 18");
}

void resize_half_pixel_symmetric(DowngradeContext& ctx) {
  const AttrValue* mode = ctx.find_attr("coordinate_transformation_mode");
  if (mode && string_of(*mode, "coordinate_transformation_mode") == "half_pixel_symmetric")
    ctx.refuse("coordinate_transformation_mode 'half_pixel_symmetric' needs opset 19");
}

// ScatterElements/ScatterND: reduction arrived in 16 (none, add, mul), max and min in 18.
void scatter_min_max(DowngradeContext& ctx) {
  if (const AttrValue* r = ctx.find_attr("reduction")) {
    const std::string reduction = string_of(*r, "reduction");
    if (reduction == "max" || reduction == "min") ctx.refuse("reduction '" + reduction + "' needs opset 18");
  }
}

void scatter_reduction(DowngradeContext& ctx) {
  drop_string_attr_if(ctx, "reduction", "none", 16);
}

// Shape gained start and end in 15.
void shape_start_end(DowngradeContext& ctx) {
  drop_int_attr_if(ctx, "start", 0, 15);
  if (auto end = ctx.take_attr("end")) {
    const auto shape = ctx.input_shape(0);
    if (!shape || int_of(*end, "end") < shape->ndim()) ctx.refuse("attribute end needs opset 15");
  }
}

// Reshape gained allowzero in 14; a shape without zeros means the same either way.
void reshape_allowzero(DowngradeContext& ctx) {
  const auto allowzero = ctx.take_attr("allowzero");
  if (!allowzero || int_of(*allowzero, "allowzero") == 0) return;
  const auto shape = ctx.constant_ints(1);
  if (!shape) ctx.refuse("allowzero=1 with a shape computed at run time needs opset 14");
  for (int64_t d : *shape)
    if (d == 0) ctx.refuse("allowzero=1 with a zero in the shape needs opset 14");
}

void cast_saturate(DowngradeContext& ctx) {
  // Saturation only concerns conversions to float8 types, which Kiln does not have.
  ctx.take_attr("saturate");
}

void batchnorm_training_mode(DowngradeContext& ctx) {
  drop_int_attr_if(ctx, "training_mode", 0, 14);
}

void lppool_18(DowngradeContext& ctx) {
  drop_int_attr_if(ctx, "ceil_mode", 0, 18);
  drop_unit_dilations(ctx, 18);
}

void average_pool_dilations(DowngradeContext& ctx) {
  drop_unit_dilations(ctx, 19);
}

// SpaceToDepth gained `mode` in 28; before, it was the inverse of DepthToSpace's DCR mode.
void space_to_depth_mode(DowngradeContext& ctx) {
  drop_string_attr_if(ctx, "mode", "DCR", 28);
}

// Upsample is deprecated since opset 10: Resize with asymmetric coordinates and nearest rounding
// down is the same computation (what opset_upgrade.cc's resize_10 undoes).
void upsample_to_resize(DowngradeContext& ctx) {
  graph::Value* scales = ctx.input(1);
  ctx.node().op = "Resize";
  ctx.node().inputs.resize(1);
  ctx.set_input(2, scales);
  ctx.node().attrs.insert_or_assign("coordinate_transformation_mode", AttrValue("asymmetric"));
  ctx.node().attrs.insert_or_assign("nearest_mode", AttrValue("floor"));
}

// GroupNormalization before 21 scaled and shifted per group, not per channel. A scale and bias
// that are constants holding one value per group (what opset_upgrade.cc makes of an older model)
// go back to one value per group; per-channel values need opset 21.
void group_norm_affine_per_group(DowngradeContext& ctx) {
  const AttrValue* groups_attr = ctx.find_attr("num_groups");
  if (groups_attr == nullptr) ctx.refuse("attribute num_groups is missing");
  const int64_t groups = int_of(*groups_attr, "num_groups");
  for (const auto& [slot, name] : {std::pair{1, "scale"}, std::pair{2, "bias"}}) {
    const graph::Value* v = ctx.input(slot);
    if (v == nullptr || !v->is_constant())
      ctx.refuse(std::string(name) +
                 " is computed at run time; opset 21 takes it per channel, older opsets per group");
    const std::vector<float> per_channel = v->constant.cast(DType::kFloat32).to_vector<float>();
    const int64_t channels = static_cast<int64_t>(per_channel.size());
    if (groups <= 0 || channels % groups != 0)
      ctx.refuse(std::string(name) + " has " + std::to_string(channels) + " values for " +
                 std::to_string(groups) + " groups");
    const int64_t per_group = channels / groups;
    std::vector<float> values(static_cast<size_t>(groups));
    for (int64_t g = 0; g < groups; ++g) {
      values[static_cast<size_t>(g)] = per_channel[static_cast<size_t>(g * per_group)];
      for (int64_t c = g * per_group; c < (g + 1) * per_group; ++c)
        if (per_channel[static_cast<size_t>(c)] != values[static_cast<size_t>(g)])
          ctx.refuse(std::string(name) + " differs within group " + std::to_string(g) + " (channels " +
                     std::to_string(g * per_group) + "-" + std::to_string((g + 1) * per_group - 1) +
                     "); per-channel values need opset 21");
    }
    ctx.set_input(slot,
                  ctx.constant(Tensor::from_vector<float>(values, Shape{groups}).cast(v->constant.dtype()),
                               std::string(name) + "_per_group"));
  }
}

struct DowngradeRule {
  int newest_since;  // the rule applies when exporting to an opset older than this
  Rule rule;
};

const std::multimap<std::string, DowngradeRule>& rules() {
  static const std::multimap<std::string, DowngradeRule> table = [] {
    std::multimap<std::string, DowngradeRule> t{
        {"Split", {18, split_num_outputs}},
        {"Pad", {19, pad_wrap}},
        {"Pad", {18, pad_axes}},
        {"Resize", {19, resize_half_pixel_symmetric}},
        {"Resize", {18, resize_18}},
        {"ScatterElements", {18, scatter_min_max}},
        {"ScatterElements", {16, scatter_reduction}},
        {"ScatterND", {18, scatter_min_max}},
        {"ScatterND", {16, scatter_reduction}},
        {"Shape", {15, shape_start_end}},
        {"Reshape", {14, reshape_allowzero}},
        {"Cast", {19, cast_saturate}},
        {"CastLike", {19, cast_saturate}},
        {"BatchNormalization", {14, batchnorm_training_mode}},
        {"AveragePool", {19, average_pool_dilations}},
        {"LpPool", {18, lppool_18}},
        {"SpaceToDepth", {28, space_to_depth_mode}},
        {"Upsample", {kAlways, upsample_to_resize}},
        {"GroupNormalization", {21, group_norm_affine_per_group}},
    };
    for (const char* reduce : {"ReduceMean", "ReduceMax", "ReduceMin", "ReduceProd", "ReduceL1", "ReduceL2",
                               "ReduceLogSum", "ReduceLogSumExp", "ReduceSumSquare"}) {
      t.insert({reduce, {18, reduce_axes_to_attr}});
    }
    return t;
  }();
  return table;
}

// Kiln's ops that ONNX added after opset 13, the oldest the exporter writes.
const std::map<std::string, int>& introduced_after_oldest() {
  static const std::map<std::string, int> table{
      {"HardSwish", 14},       {"Trilu", 14},         {"CastLike", 15},           {"GridSample", 16},
      {"BlackmanWindow", 17},  {"HammingWindow", 17}, {"HannWindow", 17},         {"LayerNormalization", 17},
      {"BitwiseAnd", 18},      {"BitwiseNot", 18},    {"BitwiseOr", 18},          {"BitwiseXor", 18},
      {"CenterCropPad", 18},   {"Col2Im", 18},        {"GroupNormalization", 18}, {"Mish", 18},
      {"AffineGrid", 20},      {"Gelu", 20},          {"Attention", 23},          {"RMSNormalization", 23},
      {"RotaryEmbedding", 23}, {"Optional", 15},      {"OptionalHasElement", 15}, {"OptionalGetElement", 15},
      {"SequenceMap", 17},     {"StringConcat", 20},  {"StringSplit", 20},        {"RegexFullMatch", 20},
  };
  return table;
}

}  // namespace

void downgrade_to_opset(DowngradeContext& ctx) {
  const auto introduced = introduced_after_oldest().find(ctx.node().op);
  if (introduced != introduced_after_oldest().end() && ctx.opset() < introduced->second)
    ctx.refuse(ctx.node().op + " needs opset " + std::to_string(introduced->second) + " or newer");
  const auto [first, last] = rules().equal_range(ctx.node().op);
  for (auto it = first; it != last; ++it) {
    if (ctx.opset() < it->second.newest_since) it->second.rule(ctx);
  }
}

}  // namespace kiln::onnx
