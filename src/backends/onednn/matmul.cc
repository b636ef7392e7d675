// MatMul and Gemm, and their fused forms (a bias and an activation as post-ops), on oneDNN's
// matmul primitive. A constant right-hand side (a weight) is read in place when it has the compute
// type, else converted and reordered once, at compile time, into the layout the primitive
// prefers; Gemm's transposes are strides on the operands' descriptors, and its C a binary post-op.
#include <memory>

#include "backends/onednn/onednn_common.h"

namespace kiln::onednn {
namespace {

using tag = dnnl::memory::format_tag;

// A 2-D descriptor for an (rows, cols) matrix stored row-major, or column-major when
// `transposed` (the stored matrix is its transpose).
dnnl::memory::desc matrix_desc(int64_t rows, int64_t cols, DType dtype, bool transposed) {
  const dnnl::memory::dims strides = transposed ? dnnl::memory::dims{1, rows} : dnnl::memory::dims{cols, 1};
  return dnnl::memory::desc({rows, cols}, *to_dnnl(dtype), strides);
}

// The kernel state shared by every call: the primitive, and the weight when it is prepared.
// What is added to the product (Gemm's C, FusedMatMul's bias): input 2, broadcast to the output
// by a binary post-op, the form oneDNN's fast kernels take for every broadcast (their bias
// argument takes only some).
struct Addend {
  dnnl::memory::desc desc;
  int post_op_index = 0;  // its place among the post-ops
};

struct MatmulKernel {
  Prepared<dnnl::matmul> matmul;
  Port a;  // as stored, and as the primitive reads it (bf16 or f16 in a low-precision plan)
  Port b;  // likewise, for a weight computed at run time
  dnnl::memory::desc out_desc;
  std::optional<dnnl::memory> prepared_b;
  std::optional<Addend> addend;

  void operator()(ops::KernelContext& ctx) const {
    std::shared_ptr<Storage> a_bytes, b_bytes;
    const void* a_data = read_port(ctx, a, ctx.input(0), a_bytes);
    const void* b_data =
        prepared_b ? prepared_b->get_data_handle() : read_port(ctx, b, ctx.input(1), b_bytes);
    if (addend) {
      execute(ctx, matmul,
              {{DNNL_ARG_SRC, a.used, a_data},
               {DNNL_ARG_WEIGHTS, b.used, b_data},
               {DNNL_ARG_ATTR_MULTIPLE_POST_OP(addend->post_op_index) | DNNL_ARG_SRC_1, addend->desc,
                ctx.input(2).raw_data()},
               {DNNL_ARG_DST, out_desc, ctx.output(0).raw_data()}});
    } else {
      execute(ctx, matmul,
              {{DNNL_ARG_SRC, a.used, a_data},
               {DNNL_ARG_WEIGHTS, b.used, b_data},
               {DNNL_ARG_DST, out_desc, ctx.output(0).raw_data()}});
    }
  }
};

// Builds the primitive for descriptors a x b -> out (as the operands are stored), then the
// post-ops in `attr`, multiplying in `compute` (bf16 or f16 in a low-precision plan: a constant
// weight converted once, operands computed at run time on each call) with float32 accumulation;
// `out` may be float32 or the compute type. A constant weight (`b_constant`) that is already of
// the compute type and not wider than deep is read where it is stored when a fast implementation
// takes it so: a packed copy would hold the weight twice (the graph keeps the original to compile
// other shapes), 227 of BERT-base's 340 MB of MatMul weights, for 0.5-2% of their speed. Otherwise
// it is reordered once into the layout the primitive prefers.
ops::KernelFn make_matmul(const dnnl::memory::desc& a, const dnnl::memory::desc& b, const Tensor* b_constant,
                          const std::optional<Addend>& addend, const dnnl::memory::desc& out,
                          const dnnl::primitive_attr& attr, dnnl::memory::data_type compute) {
  auto kernel = std::make_shared<MatmulKernel>();
  const dnnl::memory::desc a_used(a.get_dims(), compute, a.get_strides());
  const dnnl::memory::desc b_used(b.get_dims(), compute, b.get_strides());
  std::optional<dnnl::matmul::primitive_desc> pd;
  // oneDNN's brgemm reads a row-major weight through a copy of each panel on every call: 0.5% to
  // 2% slower than packed on BERT-base's 768x768 and 3072x768 weights, 8% on its 768x3072 ones, so
  // a weight wider than deep (N > K) is packed anyway. So is a small one: its second copy costs
  // little, and a call of microseconds feels the panel copies most (the 784-256-128-10 MLP at
  // batch 1: 32 us with its weights read in place, 14 us packed).
  constexpr size_t kAlwaysPackedBytes = size_t{1} << 20;
  const dnnl::memory::dims b_dims = b.get_dims();
  const bool wide = b_dims[b_dims.size() - 1] > b_dims[b_dims.size() - 2];
  const bool small = b.get_size() <= kAlwaysPackedBytes;
  if (b_constant == nullptr || (compute == b.get_data_type() && !wide && !small)) {
    pd.emplace(cpu_engine(), a_used, b_used, out, attr);
    if (is_generic_impl(*pd)) pd.reset();
    if (!pd && b_constant == nullptr) return {};
  }
  if (!pd) {
    pd.emplace(cpu_engine(), a_used, dnnl::memory::desc(b.get_dims(), compute, tag::any), out, attr);
    if (is_generic_impl(*pd)) return {};
  }
  // 2 M N K, with every batch dimension of the output in M.
  const dnnl::memory::dims out_dims = out.get_dims(), a_dims = a.get_dims();
  double flops = 2.0 * static_cast<double>(a_dims.back());
  for (int64_t d : out_dims) flops *= static_cast<double>(d);
  kernel->matmul = Prepared<dnnl::matmul>(*pd, flops);
  kernel->a = input_port(a, a_used);
  kernel->out_desc = out;
  kernel->addend = addend;
  if (b_constant != nullptr && pd->weights_desc() != b) {
    // The constant is stored as `b` describes it (possibly transposed); the reorder packs it.
    kernel->prepared_b = prepare_constant(wrap(b, *b_constant), pd->weights_desc());
    kernel->b = input_port(pd->weights_desc(), pd->weights_desc());
  } else {
    kernel->b = input_port(b, pd->weights_desc());
  }
  return [kernel](ops::KernelContext& ctx) { (*kernel)(ctx); };
}

// Right-aligns `shape` to `rank` dims with leading ones (numpy broadcasting).
dnnl::memory::dims padded_dims(const Shape& shape, int rank) {
  dnnl::memory::dims dims(static_cast<size_t>(rank - shape.ndim()), 1);
  dims.insert(dims.end(), shape.begin(), shape.end());
  return dims;
}

dnnl::memory::desc row_major(const dnnl::memory::dims& dims, DType dtype) {
  return plain_desc(Shape(std::vector<int64_t>(dims.begin(), dims.end())), dtype);
}

// MatMul and FusedMatMul take their operands row-major, in float32 or in the narrower type a
// bf16 or fp16 plan keeps values in between this backend's kernels, multiply in the plan's compute
// type (constant weight or not) and keep the output in it unless it is a graph output.
runtime::KernelChoice make_matmul_kernel(const runtime::KernelQuery& query) {
  const graph::Node& node = query.node;
  const auto& a = input_info(node, 0);
  const auto& b = input_info(node, 1);
  const auto& out = output_info(node, 0);
  // 1-D operands (vector products) stay with the reference kernel.
  if (a.shape.ndim() < 2 || b.shape.ndim() < 2 || a.dtype != b.dtype) return {};
  const std::optional<dnnl::memory::desc> a_stored = stored_plain_desc(query, 0);
  const std::optional<dnnl::memory::desc> b_stored = stored_plain_desc(query, 1);
  if (!a_stored || !b_stored) return {};
  const int rank = out.shape.ndim();
  runtime::KernelChoice choice;
  choice.output_layouts.resize(1);
  const dnnl::memory::desc out_desc = plain_output_store(query, 0, choice.output_layouts[0]);
  // FusedMatMul: alpha, an addend broadcast to the output (a per-column bias, an attention mask, a
  // residual), then an activation.
  dnnl::post_ops post;
  const double alpha = query.attrs.has("alpha") ? query.attrs.get_float("alpha") : 1.0;
  if (alpha != 1.0) post.append_eltwise(dnnl::algorithm::eltwise_linear, static_cast<float>(alpha), 0.f);
  std::optional<Addend> bias;
  if (has_input(node, 2)) {
    if (input_info(node, 2).dtype != out.dtype || query.input_layouts[2] != nullptr) return {};
    bias = Addend{row_major(padded_dims(input_info(node, 2).shape, rank), out.dtype), post.len()};
    post.append_binary(dnnl::algorithm::binary_add, bias->desc);
  }
  append_activation(post, query.attrs);
  dnnl::primitive_attr attr = base_attr();
  attr.set_post_ops(post);
  choice.kernel = make_matmul(a_stored->reshape(padded_dims(a.shape, rank)),
                              b_stored->reshape(padded_dims(b.shape, rank)), constant_input(node, 1), bias,
                              out_desc, attr, compute_type(query, a.dtype));
  if (!choice.kernel) return {};
  return choice;
}

ops::KernelFn make_gemm_kernel(const graph::Node& node, const Attrs& attrs, dnnl::memory::data_type compute) {
  const auto& a = input_info(node, 0);
  const auto& b = input_info(node, 1);
  const auto& out = output_info(node, 0);
  const double alpha = attrs.get_float("alpha"), beta = attrs.get_float("beta");
  const bool trans_a = attrs.get_int("transA") != 0, trans_b = attrs.get_int("transB") != 0;
  if (a.dtype != b.dtype) return {};
  const int64_t m = out.shape[0], n = out.shape[1];
  const int64_t k = trans_a ? a.shape[0] : a.shape[1];
  // alpha * op(A) op(B), + C (broadcast to (M, N)), then FusedGemm's activation, as post-ops.
  dnnl::post_ops post;
  if (alpha != 1.0) post.append_eltwise(dnnl::algorithm::eltwise_linear, static_cast<float>(alpha), 0.f);
  std::optional<Addend> c_addend;
  if (has_input(node, 2) && beta != 0.0) {
    const auto& c = input_info(node, 2);
    if (beta != 1.0 || c.dtype != out.dtype) return {};
    c_addend = Addend{row_major(padded_dims(c.shape, 2), c.dtype), post.len()};
    post.append_binary(dnnl::algorithm::binary_add, c_addend->desc);
  }
  append_activation(post, attrs);
  dnnl::primitive_attr attr = base_attr();
  attr.set_post_ops(post);
  // Operands computed at run time (Gemm's B is a weight in every model seen so far) keep their type.
  if (constant_input(node, 1) == nullptr) compute = *to_dnnl(a.dtype);
  return make_matmul(matrix_desc(m, k, a.dtype, trans_a), matrix_desc(k, n, b.dtype, trans_b),
                     constant_input(node, 1), c_addend, plain_desc(out.shape, out.dtype), attr, compute);
}

// Gemm takes row-major float32 operands only; the query brings the plan's precision.
runtime::KernelChoice make_row_major_gemm(const runtime::KernelQuery& query) {
  for (const runtime::LayoutPtr& layout : query.input_layouts)
    if (layout != nullptr) return {};
  return {make_gemm_kernel(query.node, query.attrs, compute_type(query, input_info(query.node, 0).dtype)),
          {},
          {}};
}

}  // namespace

KILN_ONEDNN_LAYOUT_KERNEL(MatMul, make_matmul_kernel);
KILN_ONEDNN_LAYOUT_KERNEL(Gemm, make_row_major_gemm);
KILN_ONEDNN_LAYOUT_KERNEL(FusedMatMul, make_matmul_kernel);
KILN_ONEDNN_LAYOUT_KERNEL(FusedGemm, make_row_major_gemm);

}  // namespace kiln::onednn
