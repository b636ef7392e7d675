// DLPack export and import of NDArrays without copying.
#include "dlpack.h"

#include <vector>

#include <kiln/error.hpp>

namespace kiln::python {

namespace py = pybind11;

namespace {

// What an exported tensor keeps alive: the array (hence its storage) and its shape and strides.
struct ExportContext {
  NDArray array;
  std::vector<int64_t> shape, strides;
  DLManagedTensor managed{};
};

DLDataType dl_dtype(DType dtype) {
  const auto bits = static_cast<uint8_t>(dtype_size(dtype) * 8);
  switch (dtype) {
    case DType::kFloat32:
    case DType::kFloat64:
    case DType::kFloat16:
      return {kDLFloat, bits, 1};
    case DType::kBFloat16:
      return {kDLBfloat, bits, 1};
    case DType::kInt8:
    case DType::kInt16:
    case DType::kInt32:
    case DType::kInt64:
      return {kDLInt, bits, 1};
    case DType::kUInt8:
    case DType::kUInt16:
    case DType::kUInt32:
    case DType::kUInt64:
      return {kDLUInt, bits, 1};
    case DType::kBool:
      return {kDLBool, bits, 1};
    case DType::kComplex64:
    case DType::kComplex128:
      return {kDLComplex, bits, 1};
    default:
      break;
  }
  raise(ErrorCode::kUnsupported, "DLPack: ", dtype_name(dtype),
        " is a storage type without a DLPack code here; cast it to a wider type first");
}

DType kiln_dtype(const DLDataType& t) {
  KILN_CHECK(t.lanes == 1, ErrorCode::kUnsupported, "from_dlpack: vector types (lanes ", t.lanes,
             ") are not supported");
  const int code = t.code, bits = t.bits;
  if (code == kDLFloat && bits == 32) return DType::kFloat32;
  if (code == kDLFloat && bits == 64) return DType::kFloat64;
  if (code == kDLFloat && bits == 16) return DType::kFloat16;
  if (code == kDLBfloat && bits == 16) return DType::kBFloat16;
  if (code == kDLInt && bits == 8) return DType::kInt8;
  if (code == kDLInt && bits == 32) return DType::kInt32;
  if (code == kDLInt && bits == 64) return DType::kInt64;
  if (code == kDLInt && bits == 16) return DType::kInt16;
  if (code == kDLUInt && bits == 8) return DType::kUInt8;
  if (code == kDLUInt && bits == 16) return DType::kUInt16;
  if (code == kDLUInt && bits == 32) return DType::kUInt32;
  if (code == kDLUInt && bits == 64) return DType::kUInt64;
  if (code == kDLBool && bits == 8) return DType::kBool;
  if (code == kDLComplex && bits == 64) return DType::kComplex64;
  if (code == kDLComplex && bits == 128) return DType::kComplex128;
  raise(ErrorCode::kUnsupported, "from_dlpack: DLPack type code ", code, " with ", bits,
        " bits has no Kiln dtype");
}

void delete_export(DLManagedTensor* self) {
  delete static_cast<ExportContext*>(self->manager_ctx);
}

}  // namespace

py::capsule to_dlpack(const NDArray& array) {
  {
    py::gil_scoped_release release;
    array.wait_to_write();  // the consumer may read and write the memory from now on
  }
  auto* ctx = new ExportContext{array, array.shape().dims(), array.view().strides(), {}};
  DLTensor& t = ctx->managed.dl_tensor;
  t.data = array.size() ? array.view().raw_data() : nullptr;
  t.device = {array.device().is_cpu() ? kDLCPU : kDLCUDA, array.device().index};
  t.ndim = array.ndim();
  t.dtype = dl_dtype(array.dtype());
  t.shape = ctx->shape.data();
  t.strides = ctx->strides.data();
  t.byte_offset = 0;
  ctx->managed.manager_ctx = ctx;
  ctx->managed.deleter = &delete_export;
  // A capsule nobody consumed still owns the tensor; a consumer renames it "used_dltensor".
  return py::capsule(&ctx->managed, "dltensor", [](PyObject* capsule) {
    if (PyCapsule_IsValid(capsule, "dltensor")) {
      auto* managed = static_cast<DLManagedTensor*>(PyCapsule_GetPointer(capsule, "dltensor"));
      managed->deleter(managed);
    }
  });
}

NDArray from_dlpack(const py::object& source) {
  py::object capsule = source;
  if (py::hasattr(source, "__dlpack__")) capsule = source.attr("__dlpack__")();
  KILN_CHECK(PyCapsule_IsValid(capsule.ptr(), "dltensor"), ErrorCode::kInvalidArgument,
             "from_dlpack: expected an object with __dlpack__ or an unused 'dltensor' capsule");
  auto* managed = static_cast<DLManagedTensor*>(PyCapsule_GetPointer(capsule.ptr(), "dltensor"));
  const DLTensor& t = managed->dl_tensor;
  KILN_CHECK(t.device.device_type == kDLCPU, ErrorCode::kUnsupported,
             "from_dlpack: only CPU memory can be viewed, got DLPack device type ", t.device.device_type);
  const DType dtype = kiln_dtype(t.dtype);
  std::vector<int64_t> dims(t.shape, t.shape + t.ndim);
  const Shape shape(dims);
  std::vector<int64_t> strides =
      t.strides ? std::vector<int64_t>(t.strides, t.strides + t.ndim) : contiguous_strides(shape);
  int64_t extent = shape.numel() > 0 ? 1 : 0;
  for (int i = 0; i < t.ndim; ++i) {
    KILN_CHECK(strides[static_cast<size_t>(i)] >= 0 || dims[static_cast<size_t>(i)] <= 1,
               ErrorCode::kUnsupported, "from_dlpack: negative strides are not supported");
    if (shape.numel() > 0) extent += (dims[static_cast<size_t>(i)] - 1) * strides[static_cast<size_t>(i)];
  }
  PyCapsule_SetName(capsule.ptr(), "used_dltensor");
  void* data = static_cast<char*>(t.data) + t.byte_offset;
  auto storage =
      Storage::wrap(data, static_cast<size_t>(extent) * dtype_size(dtype), cpu(), [managed](void*) {
        // Producers' deleters may touch Python objects.
        if (!Py_IsInitialized()) return;
        py::gil_scoped_acquire acquire;
        if (managed->deleter) managed->deleter(managed);
      });
  return NDArray(Tensor(std::move(storage), shape, dtype, std::move(strides), 0));
}

}  // namespace kiln::python
