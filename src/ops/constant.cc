// Ops that make tensors from shapes and scalars: ConstantOfShape, Range.
#include <cmath>
#include <cstring>

#include "elementwise.h"
#include "infer_util.h"

namespace kiln::ops {
namespace {

KILN_REGISTER_OP(ConstantOfShape)
    .doc(
        "A tensor of the shape given by `input` (1-D int64), filled with `value` (a one-element "
        "tensor; float32 zero when absent), in value's dtype.")
    .shape_input("input")
    .output("output")
    .optional_attr("value", AttrType::kTensor,
                   [](const AttrValue& v, const std::string& what) {
                     const Tensor& t = std::get<Tensor>(v.variant());
                     KILN_CHECK(t.numel() == 1, ErrorCode::kInvalidArgument, what,
                                ": expected one element, got shape ", t.shape());
                     KILN_CHECK(!is_string(t.dtype()), ErrorCode::kUnsupported, what,
                                ": a string fill value is not supported (the fill copies bytes)");
                   })
    .infer([](InferContext& ctx) {
      require_dtype(ctx, 0, kIndexDTypes);
      require_rank(ctx, 0, 1, 1);
      const auto dims = read_int_values(ctx.value(0), ctx.input_label(0));
      for (int64_t d : dims)
        KILN_CHECK(d >= 0, ErrorCode::kInvalidArgument, ctx.input_label(0), ": negative dimension ", d);
      const DType dtype =
          ctx.attrs().has("value") ? ctx.attrs().get_tensor("value").dtype() : DType::kFloat32;
      return std::vector<TensorInfo>{{dtype, Shape(dims)}};
    })
    .kernel([](KernelContext& ctx) {
      Tensor& out = ctx.output(0);
      const size_t item = out.itemsize();
      std::vector<char> value(item, 0);
      if (ctx.attrs.has("value"))
        std::memcpy(value.data(), ctx.attrs.get_tensor("value").contiguous().raw_data(), item);
      auto* o = static_cast<char*>(out.raw_data());
      parallel_for(0, out.numel(), kElementwiseGrain, [&](int64_t b, int64_t e) {
        for (int64_t i = b; i < e; ++i) std::memcpy(o + i * static_cast<int64_t>(item), value.data(), item);
      });
    });

inline constexpr DType kRangeDTypes[] = {DType::kFloat32, DType::kFloat64, DType::kInt32,
                                         DType::kInt64,   DType::kFloat16, DType::kBFloat16,
                                         DType::kInt8,    DType::kUInt8,   DType::kInt16};

KILN_REGISTER_OP(Range)
    .doc("The sequence start, start + delta, ... up to but excluding limit (scalars of one dtype).")
    .shape_input("start")
    .shape_input("limit")
    .shape_input("delta")
    .output("output")
    .infer([](InferContext& ctx) {
      for (int i = 0; i < 3; ++i) {
        require_dtype(ctx, i, kRangeDTypes);
        require_same_dtype(ctx, 0, i);
        KILN_CHECK(ctx.value(i).numel() == 1, ErrorCode::kShapeMismatch, ctx.input_label(i),
                   ": expected a scalar, got shape ", ctx.shape(i));
      }
      const double start = ctx.value(0).item(), limit = ctx.value(1).item(), delta = ctx.value(2).item();
      KILN_CHECK(delta != 0, ErrorCode::kInvalidArgument, ctx.input_label(2), ": delta must not be zero");
      const auto n = static_cast<int64_t>(std::max(0.0, std::ceil((limit - start) / delta)));
      return std::vector<TensorInfo>{{ctx.dtype(0), Shape{n}}};
    })
    .kernel([](KernelContext& ctx) {
      Tensor& out = ctx.output(0);
      dispatch_dtype(out.dtype(), [&](auto tag) {
        using T = typename decltype(tag)::type;
        if constexpr (!std::is_same_v<T, bool>) {
          using C = compute_t<T>;
          const C start = static_cast<C>(static_cast<compute_t<T>>(convert_value<T>(ctx.input(0).item())));
          const C delta = static_cast<C>(static_cast<compute_t<T>>(convert_value<T>(ctx.input(2).item())));
          T* o = out.data<T>();
          for (int64_t i = 0; i < out.numel(); ++i)
            o[i] = convert_value<T>(start + static_cast<C>(i) * delta);
        }
      });
    });

}  // namespace
}  // namespace kiln::ops
