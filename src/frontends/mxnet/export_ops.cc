// The exporter's op table: for each Kiln op, the MXNet 1.9.1 op computing the same thing, and the
// conditions (attributes, shapes, constant inputs) under which it does. Every MXNet op written
// here is one the importer converts back (convert_nn.cc, convert_tensor.cc), so an exported
// model also returns to Kiln. A node that fits no entry is written as `_kiln_<Op>` by export.cc.
#include <algorithm>
#include <cmath>
#include <functional>

#include "frontends/mxnet/export.h"
#include "kiln/error.hpp"

namespace kiln::mxnet {
namespace {

using graph::Node;
using graph::Value;
using Operand = MxnetCall::Operand;
using Result = std::optional<MxnetCall>;

// ---- MXNet's attribute text --------------------------------------------------------------

std::string tuple(const std::vector<int64_t>& values) {
  std::string s = "(";
  for (size_t i = 0; i < values.size(); ++i) s += (i ? ", " : "") + std::to_string(values[i]);
  return s + (values.size() == 1 ? ",)" : ")");
}

std::string boolean(bool value) {
  return value ? "True" : "False";
}

// ---- what is known about a node's inputs ------------------------------------------------

const Value* input(const Node& n, size_t i) {
  return i < n.inputs.size() ? n.inputs[i] : nullptr;
}

const Tensor* constant(const Value* v) {
  return v && v->is_constant() ? &v->constant : nullptr;
}

// The values of a constant integer list (or integer scalar).
std::optional<std::vector<int64_t>> constant_ints(const Value* v) {
  const Tensor* t = constant(v);
  if (!t || !is_integral(t->dtype()) || t->ndim() > 1) return std::nullopt;
  return t->cast(DType::kInt64).to_vector<int64_t>();
}

// The value of a 0-d constant.
std::optional<double> constant_scalar(const Value* v) {
  const Tensor* t = constant(v);
  if (!t || t->ndim() != 0) return std::nullopt;
  return t->item();
}

const Shape* shape_of(const Value* v) {
  return v && v->info ? &v->info->shape : nullptr;
}

int rank_of(const Value* v) {
  return v && v->info ? v->info->shape.ndim() : -1;
}

// MXNet's float kernels cover float32, float64 and float16. An unknown dtype is taken as MXNet's
// default, float32.
bool mxnet_float(const Value* v) {
  if (!v || !v->info) return true;
  const DType d = v->info->dtype;
  return d == DType::kFloat32 || d == DType::kFloat64 || d == DType::kFloat16;
}

bool all_float(const Node& n) {
  return std::all_of(n.inputs.begin(), n.inputs.end(), [](const Value* v) { return !v || mxnet_float(v); });
}

bool present(const Node& n, size_t i) {
  return input(n, i) != nullptr;
}

std::vector<int64_t> ints_or(const Attrs& a, const std::string& name, size_t count, int64_t fill) {
  return a.has(name) ? a.get_ints(name) : std::vector<int64_t>(count, fill);
}

bool all_equal_to(const std::vector<int64_t>& values, int64_t v) {
  return std::all_of(values.begin(), values.end(), [v](int64_t x) { return x == v; });
}

MxnetCall call(std::string op, std::vector<const Value*> inputs,
               std::map<std::string, std::string> attrs = {}) {
  MxnetCall c{std::move(op), std::move(attrs), {}};
  for (const Value* v : inputs) c.inputs.push_back(Operand{v, "", Tensor(), false});
  return c;
}

Operand derived(const std::string& name, Tensor data) {
  return Operand{nullptr, name, std::move(data), false};
}

// MXNet pads each spatial axis by the same amount at both ends; ONNX lists begin then end pads.
std::optional<std::vector<int64_t>> symmetric_pads(const Attrs& a, size_t spatial) {
  const std::string& auto_pad = a.get_string("auto_pad");
  if (auto_pad == "VALID" || (auto_pad == "NOTSET" && !a.has("pads")))
    return std::vector<int64_t>(spatial, 0);
  if (auto_pad != "NOTSET") return std::nullopt;
  const std::vector<int64_t>& pads = a.get_ints("pads");
  if (pads.size() != 2 * spatial) return std::nullopt;
  for (size_t i = 0; i < spatial; ++i)
    if (pads[i] != pads[i + spatial]) return std::nullopt;
  return std::vector<int64_t>(pads.begin(), pads.begin() + static_cast<std::ptrdiff_t>(spatial));
}

// ---- neural-network ops ---------------------------------------------------------------------

Result convolution(const Node& n, const Attrs& a) {
  const bool transposed = n.op == "ConvTranspose";
  const Shape* w = shape_of(input(n, 1));
  if (!w || w->ndim() < 3 || w->ndim() > 5 || !w->is_known() || !all_float(n)) return std::nullopt;
  const auto spatial = static_cast<size_t>(w->ndim() - 2);
  const std::vector<int64_t> kernel =
      a.has("kernel_shape") ? a.get_ints("kernel_shape") : std::vector<int64_t>(w->begin() + 2, w->end());
  const std::optional<std::vector<int64_t>> pads = symmetric_pads(a, spatial);
  const std::vector<int64_t> dilations = ints_or(a, "dilations", spatial, 1);
  if (kernel.size() != spatial || !pads) return std::nullopt;
  const int64_t group = a.get_int("group");
  std::map<std::string, std::string> attrs{{"kernel", tuple(kernel)},
                                           {"stride", tuple(ints_or(a, "strides", spatial, 1))},
                                           {"dilate", tuple(dilations)},
                                           {"pad", tuple(*pads)},
                                           {"num_group", std::to_string(group)},
                                           {"no_bias", boolean(!present(n, 2))}};
  if (transposed) {
    // MXNet's Deconvolution takes no output shape, and its dilated form is not checked here.
    if (a.has("output_shape") || !all_equal_to(dilations, 1)) return std::nullopt;
    attrs["num_filter"] = std::to_string((*w)[1] * group);
    if (a.has("output_padding")) attrs["adj"] = tuple(a.get_ints("output_padding"));
  } else {
    attrs["num_filter"] = std::to_string((*w)[0]);
  }
  std::vector<const Value*> inputs{input(n, 0), input(n, 1)};
  if (present(n, 2)) inputs.push_back(input(n, 2));
  return call(transposed ? "Deconvolution" : "Convolution", inputs, attrs);
}

// Gemm(A, B, C) with transA=0 and alpha=beta=1 is FullyConnected: A times the weight transposed,
// plus a bias of shape (num_hidden,). A weight that Gemm does not transpose must be a constant,
// written transposed; a (1, N) bias constant is written as (N,).
Result fully_connected(const Node& n, const Attrs& a) {
  const Value* weight = input(n, 1);
  const Shape* w = shape_of(weight);
  const bool trans_b = a.get_int("transB") == 1;
  if (a.get_int("transA") != 0 || a.get_float("alpha") != 1.0 || !w || w->ndim() != 2 || !w->is_known() ||
      !all_float(n) || rank_of(input(n, 0)) > 2)
    return std::nullopt;
  if (present(n, 2) && a.get_float("beta") != 1.0) return std::nullopt;
  const int64_t hidden = trans_b ? (*w)[0] : (*w)[1];
  MxnetCall c = call(
      "FullyConnected", {input(n, 0)},
      {{"num_hidden", std::to_string(hidden)}, {"no_bias", boolean(!present(n, 2))}, {"flatten", "True"}});
  if (trans_b) {
    c.inputs.push_back(Operand{weight, "", Tensor(), false});
  } else if (const Tensor* data = constant(weight)) {
    c.inputs.push_back(derived(weight->name + "_t", data->transpose({1, 0}).contiguous()));
  } else {
    return std::nullopt;
  }
  if (!present(n, 2)) return c;
  const Value* bias = input(n, 2);
  const Shape* b = shape_of(bias);
  if (b && *b == Shape{hidden}) {
    c.inputs.push_back(Operand{bias, "", Tensor(), false});
  } else if (const Tensor* data = constant(bias); data && data->shape() == (Shape{1, hidden})) {
    c.inputs.push_back(derived(bias->name + "_flat", data->reshape(Shape{hidden})));
  } else {
    return std::nullopt;
  }
  return c;
}

// MXNet's dot contracts the last axis of A with the first of B, which is MatMul when B is 1-D or
// 2-D (except 1-D by 1-D, which MXNet returns as shape (1,)); batch_dot is MatMul on equal batch
// dimensions.
Result matmul(const Node& n, const Attrs&) {
  const int ra = rank_of(input(n, 0)), rb = rank_of(input(n, 1));
  if (!all_float(n) || ra < 1 || rb < 1) return std::nullopt;
  if (rb == 2 || (rb == 1 && ra >= 2)) return call("dot", {input(n, 0), input(n, 1)});
  const Shape* sa = shape_of(input(n, 0));
  const Shape* sb = shape_of(input(n, 1));
  if (ra != rb || ra < 3 || !sa->is_known() || !sb->is_known() ||
      !std::equal(sa->begin(), sa->end() - 2, sb->begin()))
    return std::nullopt;
  return call("batch_dot", {input(n, 0), input(n, 1)});
}

Result batch_norm(const Node& n, const Attrs& a) {
  // MXNet's moving statistics are auxiliary states: variables, never computed values.
  if (a.get_int("training_mode") != 0 || !all_float(n) || input(n, 3)->producer || input(n, 4)->producer)
    return std::nullopt;
  MxnetCall c = call("BatchNorm", {input(n, 0), input(n, 1), input(n, 2), input(n, 3), input(n, 4)},
                     {{"eps", format_double(a.get_float("epsilon"))},
                      {"momentum", format_double(a.get_float("momentum"))},
                      {"fix_gamma", "False"},
                      {"use_global_stats", "True"}});
  c.inputs[3].aux = c.inputs[4].aux = true;
  return c;
}

// MXNet's LayerNorm normalizes along one axis with a (D,) gamma and beta: ONNX's LayerNormalization
// over the last axis only (its optional mean and inverse-deviation outputs unused).
Result layer_norm(const Node& n, const Attrs& a) {
  const int rank = rank_of(input(n, 0));
  if (!all_float(n) || rank < 1) return std::nullopt;
  const int64_t axis = a.get_int("axis");
  if (axis != -1 && axis != rank - 1) return std::nullopt;
  const int64_t d = (*shape_of(input(n, 0)))[rank - 1];
  const auto is_vector = [d](const Value* v) { return rank_of(v) == 1 && (*shape_of(v))[0] == d; };
  if (!is_vector(input(n, 1)) || (present(n, 2) && !is_vector(input(n, 2)))) return std::nullopt;
  MxnetCall c = call("LayerNorm", {input(n, 0), input(n, 1)},
                     {{"axis", "-1"}, {"eps", format_double(a.get_float("epsilon"))}});
  if (present(n, 2))
    c.inputs.push_back(Operand{input(n, 2), "", Tensor(), false});
  else
    c.inputs.push_back(derived(n.name + "_beta", Tensor::zeros(Shape{d}, input(n, 1)->info->dtype)));
  return c;
}

std::function<Result(const Node&, const Attrs&)> activation(const std::string& act_type) {
  return [act_type](const Node& n, const Attrs&) -> Result {
    if (!all_float(n)) return std::nullopt;
    return call("Activation", {input(n, 0)}, {{"act_type", act_type}});
  };
}

Result leaky_relu(const Node& n, const Attrs& a) {
  if (!all_float(n)) return std::nullopt;
  std::map<std::string, std::string> attrs;
  if (n.op == "LeakyRelu" || n.op == "Elu") {
    attrs = {{"act_type", n.op == "Elu" ? "elu" : "leaky"}, {"slope", format_double(a.get_float("alpha"))}};
  } else if (n.op == "Selu") {
    // MXNet's SELU has fixed constants: only ONNX's defaults match them.
    const ops::OpSchema& schema = n.schema();
    for (const ops::AttrSpec& spec : schema.attrs())
      if (std::get<double>(spec.default_value->variant()) != a.get_float(spec.name)) return std::nullopt;
    attrs = {{"act_type", "selu"}};
  } else {  // Gelu: MXNet's is the exact (erf) form
    if (a.get_string("approximate") != "none") return std::nullopt;
    attrs = {{"act_type", "gelu"}};
  }
  return call("LeakyReLU", {input(n, 0)}, attrs);
}

// MXNet's PReLU slope is one value per channel (axis 1), shape (C,), or one for all, (1,); ONNX
// broadcasts the slope from the right, so the same slope is (C, 1, ..., 1) there. The slope is
// found as a constant of that shape (written as (C,)) or as a Reshape of a (C,) value, which is what
// the importer makes.
Result prelu(const Node& n, const Attrs&) {
  const Shape* x = shape_of(input(n, 0));
  const Value* slope = input(n, 1);
  if (!x || x->ndim() < 2 || (*x)[1] < 0 || !all_float(n)) return std::nullopt;
  const int64_t channels = (*x)[1];
  Shape per_channel(std::vector<int64_t>(static_cast<size_t>(x->ndim() - 1), 1));
  per_channel[0] = channels;
  const Shape* s = shape_of(slope);
  // One slope for all channels is MXNet's (1,) gamma (Gluon's PReLU default, in_channels=1).
  const bool shared = s && s->ndim() <= 1 && s->numel() == 1;
  if (!s || (*s != per_channel && !shared)) return std::nullopt;
  MxnetCall c = call("LeakyReLU", {input(n, 0)}, {{"act_type", "prelu"}});
  if (shared && s->ndim() == 0) {
    const Tensor* data = constant(slope);
    if (!data) return std::nullopt;
    c.inputs.push_back(derived(slope->name + "_flat", data->reshape(Shape{1})));
  } else if (s->ndim() == 1) {
    c.inputs.push_back(Operand{slope, "", Tensor(), false});
  } else if (const Tensor* data = constant(slope)) {
    c.inputs.push_back(derived(slope->name + "_flat", data->reshape(Shape{channels})));
  } else if (slope->producer && slope->producer->op == "Reshape" && shape_of(slope->producer->inputs[0]) &&
             *shape_of(slope->producer->inputs[0]) == Shape{channels}) {
    c.inputs.push_back(Operand{slope->producer->inputs[0], "", Tensor(), false});
  } else {
    return std::nullopt;
  }
  return c;
}

// ONNX's ceil_mode drops a last window that would start in the trailing padding; MXNet's "full"
// convention keeps it. They agree when no such window arises: for a known input size that is
// checked directly; otherwise stride <= kernel - pad rules it out.
bool ceil_matches_full(const Shape* x, const std::vector<int64_t>& kernel,
                       const std::vector<int64_t>& strides, const std::vector<int64_t>& pads) {
  for (size_t i = 0; i < kernel.size(); ++i) {
    const int64_t in =
        x && x->ndim() == static_cast<int>(kernel.size()) + 2 ? (*x)[static_cast<int>(i) + 2] : -1;
    if (in < 0) {
      if (strides[i] > kernel[i] - pads[i]) return false;
      continue;
    }
    const int64_t span = in + 2 * pads[i] - kernel[i];
    const int64_t out = (span + strides[i] - 1) / strides[i] + 1;
    if (span >= 0 && (out - 1) * strides[i] >= in + pads[i]) return false;
  }
  return true;
}

Result pooling(const Node& n, const Attrs& a) {
  if (!all_float(n)) return std::nullopt;
  if (n.op == "GlobalMaxPool" || n.op == "GlobalAveragePool") {
    std::map<std::string, std::string> attrs{{"pool_type", n.op == "GlobalMaxPool" ? "max" : "avg"},
                                             {"global_pool", "True"}};
    if (const int rank = rank_of(input(n, 0)); rank >= 3)
      attrs["kernel"] = tuple(std::vector<int64_t>(static_cast<size_t>(rank - 2), 1));
    return call("Pooling", {input(n, 0)}, attrs);
  }
  const std::vector<int64_t>& kernel = a.get_ints("kernel_shape");
  const size_t spatial = kernel.size();
  const std::optional<std::vector<int64_t>> pads = symmetric_pads(a, spatial);
  const std::vector<int64_t> strides = ints_or(a, "strides", spatial, 1);
  if (spatial < 1 || spatial > 3 || !pads || !all_equal_to(ints_or(a, "dilations", spatial, 1), 1))
    return std::nullopt;
  const bool ceil_mode = a.get_int("ceil_mode") == 1;
  if (ceil_mode && !ceil_matches_full(shape_of(input(n, 0)), kernel, strides, *pads)) return std::nullopt;
  std::map<std::string, std::string> attrs{{"kernel", tuple(kernel)},
                                           {"stride", tuple(strides)},
                                           {"pad", tuple(*pads)},
                                           {"pooling_convention", ceil_mode ? "full" : "valid"}};
  if (n.op == "MaxPool") {
    if (a.get_int("storage_order") != 0) return std::nullopt;
    attrs["pool_type"] = "max";
  } else {
    attrs["pool_type"] = "avg";
    attrs["count_include_pad"] = boolean(a.get_int("count_include_pad") == 1);
  }
  return call("Pooling", {input(n, 0)}, attrs);
}

Result dropout(const Node& n, const Attrs&) {
  // Inference only: a training_mode input must be a constant false.
  if (present(n, 2) && constant_scalar(input(n, 2)).value_or(1.0) != 0.0) return std::nullopt;
  std::map<std::string, std::string> attrs;
  if (present(n, 1)) {
    const std::optional<double> ratio = constant_scalar(input(n, 1));
    if (!ratio) return std::nullopt;
    attrs["p"] = format_double(*ratio);
  }
  return call("Dropout", {input(n, 0)}, attrs);
}

std::function<Result(const Node&, const Attrs&)> softmax(const std::string& op) {
  return [op](const Node& n, const Attrs& a) -> Result {
    if (!all_float(n)) return std::nullopt;
    return call(op, {input(n, 0)}, {{"axis", std::to_string(a.get_int("axis"))}});
  };
}

// ---- tensor ops -----------------------------------------------------------------------------

// Add, Sub, ...: MXNet's `_X_scalar` form when one side is a 0-d constant (MXNet 1.x has no 0-d
// arrays), else the broadcast op (numpy broadcasting, as ONNX).
std::function<Result(const Node&, const Attrs&)> binary(const std::string& name, bool commutes) {
  return [name, commutes](const Node& n, const Attrs&) -> Result {
    if (n.inputs.size() != 2 || !all_float(n)) return std::nullopt;
    const Value* a = input(n, 0);
    const Value* b = input(n, 1);
    if (const std::optional<double> s = constant_scalar(b))
      return call("_" + name + "_scalar", {a}, {{"scalar", format_double(*s)}});
    if (const std::optional<double> s = constant_scalar(a))
      return call(commutes ? "_" + name + "_scalar" : "_r" + name + "_scalar", {b},
                  {{"scalar", format_double(*s)}});
    static const std::map<std::string, std::string> broadcast{
        {"plus", "broadcast_add"},       {"minus", "broadcast_sub"},   {"mul", "broadcast_mul"},
        {"div", "broadcast_div"},        {"power", "broadcast_power"}, {"maximum", "broadcast_maximum"},
        {"minimum", "broadcast_minimum"}};
    return call(broadcast.at(name), {a, b});
  };
}

Result flatten(const Node& n, const Attrs& a) {
  if (a.get_int("axis") != 1) return std::nullopt;
  return call("Flatten", {input(n, 0)});
}

// ONNX's 0 (copy the dimension) and -1 (infer it) mean the same in MXNet's Reshape; MXNet has no
// literal zero-sized dimension there, so allowzero only matters when the shape holds a 0.
Result reshape(const Node& n, const Attrs& a) {
  const std::optional<std::vector<int64_t>> shape = constant_ints(input(n, 1));
  if (!shape || std::any_of(shape->begin(), shape->end(), [](int64_t d) { return d < -1; }))
    return std::nullopt;
  if (a.get_int("allowzero") != 0 && std::count(shape->begin(), shape->end(), 0) > 0) return std::nullopt;
  return call("Reshape", {input(n, 0)}, {{"shape", tuple(*shape)}});
}

Result concat(const Node& n, const Attrs& a) {
  if (std::count(n.inputs.begin(), n.inputs.end(), nullptr) > 0) return std::nullopt;
  return call("Concat", std::vector<const Value*>(n.inputs.begin(), n.inputs.end()),
              {{"dim", std::to_string(a.get_int("axis"))}, {"num_args", std::to_string(n.inputs.size())}});
}

Result transpose(const Node& n, const Attrs& a) {
  std::map<std::string, std::string> attrs;
  if (a.has("perm")) attrs["axes"] = tuple(a.get_ints("perm"));
  return call("transpose", {input(n, 0)}, attrs);
}

// MXNet's clip bounds are single-precision attributes and it applies the lower bound last, so
// only float32/float16 data with min <= max maps; an absent bound is an infinite one.
// MXNet's clip bounds are float32: exact for float32 and float16 data, and for integer data (such
// as the clipped indices of take) when the bounds are whole numbers float32 holds exactly.
Result clip(const Node& n, const Attrs&) {
  const Value* x = input(n, 0);
  const DType dtype = x->info ? x->info->dtype : DType::kFloat32;
  const bool integral = is_integral(dtype) && dtype != DType::kBool;
  if (dtype != DType::kFloat32 && dtype != DType::kFloat16 && !integral) return std::nullopt;
  const std::optional<double> lo = present(n, 1) ? constant_scalar(input(n, 1)) : -INFINITY;
  const std::optional<double> hi = present(n, 2) ? constant_scalar(input(n, 2)) : INFINITY;
  if (!lo || !hi || !(*lo <= *hi)) return std::nullopt;
  const auto exact_whole = [](double v) { return std::fabs(v) <= 16777216.0 && v == std::floor(v); };
  if (integral && !(exact_whole(*lo) && exact_whole(*hi))) return std::nullopt;
  return call("clip", {x}, {{"a_min", format_double(*lo)}, {"a_max", format_double(*hi)}});
}

Result identity(const Node& n, const Attrs&) {
  return call("_copy", {input(n, 0)});
}

Result cast(const Node& n, const Attrs& a) {
  const DType to = dtype_from_onnx(a.get_int("to"));
  if (to == DType::kBFloat16 || (input(n, 0)->info && input(n, 0)->info->dtype == DType::kBFloat16))
    return std::nullopt;
  return call("Cast", {input(n, 0)}, {{"dtype", dtype_name(to)}});
}

// MXNet's take in mode 'wrap' reads index i as i mod n, which is Gather's rule on the indices it
// accepts ([-n, n)).
Result gather(const Node& n, const Attrs& a) {
  if (!mxnet_float(input(n, 0)) || !input(n, 1)->info) return std::nullopt;
  return call("take", {input(n, 0), input(n, 1)},
              {{"axis", std::to_string(a.get_int("axis"))}, {"mode", "wrap"}});
}

// add_n adds arrays of one shape; ONNX's Sum also broadcasts, so every shape must be known and equal.
Result sum(const Node& n, const Attrs&) {
  const Shape* first = shape_of(input(n, 0));
  if (!first || !first->is_known() || !all_float(n)) return std::nullopt;
  for (const Value* v : n.inputs)
    if (!shape_of(v) || *shape_of(v) != *first) return std::nullopt;
  if (n.inputs.size() == 1) return call("_copy", {input(n, 0)});
  return call("add_n", std::vector<const Value*>(n.inputs.begin(), n.inputs.end()),
              {{"num_args", std::to_string(n.inputs.size())}});
}

// MXNet 1.x returns shape (1,) where ONNX returns a 0-d tensor, so ops whose output would be 0-d
// (or whose output rank is unknown) stay Kiln ops.
bool output_has_rank(const Node& n) {
  return rank_of(n.outputs[0]) >= 1;
}

Result squeeze(const Node& n, const Attrs&) {
  if (!output_has_rank(n)) return std::nullopt;
  if (!present(n, 1)) return call("squeeze", {input(n, 0)});
  const std::optional<std::vector<int64_t>> axes = constant_ints(input(n, 1));
  if (!axes) return std::nullopt;
  return call("squeeze", {input(n, 0)}, {{"axis", tuple(*axes)}});
}

Result unsqueeze(const Node& n, const Attrs&) {
  const std::optional<std::vector<int64_t>> axes = constant_ints(input(n, 1));
  if (!axes || axes->size() != 1) return std::nullopt;
  return call("expand_dims", {input(n, 0)}, {{"axis", std::to_string(axes->front())}});
}

std::function<Result(const Node&, const Attrs&)> reduce(const std::string& op) {
  return [op](const Node& n, const Attrs& a) -> Result {
    if (!output_has_rank(n) || !mxnet_float(input(n, 0))) return std::nullopt;
    std::map<std::string, std::string> attrs{{"keepdims", boolean(a.get_int("keepdims") == 1)}};
    if (present(n, 1)) {
      const std::optional<std::vector<int64_t>> axes = constant_ints(input(n, 1));
      if (!axes) return std::nullopt;
      // No axes reduce everything, unless noop_with_empty_axes makes the op the identity.
      if (!axes->empty()) attrs["axis"] = tuple(*axes);
      if (axes->empty() && a.get_int("noop_with_empty_axes") == 1) return std::nullopt;
    } else if (a.get_int("noop_with_empty_axes") == 1) {
      return std::nullopt;
    }
    return call(op, {input(n, 0)}, attrs);
  };
}

// SliceChannel cuts into equal parts only.
Result split(const Node& n, const Attrs& a) {
  const auto parts = static_cast<int64_t>(n.outputs.size());
  const int64_t axis = a.get_int("axis");
  if (present(n, 1)) {
    const std::optional<std::vector<int64_t>> sizes = constant_ints(input(n, 1));
    if (!sizes || static_cast<int64_t>(sizes->size()) != parts || !all_equal_to(*sizes, sizes->front()))
      return std::nullopt;
  } else {
    const Shape* x = shape_of(input(n, 0));
    if (!x || axis < -x->ndim() || axis >= x->ndim()) return std::nullopt;
    const int64_t dim = (*x)[static_cast<int>(axis < 0 ? axis + x->ndim() : axis)];
    if (dim < 0 || dim % parts != 0) return std::nullopt;
  }
  return call("SliceChannel", {input(n, 0)},
              {{"num_outputs", std::to_string(parts)}, {"axis", std::to_string(axis)}});
}

// A Slice of one axis with step 1 is slice_axis. ONNX clamps out-of-range bounds where MXNet
// rejects them, so the bounds are clamped here against the known dimension.
Result slice(const Node& n, const Attrs&) {
  const std::optional<std::vector<int64_t>> starts = constant_ints(input(n, 1));
  const std::optional<std::vector<int64_t>> ends = constant_ints(input(n, 2));
  const std::optional<std::vector<int64_t>> axes =
      present(n, 3) ? constant_ints(input(n, 3)) : std::vector<int64_t>{0};
  const std::optional<std::vector<int64_t>> steps =
      present(n, 4) ? constant_ints(input(n, 4)) : std::vector<int64_t>{1};
  const Shape* x = shape_of(input(n, 0));
  if (!starts || !ends || !axes || !steps || starts->size() != 1 || ends->size() != 1 || axes->size() != 1 ||
      *steps != std::vector<int64_t>{1} || !x)
    return std::nullopt;
  const int64_t axis = axes->front();
  if (axis < -x->ndim() || axis >= x->ndim()) return std::nullopt;
  const int64_t dim = (*x)[static_cast<int>(axis < 0 ? axis + x->ndim() : axis)];
  if (dim < 0) return std::nullopt;
  const auto clamp = [dim](int64_t v) { return std::clamp(v < 0 ? v + dim : v, int64_t{0}, dim); };
  const int64_t begin = clamp(starts->front()), end = clamp(ends->front());
  if (begin >= end) return std::nullopt;
  return call("slice_axis", {input(n, 0)},
              {{"axis", std::to_string(axis)},
               {"begin", std::to_string(begin)},
               {"end", end == dim ? "None" : std::to_string(end)}});
}

using Mapper = std::function<Result(const Node&, const Attrs&)>;

const std::map<std::string, Mapper>& table() {
  static const std::map<std::string, Mapper> t{
      {"Conv", convolution},
      {"ConvTranspose", convolution},
      {"Gemm", fully_connected},
      {"MatMul", matmul},
      {"BatchNormalization", batch_norm},
      {"LayerNormalization", layer_norm},
      {"Relu", activation("relu")},
      {"Sigmoid", activation("sigmoid")},
      {"Tanh", activation("tanh")},
      {"Softplus", activation("softrelu")},
      {"Softsign", activation("softsign")},
      {"LeakyRelu", leaky_relu},
      {"Elu", leaky_relu},
      {"Selu", leaky_relu},
      {"Gelu", leaky_relu},
      {"PRelu", prelu},
      {"MaxPool", pooling},
      {"AveragePool", pooling},
      {"GlobalMaxPool", pooling},
      {"GlobalAveragePool", pooling},
      {"Dropout", dropout},
      {"Softmax", softmax("softmax")},
      {"LogSoftmax", softmax("log_softmax")},
      {"Add", binary("plus", true)},
      {"Sub", binary("minus", false)},
      {"Mul", binary("mul", true)},
      {"Div", binary("div", false)},
      {"Pow", binary("power", false)},
      {"Max", binary("maximum", true)},
      {"Min", binary("minimum", true)},
      {"Flatten", flatten},
      {"Reshape", reshape},
      {"Concat", concat},
      {"Transpose", transpose},
      {"Clip", clip},
      {"Identity", identity},
      {"Cast", cast},
      {"Gather", gather},
      {"Sum", sum},
      {"Squeeze", squeeze},
      {"Unsqueeze", unsqueeze},
      {"ReduceSum", reduce("sum")},
      {"ReduceMean", reduce("mean")},
      {"ReduceMax", reduce("max")},
      {"ReduceMin", reduce("min")},
      {"Split", split},
      {"Slice", slice},
  };
  return t;
}

}  // namespace

std::optional<MxnetCall> mxnet_equivalent(const graph::Node& node, const ValueUsed& used) {
  const auto it = table().find(node.op);
  if (it == table().end()) return std::nullopt;
  // Only Split's MXNet form has more than one visible output.
  if (node.op != "Split")
    for (size_t i = 1; i < node.outputs.size(); ++i)
      if (used(node.outputs[i])) return std::nullopt;
  return it->second(node, ops::with_op_context(node.label(), [&] { return node.schema().bind(node.attrs); }));
}

}  // namespace kiln::mxnet
