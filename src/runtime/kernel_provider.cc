// The reference provider (each op's own reference kernel, the oracle other backends are tested
// against) and the registry of backend providers.
#include "runtime/kernel_provider.h"

#include <algorithm>

#include "kiln/error.hpp"

namespace kiln::runtime {

bool same_layout(const LayoutPtr& a, const LayoutPtr& b) {
  if (a == nullptr || b == nullptr) return a == b;
  return a == b || a->same_as(*b);
}

Precision parse_precision(const std::string& text) {
  if (text == "fp32") return Precision::kFloat32;
  if (text == "bf16") return Precision::kBFloat16;
  if (text == "fp16") return Precision::kFloat16;
  raise(ErrorCode::kInvalidArgument, "precision: expected fp32, bf16 or fp16, got '", text, "'");
}

const char* precision_name(Precision precision) {
  switch (precision) {
    case Precision::kFloat32:
      return "fp32";
    case Precision::kBFloat16:
      return "bf16";
    case Precision::kFloat16:
      return "fp16";
  }
  return "?";
}

KernelChoice KernelProvider::choose(const KernelQuery& query) const {
  for (const LayoutPtr& layout : query.input_layouts)
    if (layout != nullptr) return {};
  return {choose_kernel(query.node, query.attrs), {}};
}

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
