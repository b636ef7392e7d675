#include "kiln/device.hpp"

#include <dlfcn.h>

namespace kiln {

std::string Device::to_string() const {
  return (is_cpu() ? "cpu(" : "gpu(") + std::to_string(index) + ")";
}

namespace {

// The CUDA driver API is loaded with dlopen so that a build without CUDA, or a machine
// without a driver, still answers: it simply has no GPUs.
int count_cuda_devices() {
  void* lib = dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL);
  if (!lib) return 0;
  using InitFn = int (*)(unsigned int);
  using CountFn = int (*)(int*);
  auto init = reinterpret_cast<InitFn>(dlsym(lib, "cuInit"));
  auto count = reinterpret_cast<CountFn>(dlsym(lib, "cuDeviceGetCount"));
  int n = 0;
  if (!init || !count || init(0) != 0 || count(&n) != 0) n = 0;
  return n;  // the library stays loaded: the driver does not support being unloaded after cuInit
}

}  // namespace

int num_gpus() {
  static const int n = count_cuda_devices();
  return n;
}

}  // namespace kiln
