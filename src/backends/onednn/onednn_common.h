// What every oneDNN kernel shares: the CPU engine, Kiln dtypes and shapes as oneDNN memory
// descriptors, executing a primitive on caller-owned buffers, and the table of kernel makers
// that each op-family file fills at start-up.
//
// A kernel maker runs once per node at compile time: it creates the oneDNN primitive for the
// node's concrete shapes and prepares constant weights (reordered into the layout the primitive
// prefers), and returns a KernelFn that only wraps the step's buffers and executes. Primitives
// are created with a user-managed scratchpad so that one primitive may run on several threads
// at once (each call brings its own scratchpad).
#pragma once

#include <functional>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <unordered_map>

#include "graph/graph.h"
#include "kiln/storage.hpp"
#include "oneapi/dnnl/dnnl.hpp"
#include "ops/op_schema.h"
#include "runtime/kernel_provider.h"

namespace kiln::onednn {

const dnnl::engine& cpu_engine();

// The oneDNN element type of a Kiln dtype, if oneDNN computes with it.
std::optional<dnnl::memory::data_type> to_dnnl(DType dtype);
// The floating types oneDNN computes with (float32, bfloat16, float16).
bool is_float(DType dtype);
// oneDNN's generic implementations ("ref:") are plain loops, many times slower than Kiln's
// reference kernels: a maker that gets one declines the node.
bool is_generic_impl(const dnnl::primitive_desc_base& pd);

// A row-major descriptor for a tensor of `shape` and `dtype` (which to_dnnl must accept).
dnnl::memory::desc plain_desc(const Shape& shape, DType dtype);
dnnl::memory::desc plain_desc(const Shape& shape, dnnl::memory::data_type type);
dnnl::memory::dims to_dims(const Shape& shape);

// The primitive attributes every kernel starts from (user scratchpad; see above).
dnnl::primitive_attr base_attr();

// Appends the activation of a fused op (its `activation` and `activation_params` attributes,
// see src/ops/fused_activation.h) to `post` as an eltwise post-op.
void append_activation(dnnl::post_ops& post, const Attrs& attrs);

// The info (dtype, concrete shape) of a node's input or output as compile time knows it.
const ops::TensorInfo& input_info(const graph::Node& node, int i);
const ops::TensorInfo& output_info(const graph::Node& node, int i);
bool has_input(const graph::Node& node, int i);
// The input's value when it is a constant (an initializer), else nullptr.
const Tensor* constant_input(const graph::Node& node, int i);
// True when every input and output of the node has a dtype oneDNN computes with (a constant int64
// input aside, which a kernel maker reads at compile time: Reshape's shape).
bool all_dtypes_supported(const graph::Node& node);

// A memory object over a tensor's bytes (no copy); the tensor must outlive it.
dnnl::memory wrap(const dnnl::memory::desc& desc, const Tensor& tensor);
// A constant (`source`, over a tensor's bytes) reordered once into `desc`, the layout a primitive
// prefers; the returned memory owns its bytes.
dnnl::memory prepare_constant(const dnnl::memory& source, const dnnl::memory::desc& desc);

// A constant weight reordered into a primitive's layout, its bytes from Kiln's allocator: when
// the runtime lets the given weight go (KernelChoice::owned_constants), the next packed copy of
// the same size takes over its freed block instead of growing the process by another copy.
struct PackedConstant {
  std::shared_ptr<Storage> bytes;
  dnnl::memory memory;  // over `bytes`, in the primitive's layout
};
PackedConstant pack_constant(const Tensor& given, const dnnl::memory::desc& stored,
                             const dnnl::memory::desc& packed);
// How to rebuild the tensor `pack_constant` was given (shape and dtype of `given`, its bytes as
// `stored` describes them) from the packed copy: a reorder back, exact when both have the same
// element type; the function keeps the packed copy alive.
std::function<Tensor()> unpack_constant(const PackedConstant& packed, const Tensor& given,
                                        const dnnl::memory::desc& stored);

// Below this much arithmetic a primitive runs on the calling thread alone: an OpenMP team's fork
// and join cost more than a second core gives, and its threads spin after the call, starving
// Kiln's own threads (autograd, the NDArray engine) on a small machine.
inline constexpr double kSerialFlops = 8e6;
// What an element of a memory-bound op (eltwise, binary) weighs against that: 2 threads only pay
// off from about half a million elements.
inline constexpr double kFlopsPerStreamedElement = 16;
// The weight of a memory-bound primitive over `desc` (see kSerialFlops).
inline double streamed_flops(const dnnl::memory::desc& desc) {
  double elements = 1;
  for (int64_t d : desc.get_dims()) elements *= static_cast<double>(d);
  return elements * kFlopsPerStreamedElement;
}

// Makes the primitive descriptors created next on this thread for the team a primitive of `flops`
// runs with: one thread below kSerialFlops, else Kiln's count. oneDNN's JIT convolutions and
// matmuls split their work for the thread count OpenMP reports when the descriptor is made and
// start that many threads on every call, whatever the count at the call, so a serial one must be
// created for one thread (a kernel provider resets the count before each kernel maker).
void create_for(double flops);

// A primitive with its descriptor, made once at compile time; `serial`: run it on one thread. The
// descriptor of a serial one is created after create_for(flops) (see above).
template <typename P>
struct Prepared {
  typename P::primitive_desc pd;
  P primitive;
  bool serial = false;
  Prepared() = default;
  explicit Prepared(typename P::primitive_desc desc, double flops = kSerialFlops)
      : pd(std::move(desc)), primitive(pd), serial(flops < kSerialFlops) {}
};

// One argument of a primitive call: its DNNL_ARG_* id, how it is laid out, and its bytes.
struct Arg {
  int id;
  const dnnl::memory::desc& desc;
  const void* data;
};

// What one executor keeps for a oneDNN kernel (its KernelState): per primitive the kernel runs,
// the memory objects of the arguments, made on the first call and re-pointed only when a buffer
// moves (graph inputs and outputs are new each run), and the primitive's scratchpad. A call then
// costs no allocation and no descriptor work.
class PrimitiveBindings final : public ops::KernelState {
 public:
  void execute(const dnnl::primitive& primitive, const dnnl::primitive_desc_base& pd,
               std::span<const Arg> args, bool serial = false);

 private:
  struct Binding {
    dnnl_primitive_t primitive = nullptr;
    std::vector<int> ids;
    std::vector<const void*> data;
    std::vector<dnnl::memory> memories;  // per argument, then the scratchpad
    std::vector<dnnl_exec_arg_t> args;
    std::shared_ptr<Storage> scratchpad;
  };
  Binding& bind(const dnnl::primitive& primitive, const dnnl::primitive_desc_base& pd,
                std::span<const Arg> args);
  std::vector<Binding> bindings_;
};

// Executes `primitive` with `args` on the calling thread through the executor's bindings (a
// throwaway set when the kernel runs without a state) and waits for it.
void execute(ops::KernelContext& ctx, const dnnl::primitive& primitive, const dnnl::primitive_desc_base& pd,
             std::span<const Arg> args, bool serial = false);
template <typename P>
void execute(ops::KernelContext& ctx, const Prepared<P>& p, std::span<const Arg> args) {
  execute(ctx, p.primitive, p.pd, args, p.serial);
}
template <typename P>
void execute(ops::KernelContext& ctx, const Prepared<P>& p, std::initializer_list<Arg> args) {
  execute(ctx, p.primitive, p.pd, std::span<const Arg>(args.begin(), args.size()), p.serial);
}
// A reorder from one layout (and type) to another, prepared once.
struct Reorder {
  dnnl::memory::desc from, to;
  Prepared<dnnl::reorder> prepared;
};
Reorder make_reorder(const dnnl::memory::desc& from, const dnnl::memory::desc& to);
void reorder(ops::KernelContext& ctx, const Reorder& r, const void* from, void* to);

// Scratch bytes for a kernel call from Kiln's caching allocator, so that temporaries cost no
// allocation once the cache is warm; `owner` keeps them alive.
void* temporary_bytes(size_t bytes, std::shared_ptr<Storage>& owner);

// A value kept in a oneDNN layout between kernels of this backend (see runtime::ValueLayout):
// channel-blocked activations, in bf16 when the plan runs in bf16. Kernels that take such a value
// read its descriptor from their KernelQuery; the runtime reorders it to row-major for the rest.
class OnednnLayout final : public runtime::ValueLayout {
 public:
  OnednnLayout(dnnl::memory::desc desc, ops::TensorInfo logical)
      : desc_(std::move(desc)), logical_(std::move(logical)) {}
  const dnnl::memory::desc& desc() const { return desc_; }
  std::string describe() const override;
  size_t nbytes() const override { return desc_.get_size(); }
  bool same_as(const runtime::ValueLayout& other) const override;
  runtime::KernelChoice to_row_major() const override;

 private:
  dnnl::memory::desc desc_;
  ops::TensorInfo logical_;
};

// How input i of the queried node is stored: its oneDNN layout's descriptor, the row-major one
// when it has none, or nothing when another backend's layout (which this one cannot read).
std::optional<dnnl::memory::desc> stored_desc(const runtime::KernelQuery& query, int i);
// The element type a primitive computes a floating-point tensor of `dtype` in under the query's
// precision (bf16 or f16 for float32 when asked and this CPU computes it, else the tensor's own type).
dnnl::memory::data_type compute_type(const runtime::KernelQuery& query, DType dtype);

// Input i's descriptor when it is stored row-major in some float type: a plain Kiln tensor, or a
// value a bf16 or fp16 plan keeps in the narrower type between kernels that read it as it is;
// nothing for a blocked layout or another backend's. What kernels over whole rows (MatMul,
// LayerNormalization, Softmax) and elementwise kernels with broadcasting take.
std::optional<dnnl::memory::desc> stored_plain_desc(const runtime::KernelQuery& query, int i);
// How a kernel that may keep output i in the plan's compute type stores it: row-major in that
// type (`layout` set), so that the next kernels of this backend read it without a conversion, or
// row-major in the output's own dtype when it must be (a graph output), when the plan is float32,
// or when precision needs it (a value on its way to a Softmax or LayerNormalization).
dnnl::memory::desc plain_output_store(const runtime::KernelQuery& query, int i, runtime::LayoutPtr& layout);

// How output i is stored when the primitive writes `written`: in that layout when the runtime
// allows one (`layout` is then set, unless `written` is row-major), else row-major.
dnnl::memory::desc output_store(const runtime::KernelQuery& query, int i, const dnnl::memory::desc& written,
                                runtime::LayoutPtr& layout);

// A kernel argument stored one way (`stored`, the tensor's bytes) that the primitive reads or
// writes another (`used`): a reorder (prepared at compile time) through scratch bytes on every
// call when they differ.
struct Port {
  dnnl::memory::desc stored, used;
  std::optional<Reorder> reorder;  // input: stored -> used; output: used -> stored
};
Port input_port(const dnnl::memory::desc& stored, const dnnl::memory::desc& used);
Port output_port(const dnnl::memory::desc& stored, const dnnl::memory::desc& used);
// The bytes the primitive reads for an input port (reordered into `temp` when needed).
const void* read_port(ops::KernelContext& ctx, const Port& port, const Tensor& tensor,
                      std::shared_ptr<Storage>& temp);
// The bytes the primitive writes for an output port; `finish_write` moves them into the tensor.
void* write_port(const Port& port, const Tensor& tensor, std::shared_ptr<Storage>& temp);
void finish_write(ops::KernelContext& ctx, const Port& port, const void* written, const Tensor& tensor);

// Makes the kernel of one node, or returns an empty function to leave the node to the next
// provider (an attribute or shape this backend does not cover). A row-major maker sees only
// row-major inputs and writes row-major outputs; a layout maker answers the whole query.
using RowMajorKernelMaker = std::function<ops::KernelFn(const graph::Node& node, const Attrs& attrs)>;
using KernelMaker = std::function<runtime::KernelChoice(const runtime::KernelQuery& query)>;

class KernelMakers {
 public:
  static KernelMakers& global();
  int add(const std::string& op, KernelMaker maker);
  int add_row_major(const std::string& op, RowMajorKernelMaker maker);
  const KernelMaker* find(const std::string& op) const;

 private:
  std::unordered_map<std::string, KernelMaker> makers_;
};

}  // namespace kiln::onednn

// Registers a kernel maker for an op at start-up: KILN_ONEDNN_KERNEL(Softmax, make_softmax_kernel)
// for a row-major maker, KILN_ONEDNN_LAYOUT_KERNEL(Conv, make_conv_kernel) for a layout maker.
#define KILN_ONEDNN_KERNEL(Op, maker)                                                  \
  [[maybe_unused]] static const int KILN_OP_CONCAT(kiln_onednn_kernel_, __COUNTER__) = \
      ::kiln::onednn::KernelMakers::global().add_row_major(#Op, maker)
#define KILN_ONEDNN_LAYOUT_KERNEL(Op, maker)                                           \
  [[maybe_unused]] static const int KILN_OP_CONCAT(kiln_onednn_kernel_, __COUNTER__) = \
      ::kiln::onednn::KernelMakers::global().add(#Op, maker)
