// Linear algebra on batches of square matrices: Det. Each matrix is factored by Gaussian
// elimination with partial pivoting (LU) in double, so that a float32 determinant loses nothing to
// the elimination's rounding; the determinant is the product of the pivots, its sign flipped once
// per row swap.
#include <algorithm>
#include <cmath>
#include <type_traits>
#include <vector>

#include "core/thread_pool.h"
#include "infer_util.h"

namespace kiln::ops {
namespace {

// The determinant of the n x n row-major matrix `a`, which it overwrites with its LU factors.
double determinant(std::vector<double>& a, int64_t n) {
  double det = 1;
  for (int64_t k = 0; k < n; ++k) {
    int64_t pivot = k;
    for (int64_t r = k + 1; r < n; ++r)
      if (std::fabs(a[static_cast<size_t>(r * n + k)]) > std::fabs(a[static_cast<size_t>(pivot * n + k)]))
        pivot = r;
    const double p = a[static_cast<size_t>(pivot * n + k)];
    if (p == 0) return 0;  // singular (NaN pivots fall through and propagate)
    if (pivot != k) {
      std::swap_ranges(a.begin() + k * n, a.begin() + (k + 1) * n, a.begin() + pivot * n);
      det = -det;
    }
    det *= p;
    for (int64_t r = k + 1; r < n; ++r) {
      const double factor = a[static_cast<size_t>(r * n + k)] / p;
      for (int64_t c = k + 1; c < n; ++c)
        a[static_cast<size_t>(r * n + c)] -= factor * a[static_cast<size_t>(k * n + c)];
    }
  }
  return det;
}

std::vector<TensorInfo> infer_det(InferContext& ctx) {
  require_dtype(ctx, 0, kFloatDTypes);
  const Shape& x = ctx.shape(0);
  KILN_CHECK(x.ndim() >= 2, ErrorCode::kShapeMismatch, ctx.input_label(0),
             ": expected square matrices [*, M, M], got shape ", x);
  const int64_t rows = x[x.ndim() - 2], cols = x[x.ndim() - 1];
  KILN_CHECK(rows < 0 || cols < 0 || rows == cols, ErrorCode::kShapeMismatch, ctx.input_label(0),
             ": expected square matrices [*, M, M], got ", rows, " x ", cols, " (shape ", x, ")");
  return {TensorInfo{ctx.dtype(0), Shape(std::vector<int64_t>(x.begin(), x.end() - 2))}};
}

void det_kernel(KernelContext& ctx) {
  const Tensor& x = ctx.input(0);
  Tensor& y = ctx.output(0);
  const int64_t n = x.shape()[x.ndim() - 1];
  dispatch_dtype(x.dtype(), [&](auto tag) {
    using T = typename decltype(tag)::type;
    if constexpr (std::is_floating_point_v<compute_t<T>>) {
      const T* px = x.data<T>();
      T* py = y.data<T>();
      parallel_for(0, y.numel(), 1, [&](int64_t begin, int64_t end) {
        std::vector<double> a(static_cast<size_t>(n * n));
        for (int64_t m = begin; m < end; ++m) {
          for (int64_t i = 0; i < n * n; ++i)
            a[static_cast<size_t>(i)] = static_cast<double>(static_cast<compute_t<T>>(px[m * n * n + i]));
          py[m] = convert_value<T>(determinant(a, n));
        }
      });
    }
  });
}

KILN_REGISTER_OP(Det)
    .doc("The determinant of each square matrix in the last two axes: [*, M, M] -> [*].")
    .input("X")
    .output("Y")
    .infer(infer_det)
    .kernel(det_kernel);

}  // namespace
}  // namespace kiln::ops
