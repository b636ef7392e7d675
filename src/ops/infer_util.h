// Small building blocks for shape and dtype inference, shared by the op families.
#pragma once

#include <initializer_list>
#include <string>
#include <vector>

#include "op_schema.h"

namespace kiln::ops {

inline constexpr DType kFloatDTypes[] = {DType::kFloat32, DType::kFloat64, DType::kFloat16, DType::kBFloat16};
inline constexpr DType kNumericDTypes[] = {
    DType::kFloat32, DType::kFloat64, DType::kFloat16, DType::kBFloat16, DType::kInt8,  DType::kUInt8,
    DType::kInt16,   DType::kUInt16,  DType::kInt32,   DType::kUInt32,   DType::kInt64, DType::kUInt64};
inline constexpr DType kSignedDTypes[] = {DType::kFloat32, DType::kFloat64, DType::kFloat16, DType::kBFloat16,
                                          DType::kInt8,    DType::kInt16,   DType::kInt32,   DType::kInt64};
inline constexpr DType kIntegerDTypes[] = {DType::kInt8,  DType::kUInt8,  DType::kInt16, DType::kUInt16,
                                           DType::kInt32, DType::kUInt32, DType::kInt64, DType::kUInt64};
inline constexpr DType kIndexDTypes[] = {DType::kInt32, DType::kInt64};

// Throws kTypeMismatch naming the input unless its dtype is one of `allowed`.
template <size_t N>
void require_dtype(const InferContext& ctx, int i, const DType (&allowed)[N]) {
  const DType d = ctx.dtype(i);
  for (DType a : allowed)
    if (a == d) return;
  std::string names;
  for (DType a : allowed) names += (names.empty() ? "" : ", ") + std::string(dtype_name(a));
  raise(ErrorCode::kTypeMismatch, ctx.input_label(i), ": expected one of {", names, "}, got ", dtype_name(d));
}

// Throws kTypeMismatch unless inputs i and j have the same dtype.
void require_same_dtype(const InferContext& ctx, int i, int j);

// Throws kShapeMismatch unless input i has a rank in [min_rank, max_rank].
void require_rank(const InferContext& ctx, int i, int min_rank, int max_rank);

// Output 0 has input 0's dtype and shape.
std::vector<TensorInfo> infer_same_as_input(InferContext& ctx);

// Reads an int32 or int64 tensor (shape inputs, axes, pads ...) as int64 values.
std::vector<int64_t> read_int_values(const Tensor& t, const std::string& what);

// Normalizes a list of axes against `rank`: maps negatives, rejects duplicates. Errors name `what`.
std::vector<int> normalize_axes(const std::vector<int64_t>& axes, int rank, const std::string& what);

// The [start, end) range of dims Shape reports for its `start` and `end` attributes: negatives
// count from the back, both clamp to [0, rank] (shape_info.cc).
std::pair<int, int> shape_range(const Attrs& attrs, int rank);

// An attribute holding an ONNX TensorProto.DataType code (Cast's `to`, EyeLike's `dtype`): a
// type Kiln lacks is kUnsupported, an unknown code kInvalidArgument (dtype_from_onnx's error).
inline void validate_onnx_dtype(const AttrValue& v, const std::string& what) {
  try {
    dtype_from_onnx(std::get<int64_t>(v.variant()));
  } catch (const Error& e) {
    raise(ErrorCode::kUnsupported, what, ": ", e.what());
  }
}

// The same, for ops that compute in the type (EyeLike's `dtype`): storage types and strings are
// kUnsupported.
inline void validate_compute_dtype(const AttrValue& v, const std::string& what) {
  validate_onnx_dtype(v, what);
  const DType dtype = dtype_from_onnx(std::get<int64_t>(v.variant()));
  KILN_CHECK(!is_moved_only(dtype) && !is_string(dtype), ErrorCode::kUnsupported, what, ": ",
             dtype_name(dtype),
             is_string(dtype)    ? " holds text, which this op does not compute in"
             : is_complex(dtype) ? " is a complex type, which this op does not compute in"
                                 : " is a storage type, which this op does not compute in");
}

}  // namespace kiln::ops
