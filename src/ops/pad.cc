// Padding: Pad, in modes constant, reflect, edge and wrap (as numpy.pad). Negative pads crop; the
// non-constant modes then reflect, repeat or wrap the cropped data.
#include "gradient.h"
#include "infer_util.h"
#include "shape_ops_util.h"

namespace kiln::ops {
namespace {

enum class PadMode { kConstant, kReflect, kEdge, kWrap };

void validate_mode(const AttrValue& v, const std::string& what) {
  const auto& s = std::get<std::string>(v.variant());
  KILN_CHECK(s == "constant" || s == "reflect" || s == "edge" || s == "wrap", ErrorCode::kInvalidArgument,
             what, ": expected one of {constant, reflect, edge, wrap}, got '", s, "'");
}

PadMode pad_mode(const std::string& s) {
  if (s == "reflect") return PadMode::kReflect;
  if (s == "edge") return PadMode::kEdge;
  if (s == "wrap") return PadMode::kWrap;
  return PadMode::kConstant;
}

// Begin and end pads of every axis (0 for axes not in `axes`), from inputs 1 (pads) and 3 (axes).
struct PadAmounts {
  std::vector<int64_t> begin, end;
};

PadAmounts pad_amounts(const Tensor& pads_tensor, const Tensor* axes_tensor, int rank,
                       const std::string& pads_label, const std::string& axes_label) {
  const auto pads = read_int_values(pads_tensor, pads_label);
  std::vector<int64_t> raw_axes(static_cast<size_t>(rank));
  for (int a = 0; a < rank; ++a) raw_axes[static_cast<size_t>(a)] = a;
  if (axes_tensor) raw_axes = read_int_values(*axes_tensor, axes_label);
  const auto axes = normalize_axes(raw_axes, rank, axes_label);
  KILN_CHECK(pads.size() == 2 * axes.size(), ErrorCode::kShapeMismatch, pads_label, ": expected ",
             2 * axes.size(), " values (begin and end for each of ", axes.size(), " axes), got ",
             pads.size());
  PadAmounts amounts{std::vector<int64_t>(static_cast<size_t>(rank), 0),
                     std::vector<int64_t>(static_cast<size_t>(rank), 0)};
  for (size_t i = 0; i < axes.size(); ++i) {
    amounts.begin[static_cast<size_t>(axes[i])] = pads[i];
    amounts.end[static_cast<size_t>(axes[i])] = pads[axes.size() + i];
  }
  return amounts;
}

std::vector<TensorInfo> infer_pad(InferContext& ctx) {
  require_dtype(ctx, 1, kIndexDTypes);
  require_rank(ctx, 1, 1, 1);
  if (ctx.has_input(2)) {
    require_same_dtype(ctx, 0, 2);
    KILN_CHECK(ctx.shape(2).numel() == 1 || !ctx.shape(2).is_known(), ErrorCode::kShapeMismatch,
               ctx.input_label(2), ": expected a scalar, got shape ", ctx.shape(2));
  }
  if (ctx.has_input(3)) {
    require_dtype(ctx, 3, kIndexDTypes);
    require_rank(ctx, 3, 1, 1);
  }
  const Shape& in = ctx.shape(0);
  const PadMode mode = pad_mode(ctx.attrs().get_string("mode"));
  const auto amounts = pad_amounts(ctx.value(1), ctx.has_input(3) ? &ctx.value(3) : nullptr, in.ndim(),
                                   ctx.input_label(1), ctx.has_input(3) ? ctx.input_label(3) : "axes");
  Shape out;
  for (int a = 0; a < in.ndim(); ++a) {
    const int64_t b = amounts.begin[static_cast<size_t>(a)], e = amounts.end[static_cast<size_t>(a)];
    if (in[a] < 0) {
      out.push_back(Shape::kUnknown);
      continue;
    }
    const int64_t size = in[a] + b + e;
    KILN_CHECK(size >= 0, ErrorCode::kShapeMismatch, ctx.input_label(1), ": pads ", b, " and ", e,
               " on axis ", a, " remove more than its ", in[a], " elements (", ctx.input_label(0), " shape ",
               in, ")");
    const int64_t kept = in[a] - std::max<int64_t>(-b, 0) - std::max<int64_t>(-e, 0);
    KILN_CHECK(mode == PadMode::kConstant || kept > 0 || (b <= 0 && e <= 0), ErrorCode::kInvalidArgument,
               ctx.input_label(1), ": mode '", ctx.attrs().get_string("mode"), "' cannot pad axis ", a,
               ", which has no elements left to repeat (", ctx.input_label(0), " shape ", in, ")");
    out.push_back(size);
  }
  return {TensorInfo{ctx.dtype(0), out}};
}

// For each output position along one axis: the input position it copies, or -1 for the constant.
std::vector<int64_t> source_positions(int64_t dim, int64_t begin, int64_t end, int64_t out_dim,
                                      PadMode mode) {
  const int64_t lo = std::max<int64_t>(-begin, 0);  // elements cropped at the front
  const int64_t kept = dim - lo - std::max<int64_t>(-end, 0);
  const int64_t pad_front = std::max<int64_t>(begin, 0);
  std::vector<int64_t> map(static_cast<size_t>(out_dim));
  for (int64_t o = 0; o < out_dim; ++o) {
    int64_t s = o - pad_front;
    if (s < 0 || s >= kept) {
      switch (mode) {
        case PadMode::kConstant:
          s = -1;
          break;
        case PadMode::kEdge:
          s = std::clamp<int64_t>(s, 0, kept - 1);
          break;
        case PadMode::kWrap:
          s = ((s % kept) + kept) % kept;
          break;
        case PadMode::kReflect: {
          // Mirror about the first and last elements: the pattern repeats every 2 * (kept - 1).
          const int64_t period = 2 * (kept - 1);
          if (period == 0) {
            s = 0;
          } else {
            s = ((s % period) + period) % period;
            if (s >= kept) s = period - s;
          }
          break;
        }
      }
    }
    map[static_cast<size_t>(o)] = s < 0 ? -1 : lo + s;
  }
  return map;
}

void pad_kernel(KernelContext& ctx) {
  const Tensor& in = ctx.input(0);
  Tensor& out = ctx.output(0);
  if (out.numel() == 0) return;
  const size_t item = in.itemsize();
  const auto item_bytes = static_cast<int64_t>(item);
  const auto* src = static_cast<const char*>(in.raw_data());
  auto* dst = static_cast<char*>(out.raw_data());
  const int rank = in.ndim();
  if (rank == 0) {
    copy_element(dst, src, item);
    return;
  }
  std::vector<char> fill(item, 0);  // all-zero bits are 0 (or false) in every dtype
  if (ctx.has_input(2)) copy_element(fill.data(), static_cast<const char*>(ctx.input(2).raw_data()), item);
  const PadMode mode = pad_mode(ctx.attrs.get_string("mode"));
  const auto amounts =
      pad_amounts(ctx.input(1), ctx.has_input(3) ? &ctx.input(3) : nullptr, rank, "pads", "axes");
  std::vector<std::vector<int64_t>> maps;
  for (int a = 0; a < rank; ++a)
    maps.push_back(source_positions(in.shape()[a], amounts.begin[static_cast<size_t>(a)],
                                    amounts.end[static_cast<size_t>(a)], out.shape()[a], mode));
  const auto in_strides = contiguous_strides(in.shape());
  const int last = rank - 1;
  const int64_t width = out.shape()[last];
  const auto& last_map = maps.back();
  // The run of the last axis copied straight from one input row.
  const int64_t copy_begin = std::max<int64_t>(amounts.begin.back(), 0);
  const int64_t copy_len = std::max<int64_t>(in.shape()[last] - std::max<int64_t>(-amounts.begin.back(), 0) -
                                                 std::max<int64_t>(-amounts.end.back(), 0),
                                             0);
  const int64_t rows = out.numel() / width;
  parallel_for(0, rows, std::max<int64_t>(1, kCopyGrain / width), [&](int64_t b, int64_t e) {
    for (int64_t row = b; row < e; ++row) {
      char* out_row = dst + row * width * item_bytes;
      int64_t src_off = 0;
      bool constant_row = false;
      for (int64_t a = last - 1, rest = row; a >= 0; --a) {
        const auto& map = maps[static_cast<size_t>(a)];
        const int64_t s = map[static_cast<size_t>(rest % static_cast<int64_t>(map.size()))];
        rest /= static_cast<int64_t>(map.size());
        constant_row |= s < 0;
        src_off += s * in_strides[static_cast<size_t>(a)];
      }
      if (constant_row) {
        fill_run(out_row, fill.data(), width, item);
        continue;
      }
      const char* in_row = src + src_off * item_bytes;
      for (int64_t o = 0; o < width; ++o) {
        if (o == copy_begin && copy_len > 0) {
          std::memcpy(out_row + o * item_bytes, in_row + last_map[static_cast<size_t>(o)] * item_bytes,
                      static_cast<size_t>(copy_len) * item);
          o += copy_len - 1;
          continue;
        }
        const int64_t s = last_map[static_cast<size_t>(o)];
        copy_element(out_row + o * item_bytes, s < 0 ? fill.data() : in_row + s * item_bytes, item);
      }
    }
  });
}

// Constant padding: the input's gradient is the part of the output gradient over the input,
// Slice(g, begin pads, begin pads + input extents); the pad value gets the rest. Cropping
// (negative pads) and the reflect/edge/wrap modes have no rule yet.
void pad_gradient(GradientContext& ctx) {
  KILN_CHECK(pad_mode(ctx.attrs().get_string("mode")) == PadMode::kConstant, ErrorCode::kUnsupported,
             "mode '", ctx.attrs().get_string("mode"), "' has no gradient rule (only 'constant' does)");
  const GradValue g = ctx.output_grad(0);
  const AttrMap to_int64{{"to", static_cast<int64_t>(dtype_to_onnx(DType::kInt64))}};
  const int64_t count = ctx.input_info(1).shape[0] / 2;
  const GradValue pads = ctx.op1("Cast", {ctx.input(1)}, to_int64);
  const GradValue starts = ctx.op1("Slice", {pads, ctx.ints({0}), ctx.ints({count})});
  GradValue extents = ctx.op1("Shape", {ctx.input(0)});
  GradValue axes;
  if (ctx.has_input(3)) {
    axes = ctx.op1("Cast", {ctx.input(3)}, to_int64);
    extents = ctx.op1("Gather", {extents, axes});
  }
  const GradValue dx = ctx.op1("Slice", {g, starts, ctx.add(starts, extents), axes});
  if (ctx.needs_input_grad(0)) ctx.set_input_grad(0, dx);
  if (ctx.needs_input_grad(2)) {
    const GradValue rest =
        ctx.sub(ctx.op1("ReduceSum", {g}, {{"keepdims", 0}}), ctx.op1("ReduceSum", {dx}, {{"keepdims", 0}}));
    ctx.set_input_grad(2, ctx.op1("Reshape", {rest, ctx.shape_of_input(2)}));
  }
}

KILN_REGISTER_OP(Pad)
    .takes_storage_types()
    .doc(
        "Pads (or, with negative amounts, crops) each axis: pads = [x1_begin, x2_begin, ..., "
        "x1_end, x2_end, ...] for `axes` (all axes when absent). Modes: constant (constant_value, "
        "default 0), reflect, edge, wrap.")
    .input("data")
    .shape_input("pads")
    .input("constant_value", Arity::kOptional)
    .shape_input("axes", Arity::kOptional)
    .output("output")
    .attr("mode", AttrType::kString, "constant", validate_mode)
    .infer(infer_pad)
    .kernel(pad_kernel)
    .gradient(pad_gradient);

}  // namespace
}  // namespace kiln::ops
