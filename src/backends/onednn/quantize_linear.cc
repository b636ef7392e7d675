// QuantizeLinear (src/ops/quantize.cc) of float32 to uint8 or int8 per tensor on oneDNN's reorder,
// y = saturate(round(x / y_scale) + y_zero_point) with the scale and zero point as the reorder's
// destination scale and zero point. The reorder also changes the layout: a 4-D input is written
// channels last when the output may stay in a oneDNN layout, the layout the int8 convolutions
// read (fuse_quantized_ops leaves a QuantizeLinear at the float borders of an int8 chain, such as
// a model's input), so the quantization is the only pass over the tensor.
//
// Where the result can differ from the reference's, by one step: oneDNN multiplies by the
// reciprocal of the scale where the reference divides (a quotient within a rounding error of a
// half may round the other way), and adds the zero point before rounding, so an exact half goes
// to the other neighbour when the zero point is odd.
//
// A tiny tensor (kLoopQuantizeElements, loop_layout.h; a small model's input at batch 1) is
// quantized by a plain loop instead, with the reference's arithmetic (ONNX's rounding): a oneDNN
// call costs about 0.4 us of fixed overhead, which the 64 pixels of an 8x8 image take a hundredth
// of.
#include <algorithm>
#include <array>
#include <cmath>
#include <limits>
#include <memory>
#include <optional>
#include <vector>

#include "backends/onednn/loop_layout.h"
#include "backends/onednn/onednn_common.h"

namespace kiln::onednn {
namespace {

using tag = dnnl::memory::format_tag;
using dt = dnnl::memory::data_type;

enum Input { kX, kScale, kZero };

// Up to this many dims are walked by the plain loop.
constexpr size_t kLoopRank = 8;

// saturate(round_half_to_even(v) + zero) as ops::saturate_round computes it, without a call into
// the maths library per element: adding and subtracting 1.5 * 2^23 rounds a float of magnitude up
// to 2^22 to an integer in the default rounding mode (half to even), and clamping to that first
// changes no 8-bit result.
template <typename Q>
Q saturate_round_float(float v, int32_t zero) {
  constexpr float kShift = 12582912.f, kLimit = 4194304.f;
  if (std::isnan(v)) return std::numeric_limits<Q>::min();
  const float rounded = (std::clamp(v, -kLimit, kLimit) + kShift) - kShift;
  return static_cast<Q>(std::clamp(rounded + static_cast<float>(zero),
                                   static_cast<float>(std::numeric_limits<Q>::min()),
                                   static_cast<float>(std::numeric_limits<Q>::max())));
}

// The dims and strides (in elements) the plain loop walks: the input as stored, the output in the
// layout the int8 kernels after it read.
struct LoopShape {
  size_t rank = 0;
  int64_t total = 1;
  std::array<int64_t, kLoopRank> dims{}, x_strides{}, y_strides{};
  bool dense = false;  // both sides row-major over the same order: one flat loop
};

// y = saturate(round(x / scale) + zero) over `shape`.
template <typename Q>
void quantize_strided(const float* x, Q* y, const LoopShape& shape, float scale, int32_t zero) {
  if (shape.dense) {
    for (int64_t i = 0; i < shape.total; ++i) y[i] = saturate_round_float<Q>(x[i] / scale, zero);
    return;
  }
  std::array<int64_t, kLoopRank> index{};
  int64_t xo = 0, yo = 0;
  for (int64_t n = 0; n < shape.total; ++n) {
    y[yo] = saturate_round_float<Q>(x[xo] / scale, zero);
    for (size_t d = shape.rank; d-- > 0;) {  // the next index, innermost axis first
      if (++index[d] < shape.dims[d]) {
        xo += shape.x_strides[d];
        yo += shape.y_strides[d];
        break;
      }
      xo -= shape.x_strides[d] * (shape.dims[d] - 1);
      yo -= shape.y_strides[d] * (shape.dims[d] - 1);
      index[d] = 0;
    }
  }
}

struct QuantizeKernel {
  Prepared<dnnl::reorder> reorder;
  dnnl::memory::desc x_desc, y_desc;
  dnnl::memory::desc scalar_f32{{1}, dt::f32, tag::a}, scalar_s32{{1}, dt::s32, tag::a};
  float scale = 1.f;
  int32_t zero_point = 0;
  bool y_unsigned = false;
  std::optional<LoopShape> loop;  // small: the plain loop instead of the reorder

  void operator()(ops::KernelContext& ctx) const {
    if (loop) {
      const auto* x = static_cast<const float*>(ctx.input(kX).raw_data());
      void* y = ctx.output(0).raw_data();
      if (y_unsigned)
        quantize_strided(x, static_cast<uint8_t*>(y), *loop, scale, zero_point);
      else
        quantize_strided(x, static_cast<int8_t*>(y), *loop, scale, zero_point);
      return;
    }
    std::vector<Arg> args{{DNNL_ARG_FROM, x_desc, ctx.input(kX).raw_data()},
                          {DNNL_ARG_TO, y_desc, ctx.output(0).raw_data()},
                          {DNNL_ARG_ATTR_SCALES | DNNL_ARG_DST, scalar_f32, &scale}};
    if (zero_point != 0) args.push_back({DNNL_ARG_ATTR_ZERO_POINTS | DNNL_ARG_DST, scalar_s32, &zero_point});
    execute(ctx, reorder, std::span<const Arg>(args));
  }
};

// The one value of a per-tensor parameter, or nothing when it is not a constant of one element.
const Tensor* per_tensor_constant(const graph::Node& node, int i) {
  const Tensor* t = constant_input(node, i);
  return t != nullptr && t->numel() == 1 ? t : nullptr;
}

runtime::KernelChoice make_quantize_kernel(const runtime::KernelQuery& query) {
  const graph::Node& node = query.node;
  const auto& x = input_info(node, kX);
  const auto& y = output_info(node, 0);
  // Per-tensor float32 quantization, divided in float32 (the default precision) like the reference.
  if (x.dtype != DType::kFloat32 || query.attrs.get_int("precision") != 0) return {};
  const Tensor* scale = per_tensor_constant(node, kScale);
  if (scale == nullptr || scale->dtype() != DType::kFloat32) return {};
  const Tensor* zero = has_input(node, kZero) ? per_tensor_constant(node, kZero) : nullptr;
  if (has_input(node, kZero) && zero == nullptr) return {};
  const std::optional<dnnl::memory::desc> x_stored = stored_desc(query, kX);
  // A blocked layout has no 8-bit twin of the same strides; the runtime reorders it to row-major.
  if (!x_stored || x_stored->get_inner_nblks() != 0) return {};

  auto kernel = std::make_shared<QuantizeKernel>();
  kernel->scale = scale->contiguous().to_vector<float>()[0];
  kernel->zero_point = zero ? zero->cast(DType::kInt32).to_vector<int32_t>()[0] : 0;
  kernel->x_desc = *x_stored;
  const dt y_type = *to_dnnl(y.dtype);
  const dnnl::memory::dims dims = to_dims(x.shape);
  dnnl::memory::desc written = plain_desc(y.shape, y.dtype);
  if (!query.output_row_major[0] && query.input_layouts[kX] != nullptr)
    written = dnnl::memory::desc(dims, y_type, x_stored->get_strides());
  else if (!query.output_row_major[0] && x.shape.ndim() == 4)
    written = dnnl::memory::desc(dims, y_type, tag::acdb);

  dnnl::primitive_attr attr = base_attr();
  attr.set_scales_mask(DNNL_ARG_DST, 0);
  if (kernel->zero_point != 0) attr.set_zero_points_mask(DNNL_ARG_DST, 0);
  const double flops = streamed_flops(kernel->x_desc);
  create_for(flops);
  const dnnl::reorder::primitive_desc pd(cpu_engine(), kernel->x_desc, cpu_engine(), written, attr);
  if (is_generic_impl(pd)) return {};
  kernel->reorder = Prepared<dnnl::reorder>(pd, flops);
  runtime::KernelChoice choice;
  choice.output_layouts.resize(1);
  kernel->y_desc = output_store(query, 0, written, choice.output_layouts[0]);
  kernel->y_unsigned = y_type == dt::u8;
  if (x.shape.numel() <= kLoopQuantizeElements && kernel->x_desc.get_ndims() <= static_cast<int>(kLoopRank) &&
      kernel->y_desc.get_inner_nblks() == 0) {
    LoopShape& loop = kernel->loop.emplace();
    const dnnl::memory::dims x_strides = kernel->x_desc.get_strides(),
                             y_strides = kernel->y_desc.get_strides();
    loop.rank = dims.size();
    for (size_t d = 0; d < loop.rank; ++d) {
      loop.dims[d] = dims[d];
      loop.x_strides[d] = x_strides[d];
      loop.y_strides[d] = y_strides[d];
      loop.total *= dims[d];
    }
    // Dense when each axis of more than one element has the row-major stride on both sides.
    loop.dense = true;
    for (size_t d = loop.rank, stride = 1; d-- > 0;) {
      if (dims[d] == 1) continue;
      loop.dense = loop.dense && x_strides[d] == static_cast<int64_t>(stride) &&
                   y_strides[d] == static_cast<int64_t>(stride);
      stride *= static_cast<size_t>(dims[d]);
    }
  }
  choice.kernel = [kernel](ops::KernelContext& ctx) { (*kernel)(ctx); };
  return choice;
}

}  // namespace

KILN_ONEDNN_LAYOUT_KERNEL(QuantizeLinear, make_quantize_kernel);

}  // namespace kiln::onednn
