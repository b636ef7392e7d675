// Converters for MXNet's neural-network ops: Convolution, Deconvolution, FullyConnected,
// activations, Pooling, BatchNorm, Dropout, the softmax family, Embedding and LRN.
#include <numeric>

#include "frontends/mxnet/convert.h"
#include "kiln/error.hpp"

namespace kiln::mxnet {
namespace {

using graph::Value;

void check_layout(ConvertContext& ctx) {
  const std::string layout = ctx.attrs().get_string("layout", "");
  if (!layout.empty() && layout != "NCW" && layout != "NCHW" && layout != "NCDHW")
    ctx.unsupported("layout " + layout + " (only channels-first layouts are imported)");
}

// MXNet gives pad per spatial axis; ONNX wants begin pads then end pads.
std::vector<int64_t> onnx_pads(const std::vector<int64_t>& pad, size_t spatial) {
  std::vector<int64_t> p = pad.empty() ? std::vector<int64_t>(spatial, 0) : pad;
  std::vector<int64_t> out = p;
  out.insert(out.end(), p.begin(), p.end());
  return out;
}

std::vector<int64_t> or_ones(std::vector<int64_t> v, size_t n) {
  return v.empty() ? std::vector<int64_t>(n, 1) : v;
}

void convolution(ConvertContext& ctx, bool transposed) {
  check_layout(ctx);
  const MxnetAttrs& a = ctx.attrs();
  const std::vector<int64_t> kernel = a.require_ints("kernel");
  const size_t n = kernel.size();
  // Deconvolution has no bias unless asked for; Convolution has one unless told otherwise.
  const bool no_bias = a.get_bool("no_bias", transposed);
  AttrMap attrs{{"kernel_shape", kernel},
                {"strides", or_ones(a.get_ints("stride"), n)},
                {"dilations", or_ones(a.get_ints("dilate"), n)},
                {"pads", onnx_pads(a.get_ints("pad"), n)},
                {"group", a.get_int("num_group", 1)}};
  if (transposed) {
    if (a.has("target_shape") && !a.get_ints("target_shape").empty()) ctx.unsupported("target_shape");
    if (a.has("adj")) attrs.emplace("output_padding", a.get_ints("adj"));
  }
  std::vector<Value*> inputs{ctx.input(0), ctx.input(1)};
  if (!no_bias && ctx.num_inputs() > 2) inputs.push_back(ctx.input(2));
  ctx.set_output(ctx.add(transposed ? "ConvTranspose" : "Conv", inputs, attrs));
}

void fully_connected(ConvertContext& ctx) {
  const MxnetAttrs& a = ctx.attrs();
  const bool no_bias = a.get_bool("no_bias", false);
  Value* x = ctx.input(0);
  Value* bias = no_bias || ctx.num_inputs() < 3 ? nullptr : ctx.input(2);
  if (a.get_bool("flatten", true)) {
    if (!x->info || x->info->shape.ndim() != 2) x = ctx.add("Flatten", {x}, {{"axis", 1}}, "flatten");
    std::vector<Value*> inputs{x, ctx.input(1)};
    if (bias) inputs.push_back(bias);
    ctx.set_output(ctx.add("Gemm", inputs, {{"transB", 1}}));
    return;
  }
  // flatten=False applies the layer to the last axis of an input of any rank.
  Value* wt = ctx.add("Transpose", {ctx.input(1)}, {{"perm", {1, 0}}}, "weight_t");
  if (!bias) {
    ctx.set_output(ctx.add("MatMul", {x, wt}));
    return;
  }
  Value* y = ctx.add("MatMul", {x, wt}, {}, "matmul");
  ctx.set_output(ctx.add("Add", {y, bias}));
}

void activation(ConvertContext& ctx) {
  static const std::map<std::string, std::string> ops{{"relu", "Relu"},
                                                      {"sigmoid", "Sigmoid"},
                                                      {"tanh", "Tanh"},
                                                      {"softrelu", "Softplus"},
                                                      {"softsign", "Softsign"}};
  const std::string type = ctx.attrs().get_string("act_type", "");
  const auto it = ops.find(type);
  if (it == ops.end()) ctx.unsupported("act_type " + type);
  ctx.set_output(ctx.add(it->second, {ctx.input(0)}));
}

void leaky_relu(ConvertContext& ctx) {
  const MxnetAttrs& a = ctx.attrs();
  const std::string type = a.get_string("act_type", "leaky");
  const double slope = a.get_float("slope", 0.25);
  if (type == "leaky") return ctx.set_output(ctx.add("LeakyRelu", {ctx.input(0)}, {{"alpha", slope}}));
  if (type == "elu") return ctx.set_output(ctx.add("Elu", {ctx.input(0)}, {{"alpha", slope}}));
  if (type == "selu") return ctx.set_output(ctx.add("Selu", {ctx.input(0)}));
  if (type == "gelu") return ctx.set_output(ctx.add("Gelu", {ctx.input(0)}));
  if (type == "rrelu") {
    // At inference the randomized slope is fixed at the middle of its range.
    const double middle = (a.get_float("lower_bound", 0.125) + a.get_float("upper_bound", 0.334)) / 2;
    return ctx.set_output(ctx.add("LeakyRelu", {ctx.input(0)}, {{"alpha", middle}}));
  }
  if (type == "prelu") {
    // MXNet's gamma holds one slope per channel (axis 1); ONNX broadcasts from the right, so the
    // slope becomes (C, 1, ..., 1), with as many ones as the data has axes after the channels.
    Value* x = ctx.input(0);
    Value* slope_shape = nullptr;
    if (x->info) {
      std::vector<int64_t> shape(static_cast<size_t>(std::max(x->info->shape.ndim() - 1, 1)), 1);
      shape[0] = -1;
      slope_shape = ctx.ints(shape, "slope_shape");
    } else {
      // A symbol saved without shapes: the ones come from the data's rank when it runs (and fold
      // away once its shape is bound): Shape(x)[2:] * 0 + 1, after -1.
      Value* trailing = ctx.add("Shape", {x}, {{"start", int64_t{2}}}, "trailing_dims");
      Value* zeros = ctx.add("Mul", {trailing, ctx.ints({0}, "zero")}, {}, "trailing_zeros");
      Value* ones = ctx.add("Add", {zeros, ctx.ints({1}, "one")}, {}, "trailing_ones");
      slope_shape =
          ctx.add("Concat", {ctx.ints({-1}, "channels"), ones}, {{"axis", int64_t{0}}}, "slope_shape");
    }
    Value* slope_c = ctx.add("Reshape", {ctx.input(1), slope_shape}, {}, "slope");
    return ctx.set_output(ctx.add("PRelu", {x, slope_c}));
  }
  ctx.unsupported("act_type " + type);
}

void pooling(ConvertContext& ctx) {
  check_layout(ctx);
  const MxnetAttrs& a = ctx.attrs();
  const std::string type = a.get_string("pool_type", "max");
  if (type != "max" && type != "avg" && type != "sum") ctx.unsupported("pool_type " + type);
  Value* x = ctx.input(0);
  if (a.get_bool("global_pool", false)) {
    if (type == "max") return ctx.set_output(ctx.add("GlobalMaxPool", {x}));
    if (type == "avg") return ctx.set_output(ctx.add("GlobalAveragePool", {x}));
    const int rank = ctx.input_rank(0, "global sum pooling");
    std::vector<int64_t> axes;
    for (int d = 2; d < rank; ++d) axes.push_back(d);
    return ctx.set_output(ctx.add("ReduceSum", {x, ctx.ints(axes, "axes")}, {{"keepdims", 1}}));
  }
  const std::vector<int64_t> kernel = a.require_ints("kernel");
  const std::string convention = a.get_string("pooling_convention", "valid");
  if (convention != "valid" && convention != "full") ctx.unsupported("pooling_convention " + convention);
  AttrMap attrs{{"kernel_shape", kernel},
                {"strides", or_ones(a.get_ints("stride"), kernel.size())},
                {"pads", onnx_pads(a.get_ints("pad"), kernel.size())},
                {"ceil_mode", convention == "full" ? 1 : 0}};
  if (type == "max") return ctx.set_output(ctx.add("MaxPool", {x}, attrs));
  // MXNet counts padding in the average unless told not to; a sum is that average times the window.
  attrs.emplace("count_include_pad", type == "sum" || a.get_bool("count_include_pad", true) ? 1 : 0);
  if (type == "avg") return ctx.set_output(ctx.add("AveragePool", {x}, attrs));
  const int64_t window = std::accumulate(kernel.begin(), kernel.end(), int64_t{1}, std::multiplies<>());
  Value* avg = ctx.add("AveragePool", {x}, attrs, "avg");
  ctx.set_output(
      ctx.add("Mul", {avg, ctx.scalar(static_cast<double>(window), ctx.input_dtype(0), "window")}));
}

void batch_norm(ConvertContext& ctx) {
  const MxnetAttrs& a = ctx.attrs();
  if (a.get_int("axis", 1) != 1) ctx.unsupported("axis " + a.text("axis") + " (only the channel axis 1)");
  Value* gamma = ctx.input(1);
  // fix_gamma (MXNet's default) means the scale is 1 whatever the stored gamma holds.
  if (a.get_bool("fix_gamma", true)) {
    const Shape shape = ctx.input_shape(1, "fix_gamma (a gamma of ones)");
    gamma = ctx.constant(Tensor::full(shape, 1.0, ctx.input_dtype(1)), "ones");
  }
  // Inference uses the moving statistics whatever use_global_stats says.
  ctx.set_output(ctx.add("BatchNormalization",
                         {ctx.input(0), gamma, ctx.input(2), ctx.input(3), ctx.input(4)},
                         {{"epsilon", a.get_float("eps", 1e-3)}}));
}

// MXNet's LayerNorm normalizes along one axis; ONNX's LayerNormalization along the trailing axes
// from `axis` on. The last axis is the same thing; another axis is moved last and back.
void layer_norm(ConvertContext& ctx) {
  const MxnetAttrs& a = ctx.attrs();
  if (a.get_bool("output_mean_var", false)) ctx.unsupported("output_mean_var=True");
  const int rank = ctx.input_rank(0, "the normalized axis");
  int64_t axis = a.get_int("axis", -1);
  if (axis < 0) axis += rank;
  if (axis < 0 || axis >= rank)
    ctx.unsupported("axis " + a.text("axis") + " of a rank-" + std::to_string(rank) + " input");
  const AttrMap attrs = {{"axis", int64_t{-1}}, {"epsilon", a.get_float("eps", 1e-5)}};
  if (axis == rank - 1)
    return ctx.set_output(ctx.add("LayerNormalization", {ctx.input(0), ctx.input(1), ctx.input(2)}, attrs));
  std::vector<int64_t> perm;
  for (int64_t i = 0; i < rank; ++i)
    if (i != axis) perm.push_back(i);
  perm.push_back(axis);
  std::vector<int64_t> back(static_cast<size_t>(rank));
  for (int64_t i = 0; i < rank; ++i) back[static_cast<size_t>(perm[static_cast<size_t>(i)])] = i;
  Value* moved = ctx.add("Transpose", {ctx.input(0)}, {{"perm", perm}}, "moved");
  Value* y = ctx.add("LayerNormalization", {moved, ctx.input(1), ctx.input(2)}, attrs, "normalized");
  ctx.set_output(ctx.add("Transpose", {y}, {{"perm", back}}));
}

void dropout(ConvertContext& ctx) {
  ctx.set_output(ctx.add("Identity", {ctx.input(0)}));
}

// Applies `op` (Softmax/LogSoftmax) along `axis`, dividing by the temperature first if set.
void softmax_along(ConvertContext& ctx, const std::string& op, int64_t axis) {
  Value* x = ctx.input(0);
  const double temperature = ctx.attrs().get_float("temperature", 1.0);
  if (temperature != 1.0)
    x = ctx.add("Div", {x, ctx.scalar(temperature, ctx.input_dtype(0), "t")}, {}, "scaled");
  ctx.set_output(ctx.add(op, {x}, {{"axis", axis}}));
}

void softmax(ConvertContext& ctx) {
  if (ctx.attrs().get_bool("use_length", false)) ctx.unsupported("use_length");
  softmax_along(ctx, ctx.node().op == "log_softmax" ? "LogSoftmax" : "Softmax",
                ctx.attrs().get_int("axis", -1));
}

// SoftmaxOutput at inference: a softmax over the class axis; the label input is never read.
// Without multi_output MXNet flattens the input to (N, rest) first.
void softmax_output(ConvertContext& ctx) {
  const MxnetAttrs& a = ctx.attrs();
  if (a.get_bool("multi_output", false))
    return ctx.set_output(ctx.add("Softmax", {ctx.input(0)}, {{"axis", 1}}));
  if (a.get_bool("preserve_shape", false))
    return ctx.set_output(ctx.add("Softmax", {ctx.input(0)}, {{"axis", -1}}));
  Value* x = ctx.input(0);
  if (!x->info || x->info->shape.ndim() <= 2) return ctx.set_output(ctx.add("Softmax", {x}, {{"axis", -1}}));
  const Shape shape = x->info->shape;
  Value* flat = ctx.add("Flatten", {x}, {{"axis", 1}}, "flatten");
  Value* y = ctx.add("Softmax", {flat}, {{"axis", 1}}, "softmax");
  ctx.set_output(ctx.add("Reshape", {y, ctx.ints(shape.dims(), "shape")}));
}

// SoftmaxActivation: channel mode is a softmax along axis 1; instance mode one along the last
// axis (MXNet 1.9.1 computes it so for inputs of any rank, not over the flattened instance).
void softmax_activation(ConvertContext& ctx) {
  const bool channel = ctx.attrs().get_string("mode", "instance") == "channel";
  ctx.set_output(ctx.add("Softmax", {ctx.input(0)}, {{"axis", int64_t{channel ? 1 : -1}}}));
}

void embedding(ConvertContext& ctx) {
  // MXNet passes indices as floats; Gather wants integers.
  Value* idx = ctx.add("Cast", {ctx.input(0)}, {{"to", dtype_to_onnx(DType::kInt64)}}, "indices");
  ctx.set_output(ctx.add("Gather", {ctx.input(1), idx}, {{"axis", 0}}));
}

// MXNet's LRN: x / (knorm + alpha / nsize * sum of squares over nsize channels)^beta, ONNX's formula.
void lrn(ConvertContext& ctx) {
  const MxnetAttrs& a = ctx.attrs();
  ctx.set_output(ctx.add("LRN", {ctx.input(0)},
                         {{"size", a.require_int("nsize")},
                          {"alpha", a.get_float("alpha", 1e-4)},
                          {"beta", a.get_float("beta", 0.75)},
                          {"bias", a.get_float("knorm", 2.0)}}));
}

}  // namespace

void add_nn_converters(ConverterTable& t) {
  t["Convolution"] = [](ConvertContext& c) { convolution(c, false); };
  t["Deconvolution"] = [](ConvertContext& c) { convolution(c, true); };
  t["FullyConnected"] = fully_connected;
  t["Activation"] = activation;
  t["LeakyReLU"] = leaky_relu;
  t["Pooling"] = pooling;
  t["BatchNorm"] = batch_norm;
  t["LayerNorm"] = layer_norm;
  t["Dropout"] = dropout;
  t["softmax"] = softmax;
  t["log_softmax"] = softmax;
  t["SoftmaxOutput"] = softmax_output;
  t["Softmax"] = softmax_output;  // MXNet's deprecated alias
  t["SoftmaxActivation"] = softmax_activation;
  t["Embedding"] = embedding;
  t["LRN"] = lrn;
}

}  // namespace kiln::mxnet
