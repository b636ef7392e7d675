// How compile() picks the kernel of each step. A backend plugs in by implementing
// KernelProvider; compile asks the providers of its CompileOptions in order and falls back to
// the op's reference kernel, so every op with a reference kernel always runs.
#pragma once

#include <string>
#include <vector>

#include "graph/graph.h"
#include "ops/op_schema.h"

namespace kiln::runtime {

class KernelProvider {
 public:
  virtual ~KernelProvider() = default;
  virtual std::string name() const = 0;
  // The kernel for `node` (its attributes already bound into `attrs`, its input and output
  // infos known and concrete), or an empty function when this provider does not support it.
  // Called once per node at compile time; the kernel it returns may be called concurrently by
  // several executors, so it must not mutate shared state.
  virtual ops::KernelFn choose_kernel(const graph::Node& node, const Attrs& attrs) const = 0;
};

// The reference CPU kernels registered with each op's schema.
const KernelProvider& reference_kernels();

// Backends (oneDNN, ...) register their providers at start-up, each with a priority; a plan
// compiled with registered_kernel_providers() asks them from the highest priority down before
// falling back to the reference kernels.
int register_kernel_provider(const KernelProvider& provider, int priority);
std::vector<const KernelProvider*> registered_kernel_providers();

}  // namespace kiln::runtime
