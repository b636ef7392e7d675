// The reference provider: each op's own reference kernel, the oracle other backends are
// tested against.
#include "runtime/kernel_provider.h"

namespace kiln::runtime {

namespace {

class ReferenceKernels final : public KernelProvider {
 public:
  std::string name() const override { return "reference"; }
  ops::KernelFn choose_kernel(const graph::Node& node, const Attrs&) const override {
    return node.schema().reference_kernel();
  }
};

}  // namespace

const KernelProvider& reference_kernels() {
  static const ReferenceKernels provider;
  return provider;
}

}  // namespace kiln::runtime
