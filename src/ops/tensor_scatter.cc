// TensorScatter (ONNX opset 24): a key/value cache update as a pure function. present_cache is
// past_cache with update's sequence written along `axis` from each batch entry's write index,
// wrapping around the cache in circular mode. Indices that run past the cache in linear mode are an
// error naming the batch entry.
#include <algorithm>
#include <cstring>

#include "attr_validators.h"
#include "infer_util.h"

namespace kiln::ops {
namespace {

std::vector<TensorInfo> infer_tensor_scatter(InferContext& ctx) {
  require_same_dtype(ctx, 0, 1);
  const Shape& past = ctx.shape(0);
  const Shape& update = ctx.shape(1);
  KILN_CHECK(past.ndim() >= 2, ErrorCode::kShapeMismatch, ctx.input_label(0),
             ": expected (batch_size, ..., max_sequence_length, ...), at least 2-D, got shape ", past);
  const int axis = normalize_axis(ctx.attrs().get_int("axis"), past.ndim(), "attribute 'axis'");
  KILN_CHECK(axis >= 1, ErrorCode::kInvalidArgument,
             "attribute 'axis': the sequence axis cannot be the batch axis 0");
  bool fits = update.ndim() == past.ndim();
  for (int a = 0; fits && a < past.ndim(); ++a) {
    if (past[a] < 0 || update[a] < 0) continue;
    fits = a == axis ? update[a] <= past[a] : update[a] == past[a];
  }
  KILN_CHECK(fits, ErrorCode::kShapeMismatch, ctx.input_label(1), ": expected ", ctx.input_label(0),
             "'s shape ", past, " with at most ", past[axis], " entries along axis ", axis, ", got ", update);
  if (ctx.has_input(2)) {
    const DType int64[] = {DType::kInt64};
    require_dtype(ctx, 2, int64);
    const Shape& indices = ctx.shape(2);
    KILN_CHECK(indices.ndim() == 1 && (indices[0] < 0 || past[0] < 0 || indices[0] == past[0]),
               ErrorCode::kShapeMismatch, ctx.input_label(2),
               ": expected one write index per batch entry, shape ", Shape{past[0]}, ", got ", indices);
  }
  return {ctx.input(0)};
}

void tensor_scatter_kernel(KernelContext& ctx) {
  const Tensor& past = ctx.input(0);
  const Tensor& update = ctx.input(1);
  Tensor& present = ctx.output(0);
  const Shape& shape = past.shape();
  const int axis = normalize_axis(ctx.attrs.get_int("axis"), shape.ndim(), "attribute 'axis'");
  const bool circular = ctx.attrs.get_string("mode") == "circular";
  const int64_t batch = shape[0], max_length = shape[axis], length = update.shape()[axis];
  int64_t per_batch = 1, inner = 1;  // prefixes per batch entry; elements after the axis
  for (int a = 1; a < axis; ++a) per_batch *= shape[a];
  for (int a = axis + 1; a < shape.ndim(); ++a) inner *= shape[a];
  const std::vector<int64_t> starts = ctx.has_input(2) ? ctx.input(2).to_vector<int64_t>()
                                                       : std::vector<int64_t>(static_cast<size_t>(batch), 0);
  present.copy_from(past);
  const size_t item = past.itemsize();
  const size_t row = static_cast<size_t>(inner) * item;
  auto* dst = static_cast<char*>(present.raw_data());
  const auto* src = static_cast<const char*>(update.raw_data());
  for (int64_t b = 0; b < batch; ++b) {
    const int64_t start = starts[static_cast<size_t>(b)];
    KILN_CHECK(start >= 0 && (circular || start + length <= max_length), ErrorCode::kOutOfRange,
               "input 2 (write_indices): batch entry ", b, " writes ", length, " entries from index ", start,
               ", outside the cache's ", max_length, circular ? "" : " (mode linear)");
    for (int64_t p = 0; p < per_batch; ++p) {
      const int64_t prefix = b * per_batch + p;
      for (int64_t s = 0; s < length; ++s) {
        const int64_t at = circular ? (start + s) % max_length : start + s;
        std::memcpy(dst + static_cast<size_t>((prefix * max_length + at) * inner) * item,
                    src + static_cast<size_t>((prefix * length + s) * inner) * item, row);
      }
    }
  }
}

KILN_REGISTER_OP(TensorScatter)
    .doc(
        "present_cache = past_cache with update written along axis from write_indices[b] (0 when absent) for "
        "each batch entry b; mode circular wraps the index around the cache's length.")
    .input("past_cache")
    .input("update")
    .input("write_indices", Arity::kOptional)
    .output("present_cache")
    .attr("axis", AttrType::kInt, -2)
    .attr("mode", AttrType::kString, std::string("linear"), one_of({"linear", "circular"}))
    .takes_storage_types()
    .infer(infer_tensor_scatter)
    .kernel(tensor_scatter_kernel);

}  // namespace
}  // namespace kiln::ops
