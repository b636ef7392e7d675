// The plain loop for small float32 matrix products; see small_matmul.h.
#include "backends/onednn/small_matmul.h"

#include <algorithm>

namespace kiln::onednn {

namespace {

// The dot product of n floats, in kLanes independent partial sums that the compiler keeps in
// vector registers (a single running sum cannot be vectorized without reassociating it).
constexpr int64_t kLanes = 16;
float dot(const float* x, const float* y, int64_t n) {
  float partial[kLanes] = {};
  int64_t i = 0;
  for (; i + kLanes <= n; i += kLanes)
    for (int64_t l = 0; l < kLanes; ++l) partial[l] += x[i + l] * y[i + l];
  for (; i < n; ++i) partial[i % kLanes] += x[i] * y[i];
  // The partial sums pairwise, in halves, which the compiler also keeps in vector registers.
  for (int64_t width = kLanes / 2; width > 0; width /= 2)
    for (int64_t l = 0; l < width; ++l) partial[l] += partial[l + width];
  return partial[0];
}

}  // namespace

void SmallMatmul::run(const float* a, const float* addend, float* out) const {
  for (int64_t i = 0; i < m; ++i) {
    const float* a_row = a + i * a_row_stride;
    float* row = out + i * n;
    for (int64_t c = 0; c < n; ++c) {
      float v = alpha * dot(a_row, bt.data() + c * k, k);
      if (has_addend) v += addend[addend_per_column ? c : 0];
      row[c] = activation.kind == ops::Activation::kNone ? v : static_cast<float>(activation(v));
    }
  }
}

std::shared_ptr<const SmallMatmul> make_small_matmul(const dnnl::memory::desc& a, const dnnl::memory::desc& b,
                                                     const Tensor& b_constant,
                                                     const std::optional<dnnl::memory::dims>& addend_dims,
                                                     const dnnl::memory::desc& out, double alpha,
                                                     const Attrs& attrs) {
  using dt = dnnl::memory::data_type;
  if (a.get_data_type() != dt::f32 || b.get_data_type() != dt::f32 || out.get_data_type() != dt::f32 ||
      b_constant.dtype() != DType::kFloat32)
    return nullptr;
  const dnnl::memory::dims a_dims = a.get_dims(), b_dims = b.get_dims(), out_dims = out.get_dims();
  const size_t rank = a_dims.size();
  if (rank < 2 || b_dims.size() != rank || out_dims.size() != rank) return nullptr;
  // B one matrix (its leading dims 1); out row-major; A a strided matrix, or row-major rows.
  if (!std::all_of(b_dims.begin(), b_dims.end() - 2, [](int64_t d) { return d == 1; })) return nullptr;
  if (out != plain_desc(Shape(std::vector<int64_t>(out_dims.begin(), out_dims.end())), dt::f32))
    return nullptr;
  const dnnl::memory::dims a_strides = a.get_strides();
  if (a.get_inner_nblks() != 0 ||
      (rank > 2 && a != plain_desc(Shape(std::vector<int64_t>(a_dims.begin(), a_dims.end())), dt::f32)))
    return nullptr;
  auto loop = std::make_shared<SmallMatmul>();
  loop->k = a_dims[rank - 1];
  loop->n = b_dims[rank - 1];
  loop->m = 1;
  for (size_t d = 0; d + 1 < rank; ++d) loop->m *= a_dims[d];
  if (loop->m * loop->n * loop->k > kLoopMatmulMacs) return nullptr;
  // A transposed A (Gemm's transA) is left to oneDNN: the dot products read A's rows contiguous.
  if (a_strides[rank - 1] != 1) return nullptr;
  loop->a_row_stride = a_strides[rank - 2];
  if (addend_dims) {
    if (!std::all_of(addend_dims->begin(), addend_dims->end() - 1, [](int64_t d) { return d == 1; }))
      return nullptr;
    loop->has_addend = true;
    loop->addend_per_column = addend_dims->back() != 1;
  }
  // B as stored (possibly transposed: Gemm's transB) copied into (N, K) row-major, its columns
  // contiguous for the dot products.
  const dnnl::memory::dims b_strides = b.get_strides();
  const int64_t b_row_stride = b_strides[rank - 2], b_col_stride = b_strides[rank - 1];
  const float* stored = b_constant.data<float>();
  loop->bt.resize(static_cast<size_t>(loop->k * loop->n));
  for (int64_t j = 0; j < loop->k; ++j)
    for (int64_t c = 0; c < loop->n; ++c)
      loop->bt[static_cast<size_t>(c * loop->k + j)] = stored[j * b_row_stride + c * b_col_stride];
  loop->alpha = static_cast<float>(alpha);
  if (attrs.has("activation"))
    loop->activation =
        ops::parse_fused_activation(attrs.get_string("activation"), attrs.get_floats("activation_params"));
  return loop;
}

}  // namespace kiln::onednn
