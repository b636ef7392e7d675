// What this build has, read from the registries filled at start-up: a backend is there when its
// kernel provider registered itself. Parts Kiln does not have yet are reported as absent.
#include "kiln/version.hpp"
#include "runtime/kernel_provider.h"

namespace kiln {

std::map<std::string, bool> build_features() {
  std::map<std::string, bool> features = {
      {"onednn", false}, {"cuda", false}, {"java", false}, {"server", false}};
  for (const runtime::KernelProvider* provider : runtime::registered_kernel_providers())
    if (features.count(provider->name())) features[provider->name()] = true;
  return features;
}

std::string version_text() {
  std::string parts;
  for (const auto& [name, present] : build_features())
    parts += (parts.empty() ? "" : ", ") + name + ": " + (present ? "yes" : "no");
  return std::string("kiln ") + kVersion + " (" + parts + ")";
}

}  // namespace kiln
