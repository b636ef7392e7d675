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

// Makes the kernel of one node, or returns an empty function to leave the node to the next
// provider (an attribute or shape this backend does not cover).
using KernelMaker = std::function<ops::KernelFn(const graph::Node& node, const Attrs& attrs)>;

class KernelMakers {
 public:
  static KernelMakers& global();
  int add(const std::string& op, KernelMaker maker);
  const KernelMaker* find(const std::string& op) const;

 private:
  std::unordered_map<std::string, KernelMaker> makers_;
};

}  // namespace kiln::onednn

// Registers a kernel maker for an op at start-up: KILN_ONEDNN_KERNEL(Conv, make_conv_kernel);
#define KILN_ONEDNN_KERNEL(Op, maker)                                                  \
  [[maybe_unused]] static const int KILN_OP_CONCAT(kiln_onednn_kernel_, __COUNTER__) = \
      ::kiln::onednn::KernelMakers::global().add(#Op, maker)
