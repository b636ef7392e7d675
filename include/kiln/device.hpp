// Device: where a tensor's memory lives and where its ops run.
#pragma once

#include <ostream>
#include <string>

namespace kiln {

enum class DeviceType { kCPU, kGPU };

struct Device {
  DeviceType type = DeviceType::kCPU;
  int index = 0;

  bool is_cpu() const { return type == DeviceType::kCPU; }
  bool is_gpu() const { return type == DeviceType::kGPU; }
  std::string to_string() const;  // "cpu(0)", "gpu(1)"
  bool operator==(const Device& o) const { return type == o.type && index == o.index; }
  bool operator!=(const Device& o) const { return !(*this == o); }
};

inline Device cpu(int index = 0) {
  return Device{DeviceType::kCPU, index};
}
inline Device gpu(int index = 0) {
  return Device{DeviceType::kGPU, index};
}

// Number of CUDA devices visible to this process: 0 when there is no driver or no GPU.
// It asks the driver at run time, so it works (and says 0) on machines without CUDA.
int num_gpus();

inline std::ostream& operator<<(std::ostream& os, const Device& d) {
  return os << d.to_string();
}

}  // namespace kiln
