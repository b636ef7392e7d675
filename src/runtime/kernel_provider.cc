// The reference provider (each op's own reference kernel, the oracle other backends are tested
// against) and the registry of backend providers.
#include "runtime/kernel_provider.h"

#include <algorithm>

namespace kiln::runtime {

namespace {

class ReferenceKernels final : public KernelProvider {
 public:
  std::string name() const override { return "reference"; }
  ops::KernelFn choose_kernel(const graph::Node& node, const Attrs&) const override {
    return node.schema().reference_kernel();
  }
};

struct RegisteredProvider {
  const KernelProvider* provider;
  int priority;
};

std::vector<RegisteredProvider>& provider_registry() {
  static std::vector<RegisteredProvider> registry;
  return registry;
}

}  // namespace

int register_kernel_provider(const KernelProvider& provider, int priority) {
  auto& registry = provider_registry();
  registry.push_back({&provider, priority});
  std::stable_sort(
      registry.begin(), registry.end(),
      [](const RegisteredProvider& a, const RegisteredProvider& b) { return a.priority > b.priority; });
  return 0;
}

std::vector<const KernelProvider*> registered_kernel_providers() {
  std::vector<const KernelProvider*> out;
  for (const auto& entry : provider_registry()) out.push_back(entry.provider);
  return out;
}

const KernelProvider& reference_kernels() {
  static const ReferenceKernels provider;
  return provider;
}

}  // namespace kiln::runtime
