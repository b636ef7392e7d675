// Converters for MXNet's tensor ops: elementwise and broadcast arithmetic, scalar arithmetic,
// Flatten, Concat, Reshape, transpose, dot, batch_dot, clip, split, slice_axis, expand_dims,
// squeeze, reductions, identities, add_n and Cast.
#include <algorithm>
#include <cstdint>
#include <limits>
#include <numeric>

#include "frontends/mxnet/convert.h"
#include "frontends/mxnet/import.h"
#include "kiln/error.hpp"

namespace kiln::mxnet {
namespace {

using graph::Value;

Converter binary(const std::string& op) {
  return [op](ConvertContext& ctx) { ctx.set_output(ctx.add(op, {ctx.input(0), ctx.input(1)})); };
}

// `x op scalar`, or `scalar op x` when `reversed` (_rminus_scalar, _rdiv_scalar, ...).
Converter with_scalar(const std::string& op, bool reversed) {
  return [op, reversed](ConvertContext& ctx) {
    Value* x = ctx.input(0);
    Value* s = ctx.scalar(ctx.attrs().get_float("scalar", 0.0), ctx.input_dtype(0), "scalar");
    ctx.set_output(ctx.add(op, reversed ? std::vector<Value*>{s, x} : std::vector<Value*>{x, s}));
  };
}

Converter unary(const std::string& op) {
  return [op](ConvertContext& ctx) { ctx.set_output(ctx.add(op, {ctx.input(0)})); };
}

void flatten(ConvertContext& ctx) {
  ctx.set_output(ctx.add("Flatten", {ctx.input(0)}, {{"axis", 1}}));
}

void concat(ConvertContext& ctx) {
  std::vector<Value*> inputs;
  for (int i = 0; i < ctx.num_inputs(); ++i) inputs.push_back(ctx.input(i));
  ctx.set_output(ctx.add("Concat", inputs, {{"axis", ctx.attrs().get_int("dim", 1)}}));
}

void add_n(ConvertContext& ctx) {
  std::vector<Value*> inputs;
  for (int i = 0; i < ctx.num_inputs(); ++i) inputs.push_back(ctx.input(i));
  ctx.set_output(ctx.add("Sum", inputs));
}

void reshape(ConvertContext& ctx) {
  const MxnetAttrs& a = ctx.attrs();
  if (a.has("target_shape") && !a.get_ints("target_shape").empty())
    ctx.unsupported("target_shape (deprecated)");
  const std::vector<int64_t> spec = a.require_ints("shape");
  // 0 (copy a dimension) and -1 (infer one) mean the same in ONNX's Reshape, which then needs no
  // input shape; the other special values are resolved against the input's shape.
  const Value* x = ctx.input(0);
  const bool onnx_values = std::all_of(spec.begin(), spec.end(), [](int64_t d) { return d >= -1; });
  if (onnx_values && !a.get_bool("reverse", false) && (!x->info || !x->info->shape.is_known()))
    return ctx.set_output(ctx.add("Reshape", {ctx.input(0), ctx.ints(spec, "shape")}));
  const Shape in = ctx.input_shape(0, "Reshape's special values");
  const std::vector<int64_t> shape = resolve_reshape(in, spec, a.get_bool("reverse", false), ctx.label());
  ctx.set_output(ctx.add("Reshape", {ctx.input(0), ctx.ints(shape, "shape")}));
}

// Swaps the last two axes of input i (for the transpose_a / transpose_b flags).
Value* transposed_last_two(ConvertContext& ctx, int i, const std::string& suffix) {
  const int rank = ctx.input_rank(i, "transpose_a/transpose_b");
  std::vector<int64_t> perm(static_cast<size_t>(rank));
  std::iota(perm.begin(), perm.end(), 0);
  std::swap(perm[perm.size() - 1], perm[perm.size() - 2]);
  return ctx.add("Transpose", {ctx.input(i)}, {{"perm", perm}}, suffix);
}

// dot contracts the last axis of A with the first of B: MatMul when B is 2-D, or 1-D while A is
// not (MXNet gives a 1-D by 1-D dot the shape (1,)). Transposes apply to 2-D inputs only.
void dot(ConvertContext& ctx) {
  const MxnetAttrs& a = ctx.attrs();
  const bool ta = a.get_bool("transpose_a", false), tb = a.get_bool("transpose_b", false);
  const int rb = ctx.input_rank(1, "dot (MatMul only when B is 1-D or 2-D)");
  if (rb > 2) ctx.unsupported("B of rank " + std::to_string(rb) + " (dot contracts its first axis)");
  if (rb == 1 && ctx.input_rank(0, "dot of a 1-D B") < 2) ctx.unsupported("a 1-D by 1-D dot");
  if ((ta || tb) && (ctx.input_rank(0, "dot's transpose_a") != 2 || rb != 2))
    ctx.unsupported("transpose_a/transpose_b with inputs that are not 2-D");
  Value* x = ta ? transposed_last_two(ctx, 0, "a_t") : ctx.input(0);
  Value* y = tb ? transposed_last_two(ctx, 1, "b_t") : ctx.input(1);
  ctx.set_output(ctx.add("MatMul", {x, y}));
}

// batch_dot multiplies matching matrices of two arrays with equal batch dimensions: MatMul.
void batch_dot(ConvertContext& ctx) {
  const MxnetAttrs& a = ctx.attrs();
  Value* x = a.get_bool("transpose_a", false) ? transposed_last_two(ctx, 0, "a_t") : ctx.input(0);
  Value* y = a.get_bool("transpose_b", false) ? transposed_last_two(ctx, 1, "b_t") : ctx.input(1);
  ctx.set_output(ctx.add("MatMul", {x, y}));
}

void transpose(ConvertContext& ctx) {
  const std::vector<int64_t> axes = ctx.attrs().get_ints("axes");
  AttrMap attrs;
  if (!axes.empty()) attrs.emplace("perm", axes);
  ctx.set_output(ctx.add("Transpose", {ctx.input(0)}, attrs));
}

void clip(ConvertContext& ctx) {
  const DType dt = ctx.input_dtype(0);
  Value* lo = ctx.scalar(ctx.attrs().get_float("a_min", 0.0), dt, "min");
  Value* hi = ctx.scalar(ctx.attrs().get_float("a_max", 0.0), dt, "max");
  ctx.set_output(ctx.add("Clip", {ctx.input(0), lo, hi}));
}

void split(ConvertContext& ctx) {
  const MxnetAttrs& a = ctx.attrs();
  const int64_t n = a.require_int("num_outputs");
  const int64_t axis = a.get_int("axis", 1);
  const bool squeeze = a.get_bool("squeeze_axis", false);
  graph::Node* node = ctx.add_node("Split", {ctx.input(0)}, {{"axis", axis}, {"num_outputs", n}},
                                   squeeze ? "split" : "", static_cast<int>(n));
  if (!squeeze) return ctx.set_outputs(node->outputs);
  std::vector<Value*> outs;
  Value* axes = ctx.ints({axis}, "axes");
  for (Value* part : node->outputs) outs.push_back(ctx.add("Squeeze", {part, axes}, {}, "squeeze"));
  ctx.set_outputs(outs);
}

void slice_axis(ConvertContext& ctx) {
  const MxnetAttrs& a = ctx.attrs();
  const int64_t axis = a.require_int("axis");
  const int64_t begin = a.get_int("begin", 0);
  const int64_t end = a.get_int("end", std::numeric_limits<int64_t>::max());  // "None": to the end
  ctx.set_output(ctx.add("Slice", {ctx.input(0), ctx.ints({begin}, "starts"), ctx.ints({end}, "ends"),
                                   ctx.ints({axis}, "axes")}));
}

void expand_dims(ConvertContext& ctx) {
  const int64_t axis = ctx.attrs().require_int("axis");
  ctx.set_output(ctx.add("Unsqueeze", {ctx.input(0), ctx.ints({axis}, "axes")}));
}

void squeeze(ConvertContext& ctx) {
  const std::vector<int64_t> axes = ctx.attrs().get_ints("axis");
  std::vector<Value*> inputs{ctx.input(0)};
  if (!axes.empty()) inputs.push_back(ctx.ints(axes, "axes"));
  ctx.set_output(ctx.add("Squeeze", inputs));
}

Converter reduce(const std::string& op) {
  return [op](ConvertContext& ctx) {
    const MxnetAttrs& a = ctx.attrs();
    if (a.get_bool("exclude", false)) ctx.unsupported("exclude=True");
    const std::vector<int64_t> axes = a.get_ints("axis");
    std::vector<Value*> inputs{ctx.input(0)};
    if (!axes.empty()) inputs.push_back(ctx.ints(axes, "axes"));
    ctx.set_output(ctx.add(op, inputs, {{"keepdims", a.get_bool("keepdims", false) ? 1 : 0}}));
  };
}

void cast(ConvertContext& ctx) {
  const std::string name = ctx.attrs().get_string("dtype", "");
  DType dtype = DType::kFloat32;
  try {
    dtype = dtype_from_name(name);
  } catch (const Error&) {
    ctx.unsupported("dtype '" + name + "'");
  }
  ctx.set_output(ctx.add("Cast", {ctx.input(0)}, {{"to", dtype_to_onnx(dtype)}}));
}

// take's indices may be floats (MXNet's default dtype); Gather wants integers. mode 'wrap' takes
// indices modulo the axis length, which is Gather's rule for the valid range [-n, n); 'clip'
// (the default) clamps them into [0, n).
void take(ConvertContext& ctx) {
  const MxnetAttrs& a = ctx.attrs();
  const std::string mode = a.get_string("mode", "clip");
  if (mode != "clip" && mode != "wrap") ctx.unsupported("mode '" + mode + "'");
  const int64_t axis = a.get_int("axis", 0);
  const bool clip = mode == "clip";
  Value* indices = ctx.input(1);
  // Clip's bounds are int64 scalars, so clipped indices are int64 too.
  if (clip ? ctx.input_dtype(1) != DType::kInt64 : !is_integral(ctx.input_dtype(1)))
    indices = ctx.add("Cast", {indices}, {{"to", dtype_to_onnx(DType::kInt64)}}, "indices");
  if (clip) {
    const Shape shape = ctx.input_shape(0, "clipping the indices of mode 'clip'");
    const int64_t n = shape[static_cast<int>(axis < 0 ? axis + shape.ndim() : axis)];
    indices = ctx.add("Clip",
                      {indices, ctx.scalar(0, DType::kInt64, "min"),
                       ctx.scalar(static_cast<double>(n - 1), DType::kInt64, "max")},
                      {}, "clipped");
  }
  ctx.set_output(ctx.add("Gather", {ctx.input(0), indices}, {{"axis", axis}}));
}

}  // namespace

void add_tensor_converters(ConverterTable& t) {
  for (const char* op : {"elemwise_add", "_plus", "_Plus", "_add", "broadcast_add", "broadcast_plus"})
    t[op] = binary("Add");
  for (const char* op : {"elemwise_sub", "_minus", "_Minus", "_sub", "broadcast_sub", "broadcast_minus"})
    t[op] = binary("Sub");
  for (const char* op : {"elemwise_mul", "_mul", "_Mul", "broadcast_mul"}) t[op] = binary("Mul");
  for (const char* op : {"elemwise_div", "_div", "_Div", "broadcast_div"}) t[op] = binary("Div");
  t["broadcast_maximum"] = t["_maximum"] = binary("Max");
  t["broadcast_minimum"] = t["_minimum"] = binary("Min");
  t["broadcast_power"] = t["_power"] = binary("Pow");
  t["_plus_scalar"] = with_scalar("Add", false);
  t["_minus_scalar"] = with_scalar("Sub", false);
  t["_rminus_scalar"] = with_scalar("Sub", true);
  t["_mul_scalar"] = with_scalar("Mul", false);
  t["_div_scalar"] = with_scalar("Div", false);
  t["_rdiv_scalar"] = with_scalar("Div", true);
  t["_power_scalar"] = with_scalar("Pow", false);
  t["_rpower_scalar"] = with_scalar("Pow", true);
  t["_maximum_scalar"] = with_scalar("Max", false);
  t["_minimum_scalar"] = with_scalar("Min", false);
  for (const char* op : {"_copy", "identity", "BlockGrad", "stop_gradient"}) t[op] = unary("Identity");
  t["relu"] = unary("Relu");
  t["sigmoid"] = unary("Sigmoid");
  t["tanh"] = unary("Tanh");
  // MXNet's elementwise math; round takes halves away from zero and fix goes towards zero.
  static const std::pair<const char*, const char*> math[] = {{"abs", "Abs"},
                                                             {"sign", "Sign"},
                                                             {"negative", "Neg"},
                                                             {"reciprocal", "Reciprocal"},
                                                             {"exp", "Exp"},
                                                             {"expm1", "Expm1"},
                                                             {"log", "Log"},
                                                             {"log1p", "Log1p"},
                                                             {"log2", "Log2"},
                                                             {"log10", "Log10"},
                                                             {"sqrt", "Sqrt"},
                                                             {"cbrt", "Cbrt"},
                                                             {"sin", "Sin"},
                                                             {"cos", "Cos"},
                                                             {"tan", "Tan"},
                                                             {"arcsin", "Asin"},
                                                             {"arccos", "Acos"},
                                                             {"arctan", "Atan"},
                                                             {"sinh", "Sinh"},
                                                             {"cosh", "Cosh"},
                                                             {"arcsinh", "Asinh"},
                                                             {"arccosh", "Acosh"},
                                                             {"arctanh", "Atanh"},
                                                             {"erf", "Erf"},
                                                             {"floor", "Floor"},
                                                             {"ceil", "Ceil"},
                                                             {"round", "RoundHalfAway"},
                                                             {"fix", "Trunc"},
                                                             {"trunc", "Trunc"}};
  for (const auto& [mxnet_op, kiln_op] : math) t[mxnet_op] = unary(kiln_op);
  t["Flatten"] = t["flatten"] = flatten;
  t["Concat"] = t["concat"] = concat;
  t["add_n"] = t["ElementWiseSum"] = add_n;
  t["Reshape"] = t["reshape"] = reshape;
  t["transpose"] = transpose;
  t["dot"] = dot;
  t["batch_dot"] = batch_dot;
  t["clip"] = clip;
  t["SliceChannel"] = t["split"] = split;
  t["slice_axis"] = slice_axis;
  t["expand_dims"] = expand_dims;
  t["squeeze"] = squeeze;
  t["sum"] = t["sum_axis"] = reduce("ReduceSum");
  t["mean"] = reduce("ReduceMean");
  t["max"] = t["max_axis"] = reduce("ReduceMax");
  t["min"] = t["min_axis"] = reduce("ReduceMin");
  t["Cast"] = t["cast"] = cast;
  t["take"] = take;
}

}  // namespace kiln::mxnet
