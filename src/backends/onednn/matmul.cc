// MatMul and Gemm, and their fused forms (a bias and an activation as post-ops), on oneDNN's
// matmul primitive. A constant right-hand side (a weight) is read in place when it has the compute
// type, else converted and reordered once, at compile time, into the layout the primitive
// prefers; Gemm's transposes are strides on the operands' descriptors, and its C a binary post-op.
#include <algorithm>
#include <memory>

#include "backends/onednn/onednn_common.h"
#include "backends/onednn/small_matmul.h"

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
// argument takes only some). A per-column addend (a Dense layer's bias) with nothing scaled
// before it is the primitive's bias argument instead when an implementation takes it (`bias_attr`:
// the post-ops without the binary one): one argument fewer per call and no binary post-op to
// prepare (0-0.1 us of a call of about 1 us, measured on the MLP).
struct Addend {
  dnnl::memory::desc desc;
  int post_op_index = 0;  // its place among the post-ops
  std::optional<dnnl::primitive_attr> bias_attr;
  bool as_bias = false;  // set when the primitive takes it as its bias argument
};

// Whether an addend of `dims` (right-aligned to the output's rank) adds one value per column.
bool per_column(const dnnl::memory::dims& dims) {
  return std::all_of(dims.begin(), dims.end() - 1, [](int64_t d) { return d == 1; });
}

struct MatmulKernel {
  Prepared<dnnl::matmul> matmul;
  Port a;  // as stored, and as the primitive reads it (bf16 or f16 in a low-precision plan)
  Port b;  // likewise, for a weight computed at run time
  dnnl::memory::desc out_desc;
  std::optional<PackedConstant> prepared_b;
  std::optional<Addend> addend;

  void operator()(ops::KernelContext& ctx) const {
    std::shared_ptr<Storage> a_bytes, b_bytes;
    const void* a_data = read_port(ctx, a, ctx.input(0), a_bytes);
    const void* b_data =
        prepared_b ? prepared_b->memory.get_data_handle() : read_port(ctx, b, ctx.input(1), b_bytes);
    if (addend && addend->as_bias) {
      execute(ctx, matmul,
              {{DNNL_ARG_SRC, a.used, a_data},
               {DNNL_ARG_WEIGHTS, b.used, b_data},
               {DNNL_ARG_BIAS, addend->desc, ctx.input(2).raw_data()},
               {DNNL_ARG_DST, out_desc, ctx.output(0).raw_data()}});
    } else if (addend) {
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
// the compute type, not wider than deep and not deep with many rows is read where it is stored when
// a fast implementation takes it so: a packed copy would hold the weight twice wherever the graph
// keeps the original (a plan compiled outside a Predictor), 227 of BERT-base's 340 MB of MatMul
// weights, for 0.5-2% of their speed at batch 1. Otherwise it is reordered once into the layout the
// primitive prefers, and when that copy keeps its element type `unpack_b` is set to rebuild the
// given weight from it (KernelChoice::owned_constants).
ops::KernelFn make_matmul(const dnnl::memory::desc& a, const dnnl::memory::desc& b, const Tensor* b_constant,
                          const std::optional<Addend>& addend, const dnnl::memory::desc& out,
                          const dnnl::primitive_attr& attr, dnnl::memory::data_type compute,
                          std::function<Tensor()>& unpack_b) {
  auto kernel = std::make_shared<MatmulKernel>();
  const dnnl::memory::desc a_used(a.get_dims(), compute, a.get_strides());
  const dnnl::memory::desc b_used(b.get_dims(), compute, b.get_strides());
  std::optional<dnnl::matmul::primitive_desc> pd;
  // 2 M N K, with every batch dimension of the output in M.
  const dnnl::memory::dims out_dims = out.get_dims(), a_dims = a.get_dims();
  double flops = 2.0 * static_cast<double>(a_dims.back());
  for (int64_t d : out_dims) flops *= static_cast<double>(d);
  create_for(flops);
  // oneDNN's brgemm reads a row-major weight through a copy of each panel on every call: at batch 1
  // 0.5% to 2% slower than packed on BERT-base's 768x768 and 3072x768 weights, 8% on its 768x3072 ones, so
  // a weight wider than deep (N > K) is packed anyway. So is a small one: its second copy costs
  // little, and a call of microseconds feels the panel copies most (the 784-256-128-10 MLP at
  // batch 1: 32 us with its weights read in place, 14 us packed).
  // A transposed weight (Gemm's transB, a classifier's (classes, features) matrix) is packed
  // too: brgemm reads it column-major 2.3-2.7x slower than row-major (1x2048 by 2048x1000 at batch
  // 1: 0.30 against 0.11 ms), a second copy of 5-8 MB on the CNNs' heads.
  // So is a weight deeper than wide (K > N) multiplied by many rows (all batch dimensions counted):
  // at BERT-base's batch 8 (1024 rows, 2 threads) reading its 3072x768 weights in place cost 18% of
  // that MatMul's CPU time (11% at batch 4), 5% of the model's, for 113 MB packed; its 768x768 ones
  // cost 5% there, 1.5% of the model's, for as many bytes, and stay in place.
  constexpr size_t kAlwaysPackedBytes = size_t{1} << 20;
  constexpr int64_t kManyRows = 512;
  const dnnl::memory::dims b_dims = b.get_dims();
  const bool wide = b_dims[b_dims.size() - 1] > b_dims[b_dims.size() - 2];
  const bool small = b.get_size() <= kAlwaysPackedBytes;
  const bool column_major = b.get_strides().back() != 1;
  int64_t rows = 1;
  for (size_t i = 0; i + 1 < out_dims.size(); ++i) rows *= out_dims[i];
  const bool deep_many_rows = rows >= kManyRows && b_dims[b_dims.size() - 2] > b_dims[b_dims.size() - 1];
  bool as_bias = false;
  // The primitive for weights described by `weights`: with the addend as its bias argument when
  // that may be and an implementation takes it, else with the binary post-op; nothing when only
  // a generic implementation does.
  const auto make_pd = [&](const dnnl::memory::desc& weights) -> std::optional<dnnl::matmul::primitive_desc> {
    if (addend && addend->bias_attr) {
      try {
        dnnl::matmul::primitive_desc bias_pd(cpu_engine(), a_used, weights, addend->desc, out,
                                             *addend->bias_attr);
        if (!is_generic_impl(bias_pd)) {
          as_bias = true;
          return bias_pd;
        }
      } catch (const dnnl::error&) {
        // No implementation with a bias of this type: the binary post-op below.
      }
    }
    as_bias = false;
    dnnl::matmul::primitive_desc binary_pd(cpu_engine(), a_used, weights, out, attr);
    if (is_generic_impl(binary_pd)) return std::nullopt;
    return binary_pd;
  };
  if (b_constant == nullptr ||
      (compute == b.get_data_type() && !wide && !small && !column_major && !deep_many_rows)) {
    pd = make_pd(b_used);
    if (!pd && b_constant == nullptr) return {};
  }
  if (!pd) {
    pd = make_pd(dnnl::memory::desc(b.get_dims(), compute, tag::any));
    if (!pd) return {};
  }
  kernel->matmul = Prepared<dnnl::matmul>(*pd, flops);
  kernel->a = input_port(a, a_used);
  kernel->out_desc = out;
  kernel->addend = addend;
  if (addend) kernel->addend->as_bias = as_bias;
  if (b_constant != nullptr && pd->weights_desc() != b) {
    // The constant is stored as `b` describes it (possibly transposed); the reorder packs it. A
    // copy of the same element type holds all of it, so the runtime may let the given one go.
    kernel->prepared_b = pack_constant(*b_constant, b, pd->weights_desc());
    kernel->b = input_port(pd->weights_desc(), pd->weights_desc());
    if (compute == b.get_data_type() && b_constant->is_contiguous())
      unpack_b = unpack_constant(*kernel->prepared_b, *b_constant, b);
  } else {
    kernel->b = input_port(b, pd->weights_desc());
  }
  return [kernel](ops::KernelContext& ctx) { (*kernel)(ctx); };
}

// The attributes of a primitive whose only post-op is the node's fused activation.
dnnl::primitive_attr activation_attr(const Attrs& attrs) {
  dnnl::post_ops post;
  append_activation(post, attrs);
  dnnl::primitive_attr attr = base_attr();
  attr.set_post_ops(post);
  return attr;
}

// The small-product loop as a kernel, when make_small_matmul takes the product (see there).
ops::KernelFn small_matmul_kernel(const dnnl::memory::desc& a, const dnnl::memory::desc& b,
                                  const Tensor* b_constant,
                                  const std::optional<dnnl::memory::dims>& addend_dims,
                                  const dnnl::memory::desc& out, double alpha, const Attrs& attrs,
                                  dnnl::memory::data_type compute) {
  if (b_constant == nullptr || compute != dnnl::memory::data_type::f32) return {};
  std::shared_ptr<const SmallMatmul> loop =
      make_small_matmul(a, b, *b_constant, addend_dims, out, alpha, attrs);
  if (!loop) return {};
  return [loop](ops::KernelContext& ctx) {
    loop->run(ctx.input(0).data<float>(), loop->has_addend ? ctx.input(2).data<float>() : nullptr,
              ctx.output(0).data<float>());
  };
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
    if (alpha == 1.0 && per_column(bias->desc.get_dims())) bias->bias_attr = activation_attr(query.attrs);
  }
  append_activation(post, query.attrs);
  dnnl::primitive_attr attr = base_attr();
  attr.set_post_ops(post);
  const dnnl::memory::desc a_desc = a_stored->reshape(padded_dims(a.shape, rank));
  const dnnl::memory::desc b_desc = b_stored->reshape(padded_dims(b.shape, rank));
  const dnnl::memory::data_type compute = compute_type(query, a.dtype);
  choice.kernel = small_matmul_kernel(a_desc, b_desc, constant_input(node, 1),
                                      bias ? std::optional(bias->desc.get_dims()) : std::nullopt, out_desc,
                                      alpha, query.attrs, compute);
  if (!choice.kernel) {
    std::function<Tensor()> unpack_b;
    choice.kernel =
        make_matmul(a_desc, b_desc, constant_input(node, 1), bias, out_desc, attr, compute, unpack_b);
    if (unpack_b) choice.owned_constants.emplace_back(1, std::move(unpack_b));
  }
  if (!choice.kernel) return {};
  return choice;
}

runtime::KernelChoice make_gemm_kernel(const graph::Node& node, const Attrs& attrs,
                                       dnnl::memory::data_type compute) {
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
    if (alpha == 1.0 && per_column(c_addend->desc.get_dims())) c_addend->bias_attr = activation_attr(attrs);
  }
  append_activation(post, attrs);
  dnnl::primitive_attr attr = base_attr();
  attr.set_post_ops(post);
  // Operands computed at run time (Gemm's B is a weight in every model seen so far) keep their type.
  if (constant_input(node, 1) == nullptr) compute = *to_dnnl(a.dtype);
  const dnnl::memory::desc a_desc = matrix_desc(m, k, a.dtype, trans_a);
  const dnnl::memory::desc b_desc = matrix_desc(k, n, b.dtype, trans_b);
  const dnnl::memory::desc out_desc = plain_desc(out.shape, out.dtype);
  runtime::KernelChoice choice;
  choice.kernel = small_matmul_kernel(a_desc, b_desc, constant_input(node, 1),
                                      c_addend ? std::optional(c_addend->desc.get_dims()) : std::nullopt,
                                      out_desc, alpha, attrs, compute);
  if (choice.kernel) return choice;
  std::function<Tensor()> unpack_b;
  choice.kernel =
      make_matmul(a_desc, b_desc, constant_input(node, 1), c_addend, out_desc, attr, compute, unpack_b);
  if (unpack_b) choice.owned_constants.emplace_back(1, std::move(unpack_b));
  return choice;
}

// Gemm takes row-major float32 operands only; the query brings the plan's precision.
runtime::KernelChoice make_row_major_gemm(const runtime::KernelQuery& query) {
  for (const runtime::LayoutPtr& layout : query.input_layouts)
    if (layout != nullptr) return {};
  return make_gemm_kernel(query.node, query.attrs, compute_type(query, input_info(query.node, 0).dtype));
}

}  // namespace

KILN_ONEDNN_LAYOUT_KERNEL(MatMul, make_matmul_kernel);
KILN_ONEDNN_LAYOUT_KERNEL(Gemm, make_row_major_gemm);
KILN_ONEDNN_LAYOUT_KERNEL(FusedMatMul, make_matmul_kernel);
KILN_ONEDNN_LAYOUT_KERNEL(FusedGemm, make_row_major_gemm);

}  // namespace kiln::onednn
