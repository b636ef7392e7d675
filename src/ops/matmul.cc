// Matrix products: MatMul (numpy matmul: batched, broadcasting batch dims, 1-D promotion) and
// Gemm (Y = alpha * op(A) * op(B) + beta * C, C broadcast to the product's shape).
#include <algorithm>
#include <type_traits>

#include "attr_validators.h"
#include "broadcast.h"
#include "gradient.h"
#include "infer_util.h"
#include "kiln/threading.hpp"
#include "matmul_kernel.h"

namespace kiln::ops {
namespace {

inline constexpr DType kMatrixDTypes[] = {DType::kFloat32,  DType::kFloat64, DType::kFloat16,
                                          DType::kBFloat16, DType::kInt32,   DType::kInt64};

// numpy matmul shapes: a 1-D A is a row vector, a 1-D B a column vector (their unit axes are
// dropped from the result, so 1-D x 1-D is a scalar); leading batch axes broadcast.
std::vector<TensorInfo> infer_matmul(InferContext& ctx) {
  require_dtype(ctx, 0, kMatrixDTypes);
  require_same_dtype(ctx, 0, 1);
  for (int i = 0; i < 2; ++i)
    KILN_CHECK(ctx.shape(i).ndim() >= 1, ErrorCode::kShapeMismatch, ctx.input_label(i),
               ": expected rank >= 1, got a scalar");
  const Shape& a = ctx.shape(0);
  const Shape& b = ctx.shape(1);
  const int64_t k_a = a[a.ndim() - 1];
  const int64_t k_b = b.ndim() == 1 ? b[0] : b[b.ndim() - 2];
  KILN_CHECK(k_a == k_b || k_a < 0 || k_b < 0, ErrorCode::kShapeMismatch, ctx.input_label(1), ": expected ",
             k_a, " rows to match the columns of ", ctx.input_label(0), " ", a, ", got shape ", b);
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
  const int64_t batches = batch.numel();
  if (batches == 0) return;
  const BroadcastPlan<2> plan(batch, {batch_a, batch_b});
  dispatch_dtype(a.dtype(), [&](auto tag) {
    using T = typename decltype(tag)::type;
    if constexpr (!std::is_same_v<T, bool>) {
      const T* pa = a.data<T>();
      const T* pb = b.data<T>();
      T* po = out.data<T>();
      auto multiply = [&](int64_t first, int64_t last) {
        std::array<int64_t, 2> off;
        for (int64_t index = first; index < last; ++index) {
          plan.row_offsets(index / plan.inner(), off);
          const int64_t j = index % plan.inner();
          const int64_t ia = off[0] + j * plan.inner_stride(0), ib = off[1] + j * plan.inner_stride(1);
          gemm_reference<T>(false, false, m, n, k, pa + ia * m * k, k, pb + ib * k * n, n, po + index * m * n,
                            n);
        }
      };
      // Many products: one per task (each runs serially inside). Few: each splits its own rows.
      if (batches >= num_threads()) {
        parallel_for(0, batches,
                     std::max<int64_t>(1, gemm_detail::kTaskWork / std::max<int64_t>(1, m * n * k)),
                     multiply);
      } else {
        multiply(0, batches);
      }
    }
  });
}

// Gradient rules. For 2-D and batched operands dA = g B^T and dB = A^T g, summed over the batch
// dimensions broadcasting added; a 1-D operand is first made a row (A) or column (B) matrix.
GradValue transpose_last_two(GradientContext& ctx, GradValue v, int rank) {
  std::vector<int64_t> perm(static_cast<size_t>(rank));
  for (int a = 0; a < rank; ++a) perm[static_cast<size_t>(a)] = a;
  std::swap(perm[static_cast<size_t>(rank - 1)], perm[static_cast<size_t>(rank - 2)]);
  return ctx.op1("Transpose", {v}, {{"perm", perm}});
}

void matmul_gradient(GradientContext& ctx) {
  const int ra = ctx.input_info(0).shape.ndim(), rb = ctx.input_info(1).shape.ndim();
  const GradValue g = ctx.output_grad(0);
  if (ra == 1 && rb == 1) {  // a dot product
    ctx.set_input_grad(0, ctx.mul(g, ctx.input(1)));
    ctx.set_input_grad(1, ctx.mul(g, ctx.input(0)));
    return;
  }
  // The matrix forms: a (.., n, k), b (.., k, m), gm (.., n, m).
  GradValue a = ctx.input(0), b = ctx.input(1), gm = g;
  if (ra == 1) {
    a = ctx.op1("Unsqueeze", {a, ctx.ints({0})});
    gm = ctx.op1("Unsqueeze", {gm, ctx.ints({-2})});
  }
  if (rb == 1) {
    b = ctx.op1("Unsqueeze", {b, ctx.ints({1})});
    gm = ctx.op1("Unsqueeze", {gm, ctx.ints({-1})});
  }
  if (ctx.needs_input_grad(0)) {
    GradValue da = ctx.op1("MatMul", {gm, transpose_last_two(ctx, b, std::max(rb, 2))});  // (.., n, k)
    if (ra == 1) da = ctx.op1("Squeeze", {da, ctx.ints({-2})});
    ctx.set_input_grad(0, ctx.op1("ReduceSumLike", {da, ctx.input(0)}));
  }
  if (ctx.needs_input_grad(1)) {
    GradValue db = ctx.op1("MatMul", {transpose_last_two(ctx, a, std::max(ra, 2)), gm});  // (.., k, m)
    if (rb == 1) db = ctx.op1("Squeeze", {db, ctx.ints({-1})});
    ctx.set_input_grad(1, ctx.op1("ReduceSumLike", {db, ctx.input(1)}));
  }
}

// Y = alpha A' B' + beta C with A' = A or A^T (transA), B' likewise:
// dA' = alpha g B'^T, dB' = alpha A'^T g, dC = beta g summed to C's shape.
void gemm_gradient(GradientContext& ctx) {
  const bool trans_a = ctx.attrs().get_int("transA") == 1, trans_b = ctx.attrs().get_int("transB") == 1;
  const GradValue g = ctx.output_grad(0), a = ctx.input(0), b = ctx.input(1);
  const DType dtype = ctx.input_info(0).dtype;
  const GradValue alpha = ctx.scalar(ctx.attrs().get_float("alpha"), dtype);
  const auto t = [&ctx](GradValue v) { return ctx.op1("Transpose", {v}); };
  if (ctx.needs_input_grad(0)) {
    const GradValue da =
        trans_a ? ctx.op1("MatMul", {trans_b ? t(b) : b, t(g)}) : ctx.op1("MatMul", {g, trans_b ? b : t(b)});
    ctx.set_input_grad(0, ctx.mul(alpha, da));
  }
  if (ctx.needs_input_grad(1)) {
    const GradValue db =
        trans_b ? ctx.op1("MatMul", {t(g), trans_a ? t(a) : a}) : ctx.op1("MatMul", {trans_a ? a : t(a), g});
    ctx.set_input_grad(1, ctx.mul(alpha, db));
  }
  if (ctx.needs_input_grad(2)) {
    const GradValue beta = ctx.scalar(ctx.attrs().get_float("beta"), dtype);
    ctx.set_input_grad(2, ctx.op1("ReduceSumLike", {ctx.mul(beta, g), ctx.input(2)}));
  }
}

KILN_REGISTER_OP(MatMul)
    .doc("Matrix product with numpy semantics: batched, broadcasting batch dimensions.")
    .input("A")
    .input("B")
    .output("Y")
    .infer(infer_matmul)
    .kernel(matmul_kernel)
    .gradient(matmul_gradient);

// op(X) = X, or X transposed when the flag is set: (rows, cols) of op(X).
std::pair<int64_t, int64_t> op_dims(const Shape& s, bool transposed) {
  return transposed ? std::pair{s[1], s[0]} : std::pair{s[0], s[1]};
}

std::vector<TensorInfo> infer_gemm(InferContext& ctx) {
  require_dtype(ctx, 0, kMatrixDTypes);
  require_same_dtype(ctx, 0, 1);
  require_rank(ctx, 0, 2, 2);
  require_rank(ctx, 1, 2, 2);
  const bool trans_a = ctx.attrs().get_int("transA") != 0, trans_b = ctx.attrs().get_int("transB") != 0;
  const auto [m, k_a] = op_dims(ctx.shape(0), trans_a);
  const auto [k_b, n] = op_dims(ctx.shape(1), trans_b);
  KILN_CHECK(k_a == k_b || k_a < 0 || k_b < 0, ErrorCode::kShapeMismatch, ctx.input_label(1),
             ": expected K = ", k_a, " (from ", ctx.input_label(0), " of shape ", ctx.shape(0),
             ", transA = ", trans_a ? 1 : 0, ") along axis ", trans_b ? 1 : 0, " (transB = ", trans_b ? 1 : 0,
             "), got shape ", ctx.shape(1));
  const Shape out{m, n};
  if (ctx.has_input(2)) {
    require_same_dtype(ctx, 0, 2);
    const Shape& c = ctx.shape(2);
    // Unidirectional broadcast: C's axes, aligned right, are 1 or the product's.
    bool fits = c.ndim() <= 2;
    for (int i = 0; fits && i < c.ndim(); ++i) {
      const int64_t want = out[2 - c.ndim() + i];
      fits = c[i] == 1 || c[i] == want || c[i] < 0 || want < 0;
    }
    KILN_CHECK(fits, ErrorCode::kShapeMismatch, ctx.input_label(2),
               ": expected a shape that broadcasts to (M, N) = ", out, ", got ", c);
  }
  return {TensorInfo{ctx.dtype(0), out}};
}

void gemm_kernel(KernelContext& ctx) {
  const Tensor& a = ctx.input(0);
  const Tensor& b = ctx.input(1);
  Tensor& y = ctx.output(0);
  const bool trans_a = ctx.attrs.get_int("transA") != 0, trans_b = ctx.attrs.get_int("transB") != 0;
  const double alpha = ctx.attrs.get_float("alpha"), beta = ctx.attrs.get_float("beta");
  const int64_t m = y.shape()[0], n = y.shape()[1], k = a.shape()[trans_a ? 0 : 1];
  const bool has_c = ctx.has_input(2) && beta != 0;
  // C's element strides along the rows and columns of Y: 0 along an axis it broadcasts.
  int64_t c_row_stride = 0, c_col_stride = 0;
  if (has_c) {
    const Shape& cs = ctx.input(2).shape();
    if (cs.ndim() >= 1 && cs[cs.ndim() - 1] != 1) c_col_stride = 1;
    if (cs.ndim() == 2 && cs[0] != 1) c_row_stride = cs[1];
  }
  dispatch_dtype(a.dtype(), [&](auto tag) {
    using T = typename decltype(tag)::type;
    if constexpr (!std::is_same_v<T, bool>) {
      // Integers scale in double, as the ONNX reference does (alpha and beta are floats).
      using Scale = std::conditional_t<std::is_integral_v<T>, double, compute_t<T>>;
      const Scale scale_ab = static_cast<Scale>(alpha), scale_c = static_cast<Scale>(beta);
      const T* pc = has_c ? ctx.input(2).data<T>() : nullptr;
      T* py = y.data<T>();
      gemm_tiles<T>(trans_a, trans_b, m, n, k, a.data<T>(), a.shape()[1], b.data<T>(), b.shape()[1],
                    [&](int64_t i, int64_t j0, int64_t len, const compute_t<T>* acc) {
                      T* yrow = py + i * n + j0;
                      if (pc) {
                        const T* crow = pc + i * c_row_stride + j0 * c_col_stride;
                        for (int64_t j = 0; j < len; ++j)
                          yrow[j] = convert_value<T>(scale_ab * static_cast<Scale>(acc[j]) +
                                                     scale_c * static_cast<Scale>(crow[j * c_col_stride]));
                      } else {
                        for (int64_t j = 0; j < len; ++j)
                          yrow[j] = convert_value<T>(scale_ab * static_cast<Scale>(acc[j]));
                      }
                    });
    }
  });
}

KILN_REGISTER_OP(Gemm)
    .doc(
        "Y = alpha * op(A) * op(B) + beta * C for 2-D A and B, where op transposes when transA / "
        "transB is 1; the optional C broadcasts to (M, N).")
    .input("A")
    .input("B")
    .input("C", Arity::kOptional)
    .output("Y")
    .attr("alpha", AttrType::kFloat, 1.0)
    .attr("beta", AttrType::kFloat, 1.0)
    .attr("transA", AttrType::kInt, 0, require_flag)
    .attr("transB", AttrType::kInt, 0, require_flag)
    .infer(infer_gemm)
    .kernel(gemm_kernel)
    .gradient(gemm_gradient);

}  // namespace
}  // namespace kiln::ops
