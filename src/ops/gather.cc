// Indexed reads and writes: Gather, GatherElements, GatherND, ScatterElements, ScatterND.
// Indices (int32 or int64) may be negative, counting from the back of their axis; an index outside
// [-dim, dim) is an error the kernel raises (kOutOfRange) naming the index and the bound. Gathers
// copy bytes and so serve every dtype; scatters with a reduction compute in compute_t.
#include <cmath>
#include <optional>
#include <type_traits>

#include "gradient.h"
#include "infer_util.h"
#include "shape_ops_util.h"

namespace kiln::ops {
namespace {

constexpr char kIndicesLabel[] = "input 1 (indices)";

const char* bytes(const Tensor& t) {
  return static_cast<const char*>(t.raw_data());
}
char* bytes(Tensor& t) {
  return static_cast<char*>(t.raw_data());
}

// Elements in the dims [from, to) of `shape`.
int64_t product(const Shape& shape, int from, int to) {
  int64_t n = 1;
  for (int a = from; a < to; ++a) n *= shape[a];
  return n;
}

// The offset, under `strides`, of the position whose row-major index over the dims [from, to) of
// `shape` is `flat`.
int64_t offset_of(int64_t flat, const Shape& shape, int from, int to, const std::vector<int64_t>& strides) {
  int64_t off = 0;
  for (int a = to - 1; a >= from; --a) {
    off += (flat % shape[a]) * strides[static_cast<size_t>(a)];
    flat /= shape[a];
  }
  return off;
}

// Every index checked against `dim` and mapped into [0, dim).
std::vector<int64_t> normalized_indices(const Tensor& indices, int64_t dim, int axis) {
  const IndexReader index(indices);
  std::vector<int64_t> out(static_cast<size_t>(indices.numel()));
  for (int64_t k = 0; k < indices.numel(); ++k)
    out[static_cast<size_t>(k)] = checked_index(index[k], dim, kIndicesLabel, axis);
  return out;
}

void require_rank_at_least_1(const InferContext& ctx, int i) {
  KILN_CHECK(ctx.shape(i).ndim() >= 1, ErrorCode::kShapeMismatch, ctx.input_label(i),
             ": expected rank >= 1, got a scalar");
}

// ---- Gather ----------------------------------------------------------------------------------

std::vector<TensorInfo> infer_gather(InferContext& ctx) {
  require_dtype(ctx, 1, kIndexDTypes);
  require_rank_at_least_1(ctx, 0);
  const Shape& data = ctx.shape(0);
  const int axis = normalize_axis(ctx.attrs().get_int("axis"), data.ndim(), "attribute 'axis'");
  Shape out;
  for (int a = 0; a < axis; ++a) out.push_back(data[a]);
  for (int64_t d : ctx.shape(1)) out.push_back(d);
  for (int a = axis + 1; a < data.ndim(); ++a) out.push_back(data[a]);
  return {TensorInfo{ctx.dtype(0), out}};
}

void gather_kernel(KernelContext& ctx) {
  const Tensor& data = ctx.input(0);
  Tensor& out = ctx.output(0);
  const int axis = normalize_axis(ctx.attrs.get_int("axis"), data.ndim(), "axis");
  const int64_t dim = data.shape()[axis];
  const int64_t outer = product(data.shape(), 0, axis), inner = product(data.shape(), axis + 1, data.ndim());
  const auto idx = normalized_indices(ctx.input(1), dim, axis);
  if (out.numel() == 0) return;
  const auto n = static_cast<int64_t>(idx.size());
  const auto row_bytes = inner * static_cast<int64_t>(data.itemsize());
  const char* src = bytes(data);
  char* dst = bytes(out);
  parallel_for(0, outer * n, std::max<int64_t>(1, kCopyGrain / inner), [&](int64_t b, int64_t e) {
    for (int64_t r = b, o = b / n, j = b % n; r < e; ++r) {
      const char* from = src + (o * dim + idx[static_cast<size_t>(j)]) * row_bytes;
      if (inner == 1) {
        copy_element(dst + r * row_bytes, from, data.itemsize());
      } else {
        std::memcpy(dst + r * row_bytes, from, static_cast<size_t>(row_bytes));
      }
      if (++j == n) {
        j = 0;
        ++o;
      }
    }
  });
}

// GatherGrad: zeros of `like`'s shape (Gather's data) plus each row of dY added at the row it
// was gathered from; rows gathered twice get both.
void gather_grad_kernel(KernelContext& ctx) {
  const Tensor& dy = ctx.input(0);
  Tensor& dx = ctx.output(0);
  const int axis = normalize_axis(ctx.attrs.get_int("axis"), dx.ndim(), "axis");
  const int64_t dim = dx.shape()[axis];
  const int64_t outer = product(dx.shape(), 0, axis), inner = product(dx.shape(), axis + 1, dx.ndim());
  const auto idx = normalized_indices(ctx.input(1), dim, axis);
  const auto n = static_cast<int64_t>(idx.size());
  dispatch_dtype(dx.dtype(), [&](auto tag) {
    using T = typename decltype(tag)::type;
    if constexpr (std::is_floating_point_v<compute_t<T>>) {
      std::vector<double> sums(static_cast<size_t>(dx.numel()), 0.0);
      const T* src = dy.data<T>();
      for (int64_t o = 0; o < outer; ++o)
        for (int64_t j = 0; j < n; ++j) {
          const T* row = src + (o * n + j) * inner;
          double* to = sums.data() + (o * dim + idx[static_cast<size_t>(j)]) * inner;
          for (int64_t k = 0; k < inner; ++k) to[k] += static_cast<double>(static_cast<compute_t<T>>(row[k]));
        }
      T* out = dx.data<T>();
      for (size_t i = 0; i < sums.size(); ++i) out[i] = convert_value<T>(sums[i]);
    }
  });
}

void gather_gradient(GradientContext& ctx) {
  ctx.set_input_grad(0, ctx.op1("GatherGrad", {ctx.output_grad(0), ctx.input(1), ctx.input(0)},
                                {{"axis", ctx.attrs().get_int("axis")}}));
}

// GatherElements reads data[..., index, ...] once per output element: its gradient scatter-adds.
void gather_elements_gradient(GradientContext& ctx) {
  ctx.set_input_grad(0,
                     ctx.op1("ScatterElements", {ctx.zeros_like_input(0), ctx.input(1), ctx.output_grad(0)},
                             {{"axis", ctx.attrs().get_int("axis")}, {"reduction", "add"}}));
}

KILN_REGISTER_OP(Gather)
    .moves_strings()
    .takes_storage_types()
    .doc(
        "Takes the entries of `data` along `axis` at `indices`: the output shape is "
        "data.shape[:axis] + indices.shape + data.shape[axis+1:].")
    .input("data")
    .input("indices")
    .output("output")
    .attr("axis", AttrType::kInt, 0)
    .infer(infer_gather)
    .kernel(gather_kernel)
    .gradient(gather_gradient);

// ---- GatherElements / ScatterElements ----------------------------------------------------------

// Shared shape rules: indices of data's rank, no larger than data off the axis; returns the axis.
int check_elements_shapes(const InferContext& ctx) {
  require_dtype(ctx, 1, kIndexDTypes);
  require_rank_at_least_1(ctx, 0);
  const Shape& data = ctx.shape(0);
  const Shape& indices = ctx.shape(1);
  const int axis = normalize_axis(ctx.attrs().get_int("axis"), data.ndim(), "attribute 'axis'");
  KILN_CHECK(indices.ndim() == data.ndim(), ErrorCode::kShapeMismatch, ctx.input_label(1), ": expected rank ",
             data.ndim(), " (the rank of ", ctx.input_label(0), ", shape ", data, "), got shape ", indices);
  for (int a = 0; a < data.ndim(); ++a)
    KILN_CHECK(a == axis || indices[a] <= data[a] || indices[a] < 0 || data[a] < 0, ErrorCode::kShapeMismatch,
               ctx.input_label(1), ": shape ", indices, " exceeds ", ctx.input_label(0), " shape ", data,
               " in dimension ", a, " (", indices[a], " > ", data[a], ")");
  return axis;
}

// How GatherElements and ScatterElements walk `indices` (shape I): as (outer, J, inner) with J the
// axis. Positions off the axis are the same in data, so outer and inner map to data offsets.
struct ElementsWalk {
  int64_t outer = 1, axis_len = 1, inner = 1;
  int64_t axis_stride = 1;            // data stride of the axis
  std::vector<int64_t> inner_offset;  // data offset of each inner position
  Shape indices_shape;
  std::vector<int64_t> data_strides;
  int axis = 0;

  ElementsWalk(const Shape& data, const Shape& indices, int axis_)
      : indices_shape(indices), data_strides(contiguous_strides(data)), axis(axis_) {
    outer = product(indices, 0, axis);
    axis_len = indices[axis];
    inner = product(indices, axis + 1, indices.ndim());
    axis_stride = data_strides[static_cast<size_t>(axis)];
    inner_offset.resize(static_cast<size_t>(inner));
    for (int64_t i = 0; i < inner; ++i)
      inner_offset[static_cast<size_t>(i)] = offset_of(i, indices, axis + 1, indices.ndim(), data_strides);
  }
  int64_t outer_offset(int64_t o) const { return offset_of(o, indices_shape, 0, axis, data_strides); }
};

std::vector<TensorInfo> infer_gather_elements(InferContext& ctx) {
  check_elements_shapes(ctx);
  return {TensorInfo{ctx.dtype(0), ctx.shape(1)}};
}

void gather_elements_kernel(KernelContext& ctx) {
  const Tensor& data = ctx.input(0);
  Tensor& out = ctx.output(0);
  const int axis = normalize_axis(ctx.attrs.get_int("axis"), data.ndim(), "axis");
  const auto idx = normalized_indices(ctx.input(1), data.shape()[axis], axis);
  if (out.numel() == 0) return;
  const ElementsWalk walk(data.shape(), ctx.input(1).shape(), axis);
  const size_t item = data.itemsize();
  const auto item_bytes = static_cast<int64_t>(item);
  const char* src = bytes(data);
  char* dst = bytes(out);
  parallel_for(0, walk.outer * walk.axis_len, std::max<int64_t>(1, kCopyGrain / walk.inner),
               [&](int64_t b, int64_t e) {
                 for (int64_t row = b; row < e; ++row) {
                   const int64_t base = walk.outer_offset(row / walk.axis_len);
                   for (int64_t i = 0; i < walk.inner; ++i) {
                     const int64_t k = row * walk.inner + i;
                     const int64_t from = base + idx[static_cast<size_t>(k)] * walk.axis_stride +
                                          walk.inner_offset[static_cast<size_t>(i)];
                     copy_element(dst + k * item_bytes, src + from * item_bytes, item);
                   }
                 }
               });
}

KILN_REGISTER_OP(GatherElements)
    .moves_strings()
    .takes_storage_types()
    .doc(
        "output[i][j][k] = data[i][indices[i][j][k]][k] for axis 1 (likewise for other axes); the "
        "output has the shape of `indices`.")
    .input("data")
    .input("indices")
    .output("output")
    .attr("axis", AttrType::kInt, 0)
    .infer(infer_gather_elements)
    .kernel(gather_elements_kernel)
    .gradient(gather_elements_gradient);

// ---- Scatter reductions ------------------------------------------------------------------------

enum class Reduction { kNone, kAdd, kMul, kMax, kMin };

void validate_reduction(const AttrValue& v, const std::string& what) {
  const auto& s = std::get<std::string>(v.variant());
  KILN_CHECK(s == "none" || s == "add" || s == "mul" || s == "max" || s == "min", ErrorCode::kInvalidArgument,
             what, ": expected one of {none, add, mul, max, min}, got '", s, "'");
}

Reduction reduction_of(const Attrs& attrs) {
  const auto& s = attrs.get_string("reduction");
  if (s == "add") return Reduction::kAdd;
  if (s == "mul") return Reduction::kMul;
  if (s == "max") return Reduction::kMax;
  if (s == "min") return Reduction::kMin;
  return Reduction::kNone;
}

// Only reduction none (a copy) serves the types Kiln moves but does not compute in.
void require_copy_for_moved_only(const InferContext& ctx) {
  KILN_CHECK(reduction_of(ctx.attrs()) == Reduction::kNone || !is_moved_only(ctx.dtype(0)),
             ErrorCode::kUnsupported, "attribute 'reduction' ", ctx.attrs().get_string("reduction"), ": ",
             ctx.input_label(0), " is ", dtype_name(ctx.dtype(0)),
             ", which Kiln moves but does not compute in; only reduction none (a copy) serves it");
}

// a (op) b in T. Integers wrap like numpy's; max and min propagate NaN like np.maximum.
template <class T>
T combine(T a, T b, Reduction r) {
  if constexpr (std::is_same_v<T, bool>) {
    return (r == Reduction::kAdd || r == Reduction::kMax) ? (a || b) : (a && b);
  } else if constexpr (std::is_integral_v<T>) {
    using U = std::make_unsigned_t<T>;
    switch (r) {
      case Reduction::kAdd:
        return static_cast<T>(static_cast<U>(static_cast<U>(a) + static_cast<U>(b)));
      case Reduction::kMul:
        return static_cast<T>(static_cast<U>(static_cast<U>(a) * static_cast<U>(b)));
      case Reduction::kMax:
        return std::max(a, b);
      default:
        return std::min(a, b);
    }
  } else {
    using C = compute_t<T>;
    const C x = static_cast<C>(a), y = static_cast<C>(b);
    switch (r) {
      case Reduction::kAdd:
        return convert_value<T>(x + y);
      case Reduction::kMul:
        return convert_value<T>(x * y);
      case Reduction::kMax:
        return std::isnan(x) ? a : (std::isnan(y) || y > x) ? b : a;
      default:
        return std::isnan(x) ? a : (std::isnan(y) || y < x) ? b : a;
    }
  }
}

// Calls fn(apply) where apply(dst, src, n) writes n contiguous updates into dst: a copy for
// reduction none, else a typed combine.
template <class F>
void with_scatter_apply(DType dtype, Reduction r, F&& fn) {
  if (r == Reduction::kNone) {
    const size_t item = dtype_size(dtype);
    fn([item](char* dst, const char* src, int64_t n) { copy_run(dst, 1, src, 1, n, item); });
    return;
  }
  dispatch_dtype(dtype, [&](auto tag) {
    using T = typename decltype(tag)::type;
    fn([r](char* dst, const char* src, int64_t n) {
      T* d = reinterpret_cast<T*>(dst);
      const T* s = reinterpret_cast<const T*>(src);
      for (int64_t i = 0; i < n; ++i) d[i] = combine(d[i], s[i], r);
    });
  });
}

void copy_data_to_output(KernelContext& ctx) {
  const Tensor& data = ctx.input(0);
  if (data.numel() == 0) return;
  copy_contiguous(bytes(ctx.output(0)), bytes(data), data.numel(), data.itemsize());
}

// ---- ScatterElements ---------------------------------------------------------------------------

std::vector<TensorInfo> infer_scatter_elements(InferContext& ctx) {
  check_elements_shapes(ctx);
  require_same_dtype(ctx, 0, 2);
  require_copy_for_moved_only(ctx);
  KILN_CHECK(ctx.shape(2) == ctx.shape(1) || !ctx.shape(2).is_known() || !ctx.shape(1).is_known(),
             ErrorCode::kShapeMismatch, ctx.input_label(2), ": expected shape ", ctx.shape(1),
             " (the shape of ", ctx.input_label(1), "), got ", ctx.shape(2));
  return {ctx.input(0)};
}

void scatter_elements_kernel(KernelContext& ctx) {
  const Tensor& data = ctx.input(0);
  const Tensor& updates = ctx.input(2);
  Tensor& out = ctx.output(0);
  const int axis = normalize_axis(ctx.attrs.get_int("axis"), data.ndim(), "axis");
  const auto idx = normalized_indices(ctx.input(1), data.shape()[axis], axis);
  copy_data_to_output(ctx);
  if (updates.numel() == 0) return;
  const ElementsWalk walk(data.shape(), updates.shape(), axis);
  const auto item = static_cast<int64_t>(data.itemsize());
  // Updates at different (outer, inner) positions land on different elements, so those positions
  // split across the pool; along the axis they are applied in order, as the reference does.
  const int64_t chunk = std::min(walk.inner, kCopyGrain), chunks = (walk.inner + chunk - 1) / chunk;
  with_scatter_apply(data.dtype(), reduction_of(ctx.attrs), [&](auto apply) {
    const char* src = bytes(updates);
    char* dst = bytes(out);
    const int64_t grain = std::max<int64_t>(1, kCopyGrain / (chunk * walk.axis_len));
    parallel_for(0, walk.outer * chunks, grain, [&](int64_t b, int64_t e) {
      for (int64_t t = b; t < e; ++t) {
        const int64_t o = t / chunks, i0 = (t % chunks) * chunk, i1 = std::min(i0 + chunk, walk.inner);
        const int64_t base = walk.outer_offset(o);
        for (int64_t j = 0; j < walk.axis_len; ++j) {
          for (int64_t i = i0; i < i1; ++i) {
            const int64_t k = (o * walk.axis_len + j) * walk.inner + i;
            const int64_t to = base + idx[static_cast<size_t>(k)] * walk.axis_stride +
                               walk.inner_offset[static_cast<size_t>(i)];
            apply(dst + to * item, src + k * item, 1);
          }
        }
      }
    });
  });
}

KILN_REGISTER_OP(ScatterElements)
    .takes_storage_types()
    .doc(
        "A copy of `data` with output[i][indices[i][j][k]][k] = updates[i][j][k] for axis 1 (likewise "
        "for other axes), or combined with it by `reduction` (add, mul, max, min).")
    .input("data")
    .input("indices")
    .input("updates")
    .output("output")
    .attr("axis", AttrType::kInt, 0)
    .attr("reduction", AttrType::kString, "none", validate_reduction)
    .infer(infer_scatter_elements)
    .kernel(scatter_elements_kernel);

// ---- GatherND / ScatterND ----------------------------------------------------------------------

// The length of the index tuples (the last dimension of indices), which must be known.
int64_t tuple_length(const InferContext& ctx) {
  const Shape& indices = ctx.shape(1);
  const int64_t k = indices[indices.ndim() - 1];
  KILN_CHECK(k >= 0, ErrorCode::kUnsupported, ctx.input_label(1),
             ": the last dimension (the index tuple length) must be known, got shape ", indices);
  return k;
}

// Data offsets (in elements) of the slices the index tuples select. Tuple t of batch bi starts at
// element (bi * tuples + t) * k of indices and indexes data axes [batch_dims, batch_dims + k).
std::vector<int64_t> tuple_offsets(const Tensor& indices, const Shape& data, int batch_dims) {
  const int64_t k = indices.shape()[indices.ndim() - 1];
  const int64_t batches = product(data, 0, batch_dims);
  const int64_t tuples = k == 0 ? 0 : indices.numel() / k / std::max<int64_t>(batches, 1);
  const auto strides = contiguous_strides(data);
  const int64_t batch_stride = product(data, batch_dims, data.ndim());
  std::vector<int64_t> offsets(static_cast<size_t>(batches * tuples));
  const IndexReader index(indices);
  for (int64_t bi = 0; bi < batches; ++bi) {
    for (int64_t t = 0; t < tuples; ++t) {
      const int64_t first = (bi * tuples + t) * k;
      int64_t off = bi * batch_stride;
      for (int j = 0; j < k; ++j) {
        const int a = batch_dims + j;
        off += checked_index(index[first + j], data[a], kIndicesLabel, a) * strides[static_cast<size_t>(a)];
      }
      offsets[static_cast<size_t>(bi * tuples + t)] = off;
    }
  }
  return offsets;
}

std::vector<TensorInfo> infer_gather_nd(InferContext& ctx) {
  require_dtype(ctx, 1, kIndexDTypes);
  require_rank_at_least_1(ctx, 0);
  require_rank_at_least_1(ctx, 1);
  const Shape& data = ctx.shape(0);
  const Shape& indices = ctx.shape(1);
  const int64_t b = ctx.attrs().get_int("batch_dims");
  KILN_CHECK(b < std::min(data.ndim(), indices.ndim()), ErrorCode::kInvalidArgument,
             "attribute 'batch_dims': ", b, " must be less than the ranks of ", ctx.input_label(0),
             " (shape ", data, ") and ", ctx.input_label(1), " (shape ", indices, ")");
  const int batch_dims = static_cast<int>(b);
  for (int a = 0; a < batch_dims; ++a)
    KILN_CHECK(indices[a] == data[a] || indices[a] < 0 || data[a] < 0, ErrorCode::kShapeMismatch,
               ctx.input_label(1), ": batch dimension ", a, " is ", indices[a], ", expected ", data[a],
               " (as in ", ctx.input_label(0), ", shape ", data, ")");
  const int64_t k = tuple_length(ctx);
  KILN_CHECK(k >= 1 && k <= data.ndim() - batch_dims, ErrorCode::kShapeMismatch, ctx.input_label(1),
             ": the last dimension (index tuple length) must be in [1, ", data.ndim() - batch_dims, "] for ",
             ctx.input_label(0), " of shape ", data, " and batch_dims ", batch_dims, ", got ", k);
  Shape out(std::vector<int64_t>(indices.begin(), indices.end() - 1));
  for (int a = batch_dims + static_cast<int>(k); a < data.ndim(); ++a) out.push_back(data[a]);
  return {TensorInfo{ctx.dtype(0), out}};
}

void gather_nd_kernel(KernelContext& ctx) {
  const Tensor& data = ctx.input(0);
  const Tensor& indices = ctx.input(1);
  Tensor& out = ctx.output(0);
  const int batch_dims = static_cast<int>(ctx.attrs.get_int("batch_dims"));
  const int k = static_cast<int>(indices.shape()[indices.ndim() - 1]);
  const auto offsets = tuple_offsets(indices, data.shape(), batch_dims);
  if (out.numel() == 0) return;
  const int64_t slice = product(data.shape(), batch_dims + k, data.ndim());
  const auto item = static_cast<int64_t>(data.itemsize());
  const char* src = bytes(data);
  char* dst = bytes(out);
  parallel_for(0, static_cast<int64_t>(offsets.size()), std::max<int64_t>(1, kCopyGrain / slice),
               [&](int64_t b, int64_t e) {
                 for (int64_t t = b; t < e; ++t)
                   copy_run(dst + t * slice * item, 1, src + offsets[static_cast<size_t>(t)] * item, 1, slice,
                            data.itemsize());
               });
}

// GatherND reads each addressed slice once per index tuple, and tuples may repeat: its gradient
// scatter-adds. ScatterND has no batch dimensions, so with batch_dims b > 0 the b leading
// dimensions are merged into one (of size B) and each tuple is prefixed with its position along
// it, which addresses the same slice of the merged data.
void gather_nd_gradient(GradientContext& ctx) {
  const int64_t b = ctx.attrs().get_int("batch_dims");
  const GradValue grad = ctx.output_grad(0);
  if (b == 0) {
    ctx.set_input_grad(
        0, ctx.op1("ScatterND", {ctx.zeros_like_input(0), ctx.input(1), grad}, {{"reduction", "add"}}));
    return;
  }
  const Shape& indices_shape = ctx.input_info(1).shape;
  const int64_t k = indices_shape[indices_shape.ndim() - 1];  // known: inference requires it
  const auto shape_of = [&](GradValue v, int64_t start, std::optional<int64_t> end = std::nullopt) {
    AttrMap attrs{{"start", start}};
    if (end) attrs.emplace("end", *end);
    return ctx.op1("Shape", {v}, attrs);
  };
  const auto concat = [&](const std::vector<GradValue>& parts, int64_t axis) {
    return ctx.op1("Concat", parts, {{"axis", axis}});
  };
  // Zeros of shape (B, data.shape[b:]) and the tuples as (B, M, k) int64.
  const GradValue zeros =
      ctx.op1("Reshape", {ctx.zeros_like_input(0), concat({ctx.ints({-1}), shape_of(ctx.input(0), b)}, 0)});
  const GradValue batch = shape_of(zeros, 0, 1);
  const GradValue tuples =
      ctx.op1("Reshape", {ctx.op1("Cast", {ctx.input(1)}, {{"to", dtype_to_onnx(DType::kInt64)}}),
                          concat({batch, ctx.ints({-1, k})}, 0)});
  const GradValue batch_and_tuple = shape_of(tuples, 0, 2);
  // Each tuple's batch position, (B, M, 1), in front of the tuple.
  const GradValue positions =
      ctx.op1("Range", {ctx.scalar(0, DType::kInt64), ctx.op1("Reshape", {batch, ctx.ints({})}),
                        ctx.scalar(1, DType::kInt64)});
  const GradValue expanded = ctx.op1("Expand", {ctx.op1("Reshape", {positions, ctx.ints({-1, 1, 1})}),
                                                concat({batch_and_tuple, ctx.ints({1})}, 0)});
  const GradValue merged_tuples = concat({expanded, tuples}, 2);
  // The output gradient as (B, M, slice dims).
  const GradValue slices =
      ctx.op1("Reshape", {grad, concat({batch_and_tuple, shape_of(ctx.input(0), b + k)}, 0)});
  const GradValue scattered = ctx.op1("ScatterND", {zeros, merged_tuples, slices}, {{"reduction", "add"}});
  ctx.set_input_grad(0, ctx.op1("Reshape", {scattered, ctx.shape_of_input(0)}));
}

KILN_REGISTER_OP(GatherND)
    .moves_strings()
    .takes_storage_types()
    .doc(
        "Gathers the slices of `data` addressed by the index tuples in the last dimension of "
        "`indices`, after `batch_dims` leading dimensions shared by both.")
    .input("data")
    .input("indices")
    .output("output")
    .attr("batch_dims", AttrType::kInt, 0,
          [](const AttrValue& v, const std::string& what) {
            const int64_t b = std::get<int64_t>(v.variant());
            KILN_CHECK(b >= 0, ErrorCode::kInvalidArgument, what, ": expected >= 0, got ", b);
          })
    .infer(infer_gather_nd)
    .kernel(gather_nd_kernel)
    .gradient(gather_nd_gradient);

std::vector<TensorInfo> infer_scatter_nd(InferContext& ctx) {
  require_dtype(ctx, 1, kIndexDTypes);
  require_same_dtype(ctx, 0, 2);
  require_copy_for_moved_only(ctx);
  require_rank_at_least_1(ctx, 0);
  require_rank_at_least_1(ctx, 1);
  const Shape& data = ctx.shape(0);
  const Shape& indices = ctx.shape(1);
  const int64_t k = tuple_length(ctx);
  KILN_CHECK(k >= 1 && k <= data.ndim(), ErrorCode::kShapeMismatch, ctx.input_label(1),
             ": the last dimension (index tuple length) must be in [1, ", data.ndim(), "] for ",
             ctx.input_label(0), " of shape ", data, ", got ", k);
  Shape expected(std::vector<int64_t>(indices.begin(), indices.end() - 1));
  for (int a = static_cast<int>(k); a < data.ndim(); ++a) expected.push_back(data[a]);
  const Shape& updates = ctx.shape(2);
  bool match = updates.ndim() == expected.ndim();
  for (int a = 0; match && a < expected.ndim(); ++a)
    match = updates[a] == expected[a] || updates[a] < 0 || expected[a] < 0;
  KILN_CHECK(match, ErrorCode::kShapeMismatch, ctx.input_label(2), ": expected shape ", expected,
             " (indices.shape[:-1] + data.shape[k:]), got ", updates);
  return {ctx.input(0)};
}

void scatter_nd_kernel(KernelContext& ctx) {
  const Tensor& data = ctx.input(0);
  const Tensor& indices = ctx.input(1);
  const Tensor& updates = ctx.input(2);
  const int k = static_cast<int>(indices.shape()[indices.ndim() - 1]);
  const auto offsets = tuple_offsets(indices, data.shape(), 0);
  copy_data_to_output(ctx);
  const int64_t slice = product(data.shape(), k, data.ndim());
  if (offsets.empty() || slice == 0) return;
  const auto item = static_cast<int64_t>(data.itemsize());
  // Tuples may repeat, so they are applied in order; the pool splits each slice instead.
  with_scatter_apply(data.dtype(), reduction_of(ctx.attrs), [&](auto apply) {
    const char* src = bytes(updates);
    char* dst = bytes(ctx.output(0));
    parallel_for(0, slice, kCopyGrain, [&](int64_t b, int64_t e) {
      for (size_t t = 0; t < offsets.size(); ++t)
        apply(dst + (offsets[t] + b) * item, src + (static_cast<int64_t>(t) * slice + b) * item, e - b);
    });
  });
}

KILN_REGISTER_OP(ScatterND)
    .takes_storage_types()
    .doc(
        "A copy of `data` with the slices addressed by the index tuples of `indices` replaced by "
        "`updates`, or combined with them by `reduction` (add, mul, max, min).")
    .input("data")
    .input("indices")
    .input("updates")
    .output("output")
    .attr("reduction", AttrType::kString, "none", validate_reduction)
    .infer(infer_scatter_nd)
    .kernel(scatter_nd_kernel);

KILN_REGISTER_OP(GatherGrad)
    .doc(
        "Kiln: the gradient of Gather. Zeros of the shape of `like` (Gather's data) with the rows of dY "
        "added at the positions `indices` names along `axis`.")
    .input("dY")
    .input("indices")
    .input("like")
    .output("dX")
    .attr("axis", AttrType::kInt, 0)
    .infer([](InferContext& ctx) {
      require_dtype(ctx, 0, kFloatDTypes);
      require_dtype(ctx, 1, kIndexDTypes);
      return std::vector<TensorInfo>{{ctx.dtype(0), ctx.shape(2)}};
    })
    .kernel(gather_grad_kernel);

}  // namespace
}  // namespace kiln::ops
