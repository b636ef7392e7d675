// The oneDNN kernel provider: asks the kernel maker registered for a node's op (one file per op
// family in this folder) and leaves the node to the reference kernels when there is none, when a
// dtype is one oneDNN does not compute with, or when oneDNN has no implementation for the case.
#include <omp.h>

#include "backends/onednn/onednn_common.h"
#include "kiln/threading.hpp"
#include "runtime/kernel_provider.h"

namespace kiln::onednn {
namespace {

class OnednnKernels final : public runtime::KernelProvider {
 public:
  std::string name() const override { return "onednn"; }

  ops::KernelFn choose_kernel(const graph::Node& node, const Attrs& attrs) const override {
    runtime::KernelQuery query{node, attrs, std::vector<runtime::LayoutPtr>(node.inputs.size()),
                               std::vector<bool>(node.outputs.size(), true)};
    return choose(query).kernel;
  }

  runtime::KernelChoice choose(const runtime::KernelQuery& query) const override {
    const KernelMaker* maker = KernelMakers::global().find(query.node.op);
    if (maker == nullptr || !all_dtypes_supported(query.node)) return {};
    // A primitive splits its work for the thread count OpenMP reports when it is created and
    // starts that many threads on every call, whatever the count at the call: it must be made
    // for Kiln's (a compiling thread that never ran a kernel reports all cores).
    omp_set_num_threads(num_threads());
    try {
      runtime::KernelChoice choice = (*maker)(query);
      if (choice) choice.make_state = [] { return std::make_unique<PrimitiveBindings>(); };
      return choice;
    } catch (const dnnl::error&) {
      // "could not create a primitive descriptor": no implementation for this case.
      return {};
    }
  }
};

const OnednnKernels provider;
[[maybe_unused]] const int registered = runtime::register_kernel_provider(provider, /*priority=*/100);

}  // namespace
}  // namespace kiln::onednn
