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
// True when every input and output of the node has a dtype oneDNN computes with.
bool all_dtypes_supported(const graph::Node& node);

// A memory object over a tensor's bytes (no copy); the tensor must outlive it.
dnnl::memory wrap(const dnnl::memory::desc& desc, const Tensor& tensor);
// A constant (`source`, over a tensor's bytes) reordered once into `desc`, the layout a primitive
// prefers; the returned memory owns its bytes.
dnnl::memory prepare_constant(const dnnl::memory& source, const dnnl::memory::desc& desc);

// A memory of `desc` on bytes from Kiln's caching allocator, so that temporaries cost no
// allocation once the cache is warm; `owner` keeps the bytes alive.
dnnl::memory temporary_memory(const dnnl::memory::desc& desc, std::shared_ptr<Storage>& owner);
// Copies `from` into `to`, converting layout (and type), on the calling thread.
void reorder(dnnl::memory& from, dnnl::memory& to);

// Executes `primitive` with `args` on the calling thread, giving it a scratchpad of the size
// `pd` asks for, and waits for it.
void execute(const dnnl::primitive& primitive, const dnnl::primitive_desc_base& pd,
             std::unordered_map<int, dnnl::memory>& args);

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
  ops::KernelFn to_row_major() const override;

 private:
  dnnl::memory::desc desc_;
  ops::TensorInfo logical_;
};

// How input i of the queried node is stored: its oneDNN layout's descriptor, the row-major one
// when it has none, or nothing when another backend's layout (which this one cannot read).
std::optional<dnnl::memory::desc> stored_desc(const runtime::KernelQuery& query, int i);
// The element type a primitive computes a floating-point tensor of `dtype` in under the query's
// precision (bf16 or f16 for float32 when asked, else the tensor's own type).
dnnl::memory::data_type compute_type(const runtime::KernelQuery& query, DType dtype);

// How output i is stored when the primitive writes `written`: in that layout when the runtime
// allows one (`layout` is then set, unless `written` is row-major), else row-major.
dnnl::memory::desc output_store(const runtime::KernelQuery& query, int i, const dnnl::memory::desc& written,
                                runtime::LayoutPtr& layout);

// A kernel argument stored one way (`stored`, the tensor's bytes) that the primitive reads or
// writes another (`used`): a reorder through a temporary on every call when they differ.
struct Port {
  dnnl::memory::desc stored, used;
  bool reorders() const { return stored != used; }
};
// The memory the primitive reads for an input port (reordered into `temp` when needed).
dnnl::memory read_port(const Port& port, const Tensor& tensor, std::shared_ptr<Storage>& temp);
// The memory the primitive writes for an output port; `finish_write` moves it into the tensor.
dnnl::memory write_port(const Port& port, const Tensor& tensor, std::shared_ptr<Storage>& temp);
void finish_write(const Port& port, dnnl::memory& written, const Tensor& tensor);

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
