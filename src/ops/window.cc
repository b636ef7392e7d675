// Window functions (ONNX opset 17): HannWindow, HammingWindow and BlackmanWindow, the generalized
// cosine windows a0 - a1 cos(2 pi n / N) + a2 cos(4 pi n / N) for n in [0, size), where N is `size`
// for a periodic window (one period of an FFT frame) and size - 1 for a symmetric one. Values are
// computed in double and cast to output_datatype (integer types truncate, as ONNX's Cast does).
#include <cmath>
#include <numbers>

#include "attr_validators.h"
#include "core/thread_pool.h"
#include "infer_util.h"

namespace kiln::ops {
namespace {

// Elements per parallel task: large enough that scheduling is noise next to two cosines each.
constexpr int64_t kWindowGrain = 1 << 13;

struct CosineWindow {
  double a0, a1, a2;
};

constexpr CosineWindow kHann{0.5, 0.5, 0.0};
constexpr CosineWindow kHamming{25.0 / 46.0, 21.0 / 46.0, 0.0};
constexpr CosineWindow kBlackman{0.42, 0.5, 0.08};

inline constexpr DType kSizeDTypes[] = {DType::kInt32, DType::kInt64};

std::vector<TensorInfo> infer_window(InferContext& ctx) {
  require_dtype(ctx, 0, kSizeDTypes);
  const Shape& s = ctx.shape(0);
  KILN_CHECK(s.ndim() <= 1 && (s.numel() == 1 || !s.is_known()), ErrorCode::kShapeMismatch,
             ctx.input_label(0), ": expected a scalar, got shape ", s);
  const auto size = read_int_values(ctx.value(0), ctx.input_label(0));
  KILN_CHECK(size.size() == 1, ErrorCode::kShapeMismatch, ctx.input_label(0), ": expected one value, got ",
             size.size());
  KILN_CHECK(size[0] >= 0, ErrorCode::kInvalidArgument, ctx.input_label(0), ": expected a size >= 0, got ",
             size[0]);
  return {TensorInfo{dtype_from_onnx(ctx.attrs().get_int("output_datatype")), Shape{size[0]}}};
}

void window_kernel(KernelContext& ctx, const CosineWindow& w) {
  Tensor& out = ctx.output(0);
  const int64_t size = out.numel();
  // A symmetric window of one point has no period; it is the window's peak, 1 (as in PyTorch
  // and SciPy), where the formula would divide by zero.
  const int64_t period = ctx.attrs.get_int("periodic") == 1 ? size : size - 1;
  dispatch_dtype(out.dtype(), [&](auto tag) {
    using T = typename decltype(tag)::type;
    T* o = out.data<T>();
    parallel_for(0, size, kWindowGrain, [&](int64_t begin, int64_t end) {
      for (int64_t n = begin; n < end; ++n) {
        if (period == 0) {
          o[n] = convert_value<T>(1.0);
          continue;
        }
        const double angle = 2 * std::numbers::pi * static_cast<double>(n) / static_cast<double>(period);
        o[n] = convert_value<T>(w.a0 - w.a1 * std::cos(angle) + w.a2 * std::cos(2 * angle));
      }
    });
  });
}

KILN_REGISTER_OP(HannWindow)
    .doc("The Hann window 0.5 - 0.5 cos(2 pi n / N), n in [0, size).")
    .shape_input("size")
    .output("output")
    .attr("periodic", AttrType::kInt, 1, require_flag)
    .attr("output_datatype", AttrType::kInt, 1, validate_output_datatype)
    .infer(infer_window)
    .kernel([](KernelContext& ctx) { window_kernel(ctx, kHann); });

KILN_REGISTER_OP(HammingWindow)
    .doc("The Hamming window 25/46 - 21/46 cos(2 pi n / N), n in [0, size).")
    .shape_input("size")
    .output("output")
    .attr("periodic", AttrType::kInt, 1, require_flag)
    .attr("output_datatype", AttrType::kInt, 1, validate_output_datatype)
    .infer(infer_window)
    .kernel([](KernelContext& ctx) { window_kernel(ctx, kHamming); });

KILN_REGISTER_OP(BlackmanWindow)
    .doc("The Blackman window 0.42 - 0.5 cos(2 pi n / N) + 0.08 cos(4 pi n / N), n in [0, size).")
    .shape_input("size")
    .output("output")
    .attr("periodic", AttrType::kInt, 1, require_flag)
    .attr("output_datatype", AttrType::kInt, 1, validate_output_datatype)
    .infer(infer_window)
    .kernel([](KernelContext& ctx) { window_kernel(ctx, kBlackman); });

}  // namespace
}  // namespace kiln::ops
