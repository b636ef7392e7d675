// The shared int8 matmul of the quantized MatMul kernels (see int8_matmul.h).
#include "backends/onednn/int8_matmul.h"

#include "backends/onednn/cpu_features.h"

namespace kiln::onednn {

using tag = dnnl::memory::format_tag;
using dt = dnnl::memory::data_type;

std::vector<Arg> Int8Matmul::arguments(const void* a, void* out, const void* bias) const {
  std::vector<Arg> args{{DNNL_ARG_SRC, a_desc, a},
                        {DNNL_ARG_WEIGHTS, b_desc, weights.get_data_handle()},
                        {DNNL_ARG_DST, out_desc, out},
                        {DNNL_ARG_ATTR_SCALES | DNNL_ARG_WEIGHTS, columns_f32, weight_scales.data()}};
  if (has_bias) args.push_back({DNNL_ARG_BIAS, bias_desc, bias});
  return args;
}

std::optional<Int8Matmul> make_int8_matmul(const ops::TensorInfo& a, DType a_dtype, const Tensor& b,
                                           std::vector<float> weight_scales, const ops::TensorInfo& y,
                                           bool has_bias, dnnl::primitive_attr attr) {
  if (!int8_products_exact(a_dtype, b)) return std::nullopt;
  const int rank = a.shape.ndim();
  Int8Matmul m;
  m.weight_scales = std::move(weight_scales);
  m.columns_f32 = dnnl::memory::desc({static_cast<int64_t>(m.weight_scales.size())}, dt::f32, tag::a);
  attr.set_scales_mask(DNNL_ARG_WEIGHTS, m.weight_scales.size() > 1 ? 1 << (rank - 1) : 0);
  // B and the bias broadcast over the leading axes of A: dims of one there.
  dnnl::memory::dims b_dims(static_cast<size_t>(rank - 2), 1), bias_dims(static_cast<size_t>(rank - 1), 1);
  b_dims.push_back(b.shape()[0]);
  b_dims.push_back(b.shape()[1]);
  bias_dims.push_back(b.shape()[1]);
  m.a_desc = plain_desc(a.shape, a_dtype);
  m.out_desc = plain_desc(y.shape, y.dtype);
  m.has_bias = has_bias;
  const dnnl::memory::desc b_any(b_dims, dt::s8, tag::any);
  dnnl::matmul::primitive_desc pd;
  double flops = 2.0 * static_cast<double>(b.shape()[0]);
  for (int64_t d : y.shape) flops *= static_cast<double>(d);
  create_for(flops);
  try {
    if (has_bias) {
      m.bias_desc = plain_desc(Shape(bias_dims), DType::kFloat32);
      pd = dnnl::matmul::primitive_desc(cpu_engine(), m.a_desc, b_any, m.bias_desc, m.out_desc, attr);
    } else {
      pd = dnnl::matmul::primitive_desc(cpu_engine(), m.a_desc, b_any, m.out_desc, attr);
    }
  } catch (const dnnl::error&) {
    return std::nullopt;  // a combination oneDNN has no int8 implementation of
  }
  if (is_generic_impl(pd)) return std::nullopt;
  m.matmul = Prepared<dnnl::matmul>(pd, flops);
  m.b_desc = pd.weights_desc();
  m.weights = prepare_constant(wrap(plain_desc(Shape(b_dims), DType::kInt8), b), m.b_desc);
  return m;
}

}  // namespace kiln::onednn
