// Fused ops: a Conv, Gemm or MatMul with what follows it in the graph folded in, so that a
// backend can compute it in one pass (oneDNN post-ops) instead of writing and re-reading the
// intermediate tensor. The graph pass fuse_post_ops makes them; they are Kiln's own ops (written
// to MXNet files as _kiln_<Op>, expanded back to standard ops in ONNX files).
//
//   FusedConv(X, W, B?, Z?)     Y = act(Conv(X, W, B) + Z)      Z: a residual of Y's shape
//   FusedGemm(A, B, C?)         Y = act(Gemm(A, B, C))
//   FusedMatMul(A, B, bias?)    Y = act(alpha * MatMul(A, B) + bias)
//                               bias: broadcast to Y (numpy rules): one value per column, an
//                               attention mask (N, 1, 1, S), a residual of Y's shape
//
// Each takes its base op's attributes plus `activation` and `activation_params` (see
// fused_activation.h); FusedMatMul also `alpha` (default 1). The reference kernel runs the base
// op's reference kernel, then the rest.
#include "core/thread_pool.h"
#include "ops/fused_activation.h"
#include "ops/infer_util.h"

namespace kiln::ops {
namespace {

constexpr int64_t kGrain = 1 << 15;

// What the fused op adds to the base op's result before the activation.
enum class Extra { kNone, kResidual, kBroadcast };

struct FusedSpec {
  const char* base;
  int base_inputs;  // inputs of the base op; the one after it (if any) is the extra
  Extra extra;
  bool scaled = false;  // an `alpha` of its own scales the base op's result
};

// The base op's attributes: the fused op's, without the activation (and the fused op's alpha).
Attrs base_attrs(const FusedSpec& spec, const OpSchema& base, const Attrs& attrs) {
  AttrMap given;
  for (const auto& [name, value] : attrs.values())
    if (name != "activation" && name != "activation_params" && !(spec.scaled && name == "alpha"))
      given.emplace(name, value);
  return base.bind(given);
}

// Where element i of an output of shape `out` reads a tensor of shape `in` broadcast to it: the
// strides of `in` aligned to the output's trailing axes, 0 along broadcast axes.
std::vector<int64_t> broadcast_strides(const Shape& in, const Shape& out) {
  std::vector<int64_t> strides(static_cast<size_t>(out.ndim()), 0);
  const std::vector<int64_t> own = contiguous_strides(in);
  const int lead = out.ndim() - in.ndim();
  for (int a = 0; a < in.ndim(); ++a)
    if (in[a] != 1) strides[static_cast<size_t>(lead + a)] = own[static_cast<size_t>(a)];
  return strides;
}

FusedActivation activation_of(const Attrs& attrs) {
  return parse_fused_activation(attrs.get_string("activation"), attrs.get_floats("activation_params"));
}

std::vector<TensorInfo> infer_fused(const FusedSpec& spec, InferContext& ctx) {
  const OpSchema& base = OpRegistry::global().get(spec.base);
  activation_of(ctx.attrs());
  std::vector<std::optional<TensorInfo>> infos;
  std::vector<const Tensor*> values;
  for (int i = 0; i < spec.base_inputs; ++i) {
    infos.push_back(ctx.has_input(i) ? std::optional<TensorInfo>(ctx.input(i)) : std::nullopt);
    values.push_back(nullptr);
  }
  std::vector<TensorInfo> out = base.infer_types(base_attrs(spec, base, ctx.attrs()), infos, values);
  require_dtype(ctx, 0, kFloatDTypes);
  const int extra = spec.base_inputs;
  if (!ctx.has_input(extra)) return out;
  require_same_dtype(ctx, 0, extra);
  const Shape& y = out[0].shape;
  const Shape& e = ctx.shape(extra);
  if (spec.extra == Extra::kResidual) {
    KILN_CHECK(e == y || !e.is_known() || !y.is_known(), ErrorCode::kShapeMismatch, ctx.input_label(extra),
               ": expected the output's shape ", y, ", got ", e);
  } else if (e.is_known() && y.is_known()) {
    // Only the extra broadcasts: the output keeps the base op's shape.
    KILN_CHECK(broadcast_shapes(y, e, ctx.input_label(extra)) == y, ErrorCode::kShapeMismatch,
               ctx.input_label(extra), ": expected a shape that broadcasts to the output's ", y, ", got ", e);
  }
  return out;
}

void fused_kernel(const FusedSpec& spec, KernelContext& ctx) {
  const OpSchema& base = OpRegistry::global().get(spec.base);
  const Attrs attrs = base_attrs(spec, base, ctx.attrs);
  std::vector<Tensor> inputs(ctx.inputs.begin(),
                             ctx.inputs.begin() + std::min<int64_t>(spec.base_inputs, ctx.num_inputs()));
  KernelContext base_ctx{attrs, inputs, ctx.outputs};
  base.reference_kernel()(base_ctx);

  const FusedActivation act = activation_of(ctx.attrs);
  const Tensor* extra = ctx.has_input(spec.base_inputs) ? &ctx.input(spec.base_inputs) : nullptr;
  Tensor& y = ctx.output(0);
  const int64_t n = y.numel();
  const double alpha = spec.scaled ? ctx.attrs.get_float("alpha") : 1.0;
  const Tensor added = extra ? extra->contiguous() : Tensor();
  const std::vector<int64_t> out_strides = contiguous_strides(y.shape());
  const std::vector<int64_t> add_strides = extra ? broadcast_strides(added.shape(), y.shape()) : out_strides;
  // The element of the extra that output element i adds: the same one (a residual), one per
  // column (a bias), or through the broadcast strides.
  const int64_t columns = y.ndim() > 0 ? y.shape()[y.ndim() - 1] : 1;
  const bool same_shape = extra && added.shape() == y.shape();
  const bool per_column = extra && added.ndim() == 1 && added.numel() == columns;
  const auto source_of = [&](int64_t i) {
    if (same_shape) return i;
    if (per_column) return i % columns;
    int64_t source = 0, rest = i;
    for (size_t a = 0; a < out_strides.size(); ++a) {
      source += rest / out_strides[a] * add_strides[a];
      rest %= out_strides[a];
    }
    return source;
  };
  dispatch_dtype(y.dtype(), [&](auto tag) {
    using T = typename decltype(tag)::type;
    if constexpr (std::is_floating_point_v<T> || std::is_same_v<T, float16> || std::is_same_v<T, bfloat16>) {
      T* out = y.data<T>();
      const T* add = extra ? added.data<T>() : nullptr;
      parallel_for(0, n, kGrain, [&](int64_t begin, int64_t end) {
        for (int64_t i = begin; i < end; ++i) {
          double v = alpha * static_cast<double>(out[i]);
          if (add) v += static_cast<double>(add[source_of(i)]);
          out[i] = static_cast<T>(act(v));
        }
      });
    }
  });
}

OpSchema& register_fused(const char* name, const FusedSpec& spec) {
  return OpRegistry::global()
      .add(name)
      .infer([spec](InferContext& ctx) { return infer_fused(spec, ctx); })
      .kernel([spec](KernelContext& ctx) { fused_kernel(spec, ctx); })
      .attr("activation", AttrType::kString, "")
      .attr("activation_params", AttrType::kFloats, std::vector<double>{});
}

}  // namespace

[[maybe_unused]] static OpSchema& fused_conv =
    register_fused("FusedConv", {"Conv", 3, Extra::kResidual})
        .doc("act(Conv(X, W, B) + Z): a Conv with a residual Add and an activation folded in.")
        .input("X")
        .input("W")
        .input("B", Arity::kOptional)
        .input("Z", Arity::kOptional)
        .output("Y")
        .attr("auto_pad", AttrType::kString, "NOTSET")
        .optional_attr("dilations", AttrType::kInts)
        .attr("group", AttrType::kInt, 1)
        .optional_attr("kernel_shape", AttrType::kInts)
        .optional_attr("pads", AttrType::kInts)
        .optional_attr("strides", AttrType::kInts);

[[maybe_unused]] static OpSchema& fused_gemm =
    register_fused("FusedGemm", {"Gemm", 3, Extra::kNone})
        .doc("act(Gemm(A, B, C)): a Gemm with an activation folded in.")
        .input("A")
        .input("B")
        .input("C", Arity::kOptional)
        .output("Y")
        .attr("alpha", AttrType::kFloat, 1.0)
        .attr("beta", AttrType::kFloat, 1.0)
        .attr("transA", AttrType::kInt, 0)
        .attr("transB", AttrType::kInt, 0);

[[maybe_unused]] static OpSchema& fused_matmul =
    register_fused("FusedMatMul", {"MatMul", 2, Extra::kBroadcast, /*scaled=*/true})
        .doc(
            "act(alpha * MatMul(A, B) + bias): a MatMul with a scale, an addend broadcast to its output (a "
            "per-column bias, an attention mask, a residual) and an activation folded in.")
        .input("A")
        .input("B")
        .input("bias", Arity::kOptional)
        .output("Y")
        .attr("alpha", AttrType::kFloat, 1.0);

}  // namespace kiln::ops
