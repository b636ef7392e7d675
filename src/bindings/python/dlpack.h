// DLPack interchange (https://dmlc.github.io/dlpack): the ABI structures (version 0.8, the one
// numpy and PyTorch exchange through __dlpack__) and Kiln's export and import.
#pragma once

#include <pybind11/pybind11.h>

#include <cstdint>

#include <kiln/ndarray.hpp>

namespace kiln::python {

enum DLDeviceType : int32_t { kDLCPU = 1, kDLCUDA = 2 };
struct DLDevice {
  DLDeviceType device_type;
  int32_t device_id;
};
enum DLDataTypeCode : uint8_t {
  kDLInt = 0,
  kDLUInt = 1,
  kDLFloat = 2,
  kDLBfloat = 4,
  kDLComplex = 5,
  kDLBool = 6
};
struct DLDataType {
  uint8_t code;
  uint8_t bits;
  uint16_t lanes;
};
struct DLTensor {
  void* data;
  DLDevice device;
  int32_t ndim;
  DLDataType dtype;
  int64_t* shape;
  int64_t* strides;  // in elements; null means row-major
  uint64_t byte_offset;
};
struct DLManagedTensor {
  DLTensor dl_tensor;
  void* manager_ctx;
  void (*deleter)(DLManagedTensor* self);
};

// A "dltensor" capsule viewing the array's memory (no copy), after waiting for pending writes.
pybind11::capsule to_dlpack(const NDArray& array);
// An NDArray viewing the memory of a DLPack capsule or of an object with __dlpack__ (no copy);
// the producer's deleter runs when the last Kiln view lets go.
NDArray from_dlpack(const pybind11::object& source);

}  // namespace kiln::python
