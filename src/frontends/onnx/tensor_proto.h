// ONNX TensorProto <-> kiln::Tensor: initializers, Constant values, the test data's .pb files.
//
// Reading never trusts the file: the element type must be one Kiln has, dims must be
// non-negative with a product that fits, and the stored bytes (raw_data, the typed repeated
// fields, or an external data file) must hold exactly that many elements; all of this is checked
// before the tensor is allocated, so a declared size of terabytes is an error, not an allocation.
#pragma once

#include <string>

#include "kiln/tensor.hpp"
#include "onnx/onnx_pb.h"

namespace kiln::onnx {

// Where a tensor's external data may be read from: the model's folder. External locations
// must be relative paths that stay inside it.
struct TensorSource {
  std::string base_dir;  // empty: external data is refused
  std::string where;     // names the tensor in errors ("initializer 'conv1.weight'")
};

// The folder external data of the file at `path` is read from: its parent, "." for a bare file
// name (never empty, which would refuse external data).
std::string folder_of(const std::string& path);

Tensor tensor_from_proto(const ::onnx::TensorProto& proto, const TensorSource& source);
// The same, but a tensor held in raw_data takes the proto's bytes over instead of copying them (a
// little-endian host reads raw_data as it is), aligned as the allocator aligns, leaving raw_data
// empty: a model's weights are then never in memory twice, not even one tensor's for a moment
// (BERT-base's 94 MB word embeddings beside the rest of the parsed file). A string with no room to
// align its bytes in is copied.
Tensor take_tensor_from_proto(::onnx::TensorProto& proto, const TensorSource& source);
// Always stores raw_data (little-endian, as ONNX specifies).
::onnx::TensorProto tensor_to_proto(const Tensor& tensor, const std::string& name);

// A serialized TensorProto file, as in the ONNX backend test data (input_0.pb, output_0.pb).
Tensor load_tensor_pb(const std::string& path);
// What ONNX's test data holds in a file of a value that is not a plain tensor.
enum class ValueFile { kTensor, kSequence, kOptional };
// A value file of ONNX's test data: a TensorProto, a SequenceProto of tensors (a Tensor::sequence
// of `element_dtype`, which an empty one does not say), or an OptionalProto of either (an absent
// value is an undefined Tensor).
Tensor load_value_pb(const std::string& path, ValueFile kind, DType element_dtype);
void save_tensor_pb(const std::string& path, const Tensor& tensor, const std::string& name);

}  // namespace kiln::onnx
