// BatchNormalization in its inference form (training_mode=0) with constant parameters (the usual
// case), as one per-channel affine map y = x * a + b on oneDNN's binary primitive: a multiply
// with a binary-add post-op. a = scale / sqrt(var + epsilon) and b = B - mean * a are computed
// once at compile time in double, as the reference kernel computes them.
//
// Why not oneDNN's batch normalization primitive: on plain (N, C, ...) tensors it has only a
// scalar implementation, ten times slower than the reference kernel (its fast kernels want
// channel-blocked tensors, and the reorders there and back cost more than the whole reference
// kernel); the affine map runs at memory speed. Parameters computed at run time, and tensors
// small enough that the reference kernel is faster, stay with the reference kernel.
#include <cmath>
#include <memory>
#include <string_view>

#include "backends/onednn/onednn_common.h"

namespace kiln::onednn {
namespace {

// Below these sizes the reference kernel is faster: a oneDNN call costs 1 to 3 us, and in
// float32 the reference kernel runs at memory speed, so oneDNN only draws level at about 2^18
// elements (it is many times faster for the 16-bit floats, which the reference converts one by one).
constexpr int64_t kMinElements = 8192;
constexpr int64_t kMinElementsFloat32 = 1 << 18;

struct BatchNormKernel {
  Prepared<dnnl::binary> affine;
  dnnl::memory::desc x_desc, channel_desc;
  Tensor a, b;  // per channel, float32

  void operator()(ops::KernelContext& ctx) const {
    execute(ctx, affine,
            {{DNNL_ARG_SRC_0, x_desc, ctx.input(0).raw_data()},
             {DNNL_ARG_SRC_1, channel_desc, a.raw_data()},
             {DNNL_ARG_ATTR_MULTIPLE_POST_OP(0) | DNNL_ARG_SRC_1, channel_desc, b.raw_data()},
             {DNNL_ARG_DST, x_desc, ctx.output(0).raw_data()}});
  }
};

std::vector<double> as_doubles(const Tensor& t) {
  return t.cast(DType::kFloat64).to_vector<double>();
}

ops::KernelFn make_batch_norm(const graph::Node& node, const Attrs& attrs) {
  const auto& x = input_info(node, 0);
  if (attrs.get_int("training_mode") != 0 || node.outputs.size() != 1 || !is_float(x.dtype) ||
      x.shape.numel() < (x.dtype == DType::kFloat32 ? kMinElementsFloat32 : kMinElements))
    return {};
  const Tensor* params[4];
  for (int i = 0; i < 4; ++i) {
    params[i] = constant_input(node, i + 1);
    if (params[i] == nullptr) return {};
  }
  const std::vector<double> scale = as_doubles(*params[0]), bias = as_doubles(*params[1]);
  const std::vector<double> mean = as_doubles(*params[2]), var = as_doubles(*params[3]);
  const double epsilon = attrs.get_float("epsilon");
  const int64_t channels = x.shape[1];
  std::vector<float> a(static_cast<size_t>(channels)), b(static_cast<size_t>(channels));
  for (size_t c = 0; c < a.size(); ++c) {
    const double ac = scale[c] / std::sqrt(var[c] + epsilon);
    a[c] = static_cast<float>(ac);
    b[c] = static_cast<float>(bias[c] - mean[c] * ac);
  }
  auto kernel = std::make_shared<BatchNormKernel>();
  kernel->a = Tensor::from_vector(a, Shape{channels});
  kernel->b = Tensor::from_vector(b, Shape{channels});
  // (N, C, spatial product), or (N, C) without spatial elements: every rank >= 2, with the
  // per-channel broadcast oneDNN covers fast.
  const int64_t plane = x.shape.numel() / (x.shape[0] * channels);
  const bool flat = plane == 1;
  kernel->x_desc =
      plain_desc(flat ? Shape{x.shape[0], channels} : Shape{x.shape[0], channels, plane}, x.dtype);
  kernel->channel_desc = plain_desc(flat ? Shape{1, channels} : Shape{1, channels, 1}, DType::kFloat32);
  dnnl::post_ops post;
  post.append_binary(dnnl::algorithm::binary_add, kernel->channel_desc);
  dnnl::primitive_attr attr = base_attr();
  attr.set_post_ops(post);
  const dnnl::binary::primitive_desc pd(cpu_engine(), dnnl::algorithm::binary_mul, kernel->x_desc,
                                        kernel->channel_desc, kernel->x_desc, attr);
  if (is_generic_impl(pd)) return {};
  kernel->affine = Prepared<dnnl::binary>(pd);
  return [kernel](ops::KernelContext& ctx) { (*kernel)(ctx); };
}

}  // namespace

KILN_ONEDNN_KERNEL(BatchNormalization, make_batch_norm);

}  // namespace kiln::onednn
