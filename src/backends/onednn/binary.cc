// Add, Sub, Mul, Div, Max and Min of two float tensors with numpy broadcasting on oneDNN's binary
// primitive (in a bf16 or fp16 plan the operands read as stored, float32 or the narrower type, and
// the output kept in the narrower type), and Pow with a constant scalar exponent on its eltwise pow.
//
// oneDNN broadcasts only its second source. When the first input is the broadcast one, the
// commutative ops swap their inputs and Sub computes -(B - A), which is exact; Div, inputs that
// both broadcast, and broadcasts that only oneDNN's generic implementation covers (after unit
// axes are dropped and alike neighbours merged) stay with the reference kernel, as do small
// tensors (see kMinElements) and integers (which oneDNN would compute in float).
//
// Unlike the reference kernel, oneDNN's Max and Min do not propagate a NaN in the first source.
//
// The executor may give the output the buffer of either input (in place). oneDNN allows the
// output to alias only the first source, so when it aliases the second the kernel swaps the
// sources (commutative ops, Sub with the negation) or, for Div, reads a copy of the divisor.
#include <cstring>
#include <memory>
#include <string_view>

#include "backends/onednn/onednn_common.h"

namespace kiln::onednn {
namespace {

using algo = dnnl::algorithm;

// Below this many elements a oneDNN call (1 to 3 us of wrapping, dispatch and synchronization)
// costs more than the whole reference kernel.
constexpr int64_t kMinElements = 8192;
// Without broadcasting, the reference kernel runs float32 at memory speed too: oneDNN only draws
// level from about this size (it stays far ahead for the 16-bit floats and for broadcasts).
constexpr int64_t kMinElementsSameShapeFloat32 = 1 << 18;

// The output's dims and the broadcast source's, after dropping unit axes and merging neighbours
// that broadcast alike: (N, C, H, W) with (C, 1, 1) becomes (N, C, H*W) with (1, C, 1), the
// per-channel case oneDNN's fast kernels cover.
struct MergedDims {
  dnnl::memory::dims full, broadcast;
};

MergedDims merge_axes(const Shape& out, const Shape& broadcast) {
  MergedDims m;
  const int lead = out.ndim() - broadcast.ndim();
  bool last_broadcast = false;
  for (int i = 0; i < out.ndim(); ++i) {
    if (out[i] == 1) continue;
    const bool is_broadcast = i < lead || broadcast[i - lead] == 1;
    if (!m.full.empty() && is_broadcast == last_broadcast) {
      m.full.back() *= out[i];
      if (!is_broadcast) m.broadcast.back() *= out[i];
    } else {
      m.full.push_back(out[i]);
      m.broadcast.push_back(is_broadcast ? 1 : out[i]);
    }
    last_broadcast = is_broadcast;
  }
  if (m.full.empty()) m.full = m.broadcast = {1};
  return m;
}

dnnl::memory::desc dense_desc(const dnnl::memory::dims& dims, dnnl::memory::data_type type) {
  return plain_desc(Shape(std::vector<int64_t>(dims.begin(), dims.end())), type);
}

using BinaryPrimitive = Prepared<dnnl::binary>;

// The sources and destination of one primitive, described with merged axes.
struct BinaryDescs {
  dnnl::memory::desc first, second, dst;
};

// C = op(A, B) where oneDNN computes sources (first, second) = (A, B), or (B, A) when `swapped`.
// The first source has the output's shape. Each operand is described in the type it is stored in
// (float32, or bf16/fp16 between this backend's kernels in a low-precision plan).
struct BinaryKernel {
  BinaryPrimitive forward;                 // as chosen at compile time
  std::optional<BinaryPrimitive> reverse;  // same-shape inputs: the sources the other way round
  BinaryDescs forward_descs, reverse_descs;
  bool swapped = false;

  void operator()(ops::KernelContext& ctx) const {
    const Tensor& a = ctx.input(0);
    const Tensor& b = ctx.input(1);
    Tensor& c = ctx.output(0);
    const Tensor* first = swapped ? &b : &a;
    const Tensor* second = swapped ? &a : &b;
    const BinaryPrimitive* p = &forward;
    const BinaryDescs* descs = &forward_descs;
    std::shared_ptr<Storage> copy_bytes;
    const void* second_data = second->raw_data();
    if (second->raw_data() == c.raw_data() && a.raw_data() != b.raw_data()) {
      // In place over the second source (possible only when the shapes and layouts are equal).
      if (reverse) {
        std::swap(first, second);
        second_data = second->raw_data();
        p = &*reverse;
        descs = &reverse_descs;
      } else {
        const size_t bytes = descs->second.get_size();
        void* copy = temporary_bytes(bytes, copy_bytes);
        std::memcpy(copy, second->raw_data(), bytes);
        second_data = copy;
      }
    }
    execute(ctx, *p,
            {{DNNL_ARG_SRC_0, descs->first, first->raw_data()},
             {DNNL_ARG_SRC_1, descs->second, second_data},
             {DNNL_ARG_DST, descs->dst, c.raw_data()}});
  }
};

// `negate`: the result is negated (Sub with its sources swapped).
std::optional<BinaryPrimitive> make_primitive(algo algorithm, const BinaryDescs& descs, bool negate) {
  dnnl::primitive_attr attr = base_attr();
  if (negate) {
    dnnl::post_ops post;
    post.append_eltwise(algo::eltwise_linear, -1.f, 0.f);
    attr.set_post_ops(post);
  }
  const dnnl::binary::primitive_desc pd(cpu_engine(), algorithm, descs.first, descs.second, descs.dst, attr);
  if (is_generic_impl(pd)) return std::nullopt;
  return BinaryPrimitive(pd, streamed_flops(descs.dst));
}

// Inputs are read row-major as they are stored; when one of them is kept in a low-precision plan's
// compute type, so is the output (unless it is a graph output).
runtime::KernelChoice make_binary(const runtime::KernelQuery& query, algo algorithm) {
  const graph::Node& node = query.node;
  if (node.inputs.size() != 2) return {};  // Max and Min are variadic
  const auto& a = input_info(node, 0);
  const auto& b = input_info(node, 1);
  const auto& c = output_info(node, 0);
  if (!is_float(c.dtype) || a.dtype != c.dtype || b.dtype != c.dtype) return {};
  const std::optional<dnnl::memory::desc> a_stored = stored_plain_desc(query, 0);
  const std::optional<dnnl::memory::desc> b_stored = stored_plain_desc(query, 1);
  if (!a_stored || !b_stored) return {};
  const bool commutative = algorithm != algo::binary_sub && algorithm != algo::binary_div;
  const bool is_sub = algorithm == algo::binary_sub;
  const bool a_full = a.shape.numel() == c.shape.numel(), b_full = b.shape.numel() == c.shape.numel();
  const bool any_layout = query.input_layouts[0] != nullptr || query.input_layouts[1] != nullptr;
  const bool plain_float32 = a_full && b_full && c.dtype == DType::kFloat32 && !any_layout;
  if (c.shape.numel() < (plain_float32 ? kMinElementsSameShapeFloat32 : kMinElements)) return {};
  if (!a_full && !(b_full && (commutative || is_sub))) return {};
  auto kernel = std::make_shared<BinaryKernel>();
  kernel->swapped = !a_full;
  runtime::KernelChoice choice;
  choice.output_layouts.resize(1);
  // The narrower type goes on from an operand that has it; float32 operands keep a float32 result
  // (a detection head's coordinates would lose pixels in bf16).
  const auto out_type =
      any_layout ? plain_output_store(query, 0, choice.output_layouts[0]).get_data_type() : *to_dnnl(c.dtype);
  const MergedDims dims = merge_axes(c.shape, kernel->swapped ? a.shape : b.shape);
  const auto first_type = (kernel->swapped ? b_stored : a_stored)->get_data_type();
  const auto second_type = (kernel->swapped ? a_stored : b_stored)->get_data_type();
  kernel->forward_descs = {dense_desc(dims.full, first_type), dense_desc(dims.broadcast, second_type),
                           dense_desc(dims.full, out_type)};
  auto forward = make_primitive(algorithm, kernel->forward_descs, kernel->swapped && is_sub);
  if (!forward) return {};
  kernel->forward = *forward;
  if (a_full && b_full && (commutative || is_sub)) {
    kernel->reverse_descs = {dense_desc(dims.full, second_type), dense_desc(dims.full, first_type),
                             kernel->forward_descs.dst};
    kernel->reverse = make_primitive(algorithm, kernel->reverse_descs, !kernel->swapped && is_sub);
    if (!kernel->reverse) return {};
  }
  choice.kernel = [kernel](ops::KernelContext& ctx) { (*kernel)(ctx); };
  return choice;
}

template <algo kAlgorithm>
runtime::KernelChoice make_fixed(const runtime::KernelQuery& query) {
  return make_binary(query, kAlgorithm);
}

struct PowKernel {
  Prepared<dnnl::eltwise_forward> pow;
  dnnl::memory::desc desc;  // X and Z alike

  void operator()(ops::KernelContext& ctx) const {
    execute(ctx, pow,
            {{DNNL_ARG_SRC, desc, ctx.input(0).raw_data()}, {DNNL_ARG_DST, desc, ctx.output(0).raw_data()}});
  }
};

// Z = X ^ y for a constant scalar y: oneDNN's eltwise pow, alpha * x ^ beta with alpha = 1. The
// exponent must survive the conversion to float exactly.
ops::KernelFn make_pow(const graph::Node& node, const Attrs&) {
  const auto& x = input_info(node, 0);
  const auto& z = output_info(node, 0);
  const Tensor* exponent = constant_input(node, 1);
  if (exponent == nullptr || exponent->numel() != 1 || !is_float(x.dtype) || x.shape != z.shape ||
      x.shape.numel() < kMinElements)
    return {};
  const double y = exponent->cast(DType::kFloat64).to_vector<double>()[0];
  if (static_cast<double>(static_cast<float>(y)) != y) return {};
  auto kernel = std::make_shared<PowKernel>();
  kernel->desc = plain_desc(x.shape, x.dtype);
  const dnnl::eltwise_forward::primitive_desc pd(cpu_engine(), dnnl::prop_kind::forward_inference,
                                                 algo::eltwise_pow, kernel->desc, kernel->desc, 1.f,
                                                 static_cast<float>(y), base_attr());
  if (is_generic_impl(pd)) return {};
  kernel->pow = Prepared<dnnl::eltwise_forward>(pd);
  return [kernel](ops::KernelContext& ctx) { (*kernel)(ctx); };
}

}  // namespace

KILN_ONEDNN_LAYOUT_KERNEL(Add, make_fixed<algo::binary_add>);
KILN_ONEDNN_LAYOUT_KERNEL(Sub, make_fixed<algo::binary_sub>);
KILN_ONEDNN_LAYOUT_KERNEL(Mul, make_fixed<algo::binary_mul>);
KILN_ONEDNN_LAYOUT_KERNEL(Div, make_fixed<algo::binary_div>);
KILN_ONEDNN_LAYOUT_KERNEL(Max, make_fixed<algo::binary_max>);
KILN_ONEDNN_LAYOUT_KERNEL(Min, make_fixed<algo::binary_min>);
KILN_ONEDNN_KERNEL(Pow, make_pow);

}  // namespace kiln::onednn
