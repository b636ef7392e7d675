// How compile() picks the kernel of each step. A backend plugs in by implementing
// KernelProvider; compile asks the providers of its CompileOptions in order and falls back to
// the op's reference kernel, so every op with a reference kernel always runs.
#pragma once

#include <functional>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "graph/graph.h"
#include "ops/op_schema.h"

namespace kiln::runtime {

class ValueLayout;
using LayoutPtr = std::shared_ptr<const ValueLayout>;  // null: row-major

bool same_layout(const LayoutPtr& a, const LayoutPtr& b);

// The arithmetic a plan may use for floating-point tensors: fp32, or bf16/fp16 with fp32
// accumulation, where a backend supports it (it keeps fp32 where it does not).
enum class Precision { kFloat32, kBFloat16, kFloat16 };
Precision parse_precision(const std::string& text);  // "fp32", "bf16", "fp16"
const char* precision_name(Precision precision);

// What compile() asks a provider about one node.
struct KernelQuery {
  const graph::Node& node;
  const Attrs& attrs;                    // bound
  std::vector<LayoutPtr> input_layouts;  // one per input (null for row-major or a missing input)
  std::vector<bool> output_row_major;    // per output: must be row-major (a graph output)
  Precision precision = Precision::kFloat32;
};

// Makes the state one executor keeps for a kernel (see ops::KernelState).
using KernelStateFactory = std::function<std::unique_ptr<ops::KernelState>()>;

// A provider's answer: the kernel, the layout each output is written in, the kernel's
// per-executor state, and the input whose buffer output 0 may take over.
struct KernelChoice {
  ops::KernelFn kernel;
  std::vector<LayoutPtr> output_layouts;  // empty: all row-major
  KernelStateFactory make_state;          // empty: the kernel keeps no state
  // >= 0: output 0 may be written into this input's buffer (when the input has the output's
  // dtype, shape and layout and no later step reads it): the kernel reads each element of the
  // input before it writes that element, as an int8 convolution accumulating its residual does.
  int inplace_input = -1;
  // Constant inputs the kernel keeps a copy of its own of (a weight packed for its primitive) and
  // never reads as given, each with how to rebuild the given tensor exactly from that copy: see
  // compile's ConstantReleaser.
  std::vector<std::pair<int, std::function<Tensor()>>> owned_constants;
  explicit operator bool() const { return static_cast<bool>(kernel); }
};

// How a backend stores a value in its own layout instead of Kiln's row-major one: oneDNN's
// blocked activations (channels in blocks of 16), possibly in a narrower float type when the plan
// runs in bf16. The value keeps its logical dtype and shape; only the kernels of the backend that
// made the layout read its bytes. The runtime sees the size, and converts the value to row-major
// (with a step the layout supplies) before any kernel that does not take the layout reads it.
class ValueLayout {
 public:
  virtual ~ValueLayout() = default;
  virtual std::string describe() const = 0;  // for step labels and errors: "oneDNN nChw16c f32"
  virtual size_t nbytes() const = 0;
  virtual bool same_as(const ValueLayout& other) const = 0;
  // A kernel with one input (this layout) and one output (row-major) copying the value across.
  virtual KernelChoice to_row_major() const = 0;
};

class KernelProvider {
 public:
  virtual ~KernelProvider() = default;
  virtual std::string name() const = 0;
  // The kernel for `node` (its attributes already bound into `attrs`, its input and output
  // infos known and concrete), or an empty function when this provider does not support it.
  // Called once per node at compile time; the kernel it returns may be called concurrently by
  // several executors, so it must not mutate shared state.
  virtual ops::KernelFn choose_kernel(const graph::Node& node, const Attrs& attrs) const = 0;
  // The layout-aware form compile() calls. By default a provider takes row-major inputs only
  // and writes row-major outputs, through choose_kernel.
  virtual KernelChoice choose(const KernelQuery& query) const;
};

// The reference CPU kernels registered with each op's schema.
const KernelProvider& reference_kernels();

// Backends (oneDNN, ...) register their providers at start-up, each with a priority; a plan
// compiled with registered_kernel_providers() asks them from the highest priority down before
// falling back to the reference kernels.
int register_kernel_provider(const KernelProvider& provider, int priority);
std::vector<const KernelProvider*> registered_kernel_providers();

}  // namespace kiln::runtime
