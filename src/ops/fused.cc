// Fused ops: a Conv, Gemm or MatMul with what follows it in the graph folded in, so that a
// backend can compute it in one pass (oneDNN post-ops) instead of writing and re-reading the
// intermediate tensor. The graph pass fuse_post_ops makes them; they are Kiln's own ops (written
// to MXNet files as _kiln_<Op>, expanded back to standard ops in ONNX files).
//
//   FusedConv(X, W, B?, Z?)     Y = act(Conv(X, W, B) + Z)      Z: a residual of Y's shape
//   FusedGemm(A, B, C?)         Y = act(Gemm(A, B, C))
//   FusedMatMul(A, B, bias?)    Y = act(MatMul(A, B) + bias)    bias: one value per column
//
// Each takes its base op's attributes plus `activation` and `activation_params` (see
// fused_activation.h). The reference kernel runs the base op's reference kernel, then the rest.
#include "core/thread_pool.h"
#include "ops/fused_activation.h"
#include "ops/infer_util.h"

namespace kiln::ops {
namespace {

constexpr int64_t kGrain = 1 << 15;

// The base op's attributes: the fused op's, without the activation.
Attrs base_attrs(const OpSchema& base, const Attrs& attrs) {
  AttrMap given;
  for (const auto& [name, value] : attrs.values())
    if (name != "activation" && name != "activation_params") given.emplace(name, value);
  return base.bind(given);
}

FusedActivation activation_of(const Attrs& attrs) {
  return parse_fused_activation(attrs.get_string("activation"), attrs.get_floats("activation_params"));
}

// What the fused op adds to the base op's result before the activation.
enum class Extra { kNone, kResidual, kColumnBias };

struct FusedSpec {
  const char* base;
  int base_inputs;  // inputs of the base op; the one after it (if any) is the extra
  Extra extra;
};

std::vector<TensorInfo> infer_fused(const FusedSpec& spec, InferContext& ctx) {
  const OpSchema& base = OpRegistry::global().get(spec.base);
  activation_of(ctx.attrs());
  std::vector<std::optional<TensorInfo>> infos;
  std::vector<const Tensor*> values;
  for (int i = 0; i < spec.base_inputs; ++i) {
    infos.push_back(ctx.has_input(i) ? std::optional<TensorInfo>(ctx.input(i)) : std::nullopt);
    values.push_back(nullptr);
  }
  std::vector<TensorInfo> out = base.infer_types(base_attrs(base, ctx.attrs()), infos, values);
  require_dtype(ctx, 0, kFloatDTypes);
  const int extra = spec.base_inputs;
  if (!ctx.has_input(extra)) return out;
  require_same_dtype(ctx, 0, extra);
  const Shape& y = out[0].shape;
  const Shape& e = ctx.shape(extra);
  if (spec.extra == Extra::kResidual) {
    KILN_CHECK(e == y || !e.is_known() || !y.is_known(), ErrorCode::kShapeMismatch, ctx.input_label(extra),
               ": expected the output's shape ", y, ", got ", e);
  } else {
    const int64_t columns = y.ndim() > 0 ? y[y.ndim() - 1] : 1;
    KILN_CHECK(e.ndim() == 1 && (e[0] == columns || e[0] < 0 || columns < 0), ErrorCode::kShapeMismatch,
               ctx.input_label(extra), ": expected one value per output column, shape (", columns, "), got ",
               e);
  }
  return out;
}

void fused_kernel(const FusedSpec& spec, KernelContext& ctx) {
  const OpSchema& base = OpRegistry::global().get(spec.base);
  const Attrs attrs = base_attrs(base, ctx.attrs);
  std::vector<Tensor> inputs(ctx.inputs.begin(),
                             ctx.inputs.begin() + std::min<int64_t>(spec.base_inputs, ctx.num_inputs()));
  KernelContext base_ctx{attrs, inputs, ctx.outputs};
  base.reference_kernel()(base_ctx);

  const FusedActivation act = activation_of(ctx.attrs);
  const Tensor* extra = ctx.has_input(spec.base_inputs) ? &ctx.input(spec.base_inputs) : nullptr;
  Tensor& y = ctx.output(0);
  const int64_t n = y.numel();
  const int64_t columns = y.ndim() > 0 ? y.shape()[y.ndim() - 1] : 1;
  dispatch_dtype(y.dtype(), [&](auto tag) {
    using T = typename decltype(tag)::type;
    if constexpr (std::is_floating_point_v<T> || std::is_same_v<T, float16> || std::is_same_v<T, bfloat16>) {
      T* out = y.data<T>();
      const T* add = extra ? extra->data<T>() : nullptr;
      parallel_for(0, n, kGrain, [&](int64_t begin, int64_t end) {
        for (int64_t i = begin; i < end; ++i) {
          double v = static_cast<double>(out[i]);
          if (add) v += static_cast<double>(add[spec.extra == Extra::kResidual ? i : i % columns]);
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
    register_fused("FusedMatMul", {"MatMul", 2, Extra::kColumnBias})
        .doc("act(MatMul(A, B) + bias): a MatMul with a per-column bias and an activation folded in.")
        .input("A")
        .input("B")
        .input("bias", Arity::kOptional)
        .output("Y");

}  // namespace kiln::ops
