// Matrix products: MatMul (numpy matmul: batched, broadcasting batch dims, 1-D promotion).
#include <algorithm>

#include "broadcast.h"
#include "infer_util.h"
#include "matmul_kernel.h"

namespace kiln::ops {
namespace {

// numpy matmul shapes: a 1-D A is a row vector, a 1-D B a column vector (their unit axes are
// dropped from the result); leading batch axes broadcast.
inline constexpr DType kMatMulDTypes[] = {DType::kFloat32, DType::kFloat64, DType::kFloat16,
                                          DType::kBFloat16, DType::kInt32, DType::kInt64};

std::vector<TensorInfo> infer_matmul(InferContext& ctx) {
  require_dtype(ctx, 0, kMatMulDTypes);
  require_same_dtype(ctx, 0, 1);
  const Shape& a = ctx.shape(0);
  const Shape& b = ctx.shape(1);
  KILN_CHECK(a.ndim() >= 1 && b.ndim() >= 1, ErrorCode::kShapeMismatch, "expected inputs of rank >= 1, got ", a,
             " and ", b);
  const int64_t k_a = a[a.ndim() - 1];
  const int64_t k_b = b.ndim() == 1 ? b[0] : b[b.ndim() - 2];
  KILN_CHECK(k_a == k_b || k_a < 0 || k_b < 0, ErrorCode::kShapeMismatch, ctx.input_label(1),
             ": expected ", k_a, " rows to match the columns of ", ctx.input_label(0), " ", a, ", got shape ", b);
  const Shape batch_a(std::vector<int64_t>(a.begin(), a.end() - std::min(a.ndim(), 2)));
  const Shape batch_b(std::vector<int64_t>(b.begin(), b.end() - std::min(b.ndim(), 2)));
  Shape out = broadcast_shapes(batch_a, batch_b, "batch dimensions");
  if (a.ndim() >= 2) out.push_back(a[a.ndim() - 2]);
  if (b.ndim() >= 2) out.push_back(b[b.ndim() - 1]);
  return {TensorInfo{ctx.dtype(0), out}};
}

void matmul_kernel(KernelContext& ctx) {
  const Tensor& a = ctx.input(0);
  const Tensor& b = ctx.input(1);
  Tensor& out = ctx.output(0);
  // View 1-D operands as matrices, then walk the broadcast batch.
  const Shape sa = a.ndim() == 1 ? Shape{1, a.shape()[0]} : a.shape();
  const Shape sb = b.ndim() == 1 ? Shape{b.shape()[0], 1} : b.shape();
  const int64_t m = sa[sa.ndim() - 2], k = sa[sa.ndim() - 1], n = sb[sb.ndim() - 1];
  const Shape batch_a(std::vector<int64_t>(sa.begin(), sa.end() - 2));
  const Shape batch_b(std::vector<int64_t>(sb.begin(), sb.end() - 2));
  const Shape batch = broadcast_shapes(batch_a, batch_b, "MatMul batch");
  const BroadcastPlan<2> plan(batch, {batch_a, batch_b});
  dispatch_dtype(a.dtype(), [&](auto tag) {
    using T = typename decltype(tag)::type;
    if constexpr (!std::is_same_v<T, bool>) {
      const T* pa = a.data<T>();
      const T* pb = b.data<T>();
      T* po = out.data<T>();
      int64_t batch_index = 0;
      std::array<int64_t, 2> off;
      for (int64_t row = 0; row < std::max<int64_t>(plan.rows(), batch.numel() == 0 ? 0 : 1); ++row) {
        plan.row_offsets(row, off);
        for (int64_t j = 0; j < plan.inner(); ++j, ++batch_index) {
          const int64_t ia = off[0] + j * plan.inner_stride(0), ib = off[1] + j * plan.inner_stride(1);
          gemm_reference<T>(false, false, m, n, k, pa + ia * m * k, k, pb + ib * k * n, n,
                            po + batch_index * m * n, n);
        }
      }
    }
  });
}

KILN_REGISTER_OP(MatMul)
    .doc("Matrix product with numpy semantics: batched, broadcasting batch dimensions.")
    .input("A").input("B").output("Y")
    .infer(infer_matmul)
    .kernel(matmul_kernel);

}  // namespace
}  // namespace kiln::ops
