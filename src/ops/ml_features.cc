// ONNX-ML's feature ops on numbers: Binarizer (1 above a threshold, else 0) and
// ArrayFeatureExtractor (pick entries of the last axis). The ONNX importer maps the ai.onnx.ml
// domain's nodes to them (frontends/onnx/domains.h).
#include <cstring>
#include <type_traits>

#include "core/thread_pool.h"
#include "infer_util.h"

namespace kiln::ops {
namespace {

inline constexpr DType kMlNumericDTypes[] = {DType::kFloat32, DType::kFloat64, DType::kInt64, DType::kInt32};

KILN_REGISTER_OP(Binarizer)
    .doc("ai.onnx.ml: 1 where X > threshold, else 0, in X's type.")
    .input("X")
    .output("Y")
    .attr("threshold", AttrType::kFloat, 0.0)
    .elementwise()
    .infer([](InferContext& ctx) {
      require_dtype(ctx, 0, kMlNumericDTypes);
      return std::vector<TensorInfo>{ctx.input(0)};
    })
    .kernel([](KernelContext& ctx) {
      const double threshold = ctx.attrs.get_float("threshold");
      dispatch_dtype(ctx.input(0).dtype(), [&](auto tag) {
        using T = typename decltype(tag)::type;
        if constexpr (!std::is_same_v<T, bool>) {
          const T* x = ctx.input(0).data<T>();
          T* y = ctx.output(0).data<T>();
          parallel_for(0, ctx.input(0).numel(), 1 << 15, [&](int64_t begin, int64_t end) {
            for (int64_t i = begin; i < end; ++i)
              y[i] = convert_value<T>(static_cast<double>(static_cast<compute_t<T>>(x[i])) > threshold ? 1.0
                                                                                                       : 0.0);
          });
        }
      });
    });

// [..., N] and k indices -> [..., k]; a 1-D X gives [1, k], as ONNX Runtime does.
std::vector<TensorInfo> infer_array_feature_extractor(InferContext& ctx) {
  require_dtype(ctx, 0, kMlNumericDTypes);
  const DType int64[] = {DType::kInt64};
  require_dtype(ctx, 1, int64);
  const Shape& x = ctx.shape(0);
  KILN_CHECK(x.ndim() >= 1, ErrorCode::kShapeMismatch, ctx.input_label(0),
             ": expected at least 1-D, got a scalar");
  const int64_t k = ctx.shape(1).is_known() ? ctx.shape(1).numel() : Shape::kUnknown;
  std::vector<int64_t> out(x.begin(), x.end() - 1);
  if (out.empty()) out.push_back(1);
  out.push_back(k);
  return {TensorInfo{ctx.dtype(0), Shape(out)}};
}

void array_feature_extractor_kernel(KernelContext& ctx) {
  const Tensor& x = ctx.input(0);
  const std::vector<int64_t> indices = ctx.input(1).to_vector<int64_t>();
  const int64_t n = x.shape()[x.ndim() - 1], rows = n == 0 ? 0 : x.numel() / n;
  const auto k = static_cast<int64_t>(indices.size());
  for (size_t j = 0; j < indices.size(); ++j)
    KILN_CHECK(indices[j] >= 0 && indices[j] < n, ErrorCode::kOutOfRange, "input 1 (Y): index ", indices[j],
               " at position ", j, " is outside the last axis of input 0 (X), ", n, " entries");
  const size_t item = x.itemsize();
  const auto* src = static_cast<const char*>(x.raw_data());
  auto* dst = static_cast<char*>(ctx.output(0).raw_data());
  for (int64_t r = 0; r < rows; ++r)
    for (int64_t j = 0; j < k; ++j)
      std::memcpy(dst + static_cast<size_t>(r * k + j) * item,
                  src + static_cast<size_t>(r * n + indices[static_cast<size_t>(j)]) * item, item);
}

KILN_REGISTER_OP(ArrayFeatureExtractor)
    .doc(
        "ai.onnx.ml: the entries of X's last axis at the indices Y: [..., N] -> [..., len(Y)] ([1, len(Y)] "
        "for 1-D X).")
    .input("X")
    .input("Y")
    .output("Z")
    .infer(infer_array_feature_extractor)
    .kernel(array_feature_extractor_kernel);

}  // namespace
}  // namespace kiln::ops
