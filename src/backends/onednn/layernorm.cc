// LayerNormalization on oneDNN's layer normalization, which normalizes over the last dimension
// (bf16 or fp16 in and out in a low-precision plan, float32 statistics):
// the tensor is viewed as (rows, cols) with cols the product of the axes from `axis` on. Scale
// and B broadcast to those axes, so constant ones are expanded to cols float32 values once at
// compile time; ones computed at run time must already be cols float32 values. oneDNN gives the
// Mean output (float32 stash type) but not InvStdDev, so a node that has InvStdDev stays with
// the reference kernel.
#include <memory>
#include <string_view>

#include "backends/onednn/onednn_common.h"

namespace kiln::onednn {
namespace {

using flags = dnnl::normalization_flags;

// ONNX TensorProto code of float32, LayerNormalization's default stash_type.
constexpr int64_t kStashFloat32 = 1;

// `param` broadcast to `normalized` (numpy rules, its trailing axes aligned), flattened, float32.
Tensor expand_param(const Tensor& param, const Shape& normalized) {
  const std::vector<float> values = param.cast(DType::kFloat32).to_vector<float>();
  const Shape& s = param.shape();
  const int lead = normalized.ndim() - s.ndim();
  const std::vector<int64_t> strides = contiguous_strides(s);
  std::vector<float> out(static_cast<size_t>(normalized.numel()));
  for (size_t j = 0; j < out.size(); ++j) {
    int64_t rest = static_cast<int64_t>(j), source = 0;
    for (int a = normalized.ndim() - 1; a >= lead; --a) {
      const int64_t coord = rest % normalized[a];
      rest /= normalized[a];
      if (s[a - lead] != 1) source += coord * strides[static_cast<size_t>(a - lead)];
    }
    out[j] = values[static_cast<size_t>(source)];
  }
  return Tensor::from_vector(out, Shape{normalized.numel()});
}

// Scale (input 1) and B (input 2) in oneDNN's argument order.
constexpr int kParamArgs[] = {DNNL_ARG_SCALE, DNNL_ARG_SHIFT};

struct LayerNormKernel {
  Prepared<dnnl::layer_normalization_forward> norm;
  dnnl::memory::desc x_desc, y_desc, param_desc, stat_desc;
  std::optional<Tensor> constants[2];  // expanded float32 copies of the constant parameters
  bool use_shift = false;
  bool with_mean = false;  // the Mean output is requested

  void operator()(ops::KernelContext& ctx) const {
    std::vector<Arg> args;
    args.reserve(6);
    args.push_back({DNNL_ARG_SRC, x_desc, ctx.input(0).raw_data()});
    args.push_back({DNNL_ARG_DST, y_desc, ctx.output(0).raw_data()});
    for (int i = 0; i < (use_shift ? 2 : 1); ++i) {
      const auto k = static_cast<size_t>(i);
      args.push_back(
          {kParamArgs[k], param_desc, (constants[k] ? *constants[k] : ctx.input(i + 1)).raw_data()});
    }
    std::shared_ptr<Storage> variance_bytes;
    if (with_mean) {
      args.push_back({DNNL_ARG_MEAN, stat_desc, ctx.output(1).raw_data()});
      args.push_back({DNNL_ARG_VARIANCE, stat_desc, temporary_bytes(stat_desc.get_size(), variance_bytes)});
    }
    execute(ctx, norm, args);
  }
};

// X is read row-major in the type it is stored in (float32, or bf16/fp16 between this backend's
// kernels in a low-precision plan) and Y written in the plan's compute type unless it is a graph
// output; the statistics are computed in float32 either way.
runtime::KernelChoice make_layer_norm(const runtime::KernelQuery& query) {
  const graph::Node& node = query.node;
  const Attrs& attrs = query.attrs;
  const auto& x = input_info(node, 0);
  const bool with_mean = node.outputs.size() == 2;
  if (node.outputs.size() > 2 || (with_mean && attrs.get_int("stash_type") != kStashFloat32)) return {};
  if (!is_float(x.dtype) || x.shape.numel() == 0) return {};
  const std::optional<dnnl::memory::desc> x_stored = stored_plain_desc(query, 0);
  if (!x_stored) return {};
  const int axis = normalize_axis(attrs.get_int("axis"), x.shape.ndim(), "attribute 'axis'");
  const Shape normalized(std::vector<int64_t>(x.shape.begin() + axis, x.shape.end()));
  const int64_t cols = normalized.numel(), rows = x.shape.numel() / cols;
  auto kernel = std::make_shared<LayerNormKernel>();
  kernel->use_shift = has_input(node, 2);
  for (int i = 0; i < (kernel->use_shift ? 2 : 1); ++i) {
    if (const Tensor* constant = constant_input(node, i + 1)) {
      kernel->constants[static_cast<size_t>(i)] = expand_param(*constant, normalized);
    } else if (input_info(node, i + 1).dtype != DType::kFloat32 ||
               input_info(node, i + 1).shape.numel() != cols || query.input_layouts[i + 1] != nullptr) {
      return {};
    }
  }
  runtime::KernelChoice choice;
  choice.output_layouts.resize(node.outputs.size());
  const dnnl::memory::desc y_stored = plain_output_store(query, 0, choice.output_layouts[0]);
  kernel->with_mean = with_mean;
  kernel->x_desc = x_stored->reshape({rows, cols});
  kernel->y_desc = y_stored.reshape({rows, cols});
  kernel->param_desc = plain_desc(Shape{cols}, DType::kFloat32);
  kernel->stat_desc = plain_desc(Shape{rows}, DType::kFloat32);
  // Training propagation is the one that writes the statistics out.
  const auto prop = with_mean ? dnnl::prop_kind::forward_training : dnnl::prop_kind::forward_inference;
  const flags params = kernel->use_shift ? flags::use_scale | flags::use_shift : flags::use_scale;
  const dnnl::layer_normalization_forward::primitive_desc pd(
      cpu_engine(), prop, kernel->x_desc, kernel->y_desc, kernel->stat_desc,
      static_cast<float>(attrs.get_float("epsilon")), params, base_attr());
  if (is_generic_impl(pd)) return {};
  kernel->norm = Prepared<dnnl::layer_normalization_forward>(pd);
  choice.kernel = [kernel](ops::KernelContext& ctx) { (*kernel)(ctx); };
  return choice;
}

}  // namespace

KILN_ONEDNN_LAYOUT_KERNEL(LayerNormalization, make_layer_norm);

}  // namespace kiln::onednn
