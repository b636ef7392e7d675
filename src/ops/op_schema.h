// OpSchema: everything Kiln knows about one op, declared once in its family's file: inputs,
// outputs, typed attributes with defaults and validation, shape and dtype inference, the
// reference CPU kernel, and the gradient slot. ONNX semantics (newest opset) are canonical.
//
//   KILN_REGISTER_OP(Relu)
//       .doc("max(x, 0)")
//       .input("X").output("Y")
//       .infer(infer_same_as_input)
//       .kernel(relu_kernel);
#pragma once

#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "kiln/attrs.hpp"
#include "kiln/error.hpp"
#include "kiln/tensor.hpp"

namespace kiln::ops {

class OpSchema;

// What flows along an edge: a tensor, or a sequence of tensors (ONNX's sequence type, a Tensor
// made by Tensor::sequence).
enum class ValueKind : uint8_t { kTensor, kSequence };

// What shape inference knows about a value: its kind, its dtype and (possibly partial) shape, and
// whether it may be absent (ONNX's optional type; an absent value is an undefined Tensor).
struct TensorInfo {
  DType dtype = DType::kFloat32;  // a sequence's: its elements' type
  Shape shape;                    // a sequence's: not used (its elements' shapes are its value's)
  ValueKind kind = ValueKind::kTensor;
  bool optional = false;

  // A tensor that is always there: what plans are compiled for and most ops take.
  bool is_plain() const { return kind == ValueKind::kTensor && !optional; }
};

// What a value at run time is: a tensor's dtype and shape, or a sequence's element type.
TensorInfo info_of(const Tensor& value);
// "a sequence of float32 tensors", "an optional float32 (2, 3)", "float32 (2, 3)".
std::string describe_info(const TensorInfo& info);
// The output tensor a kernel writes into, allocated for `info`; undefined for a sequence or an
// optional value, which the kernel makes itself.
Tensor allocate_output(const TensorInfo& info);

// kVariadic: one or more (ONNX's variadic inputs); kVariadicOrNone: any number, none too (the
// values a control-flow node's subgraphs read from outside, Loop's loop-carried values).
enum class Arity { kRequired, kOptional, kVariadic, kVariadicOrNone };
inline bool is_variadic(Arity arity) {
  return arity == Arity::kVariadic || arity == Arity::kVariadicOrNone;
}

struct InputSpec {
  std::string name;
  Arity arity = Arity::kRequired;
  bool value_sets_shape = false;  // shape inference reads this input's values (e.g. Reshape's shape)
};

struct OutputSpec {
  std::string name;
  Arity arity = Arity::kRequired;
};

// Throws kiln::Error when the value is not acceptable; `what` names the attribute.
using AttrValidator = std::function<void(const AttrValue& value, const std::string& what)>;

struct AttrSpec {
  std::string name;
  AttrType type;
  std::optional<AttrValue> default_value;  // none: the attribute is required or optional
  bool required = false;
  AttrValidator validate;
};

class InferContext {
 public:
  InferContext(const OpSchema& schema, const Attrs& attrs, std::vector<std::optional<TensorInfo>> inputs,
               std::vector<const Tensor*> values, int num_outputs);

  int num_inputs() const { return static_cast<int>(inputs_.size()); }
  bool has_input(int i) const { return i < num_inputs() && inputs_[static_cast<size_t>(i)].has_value(); }
  const TensorInfo& input(int i) const;
  const Shape& shape(int i) const { return input(i).shape; }
  DType dtype(int i) const { return input(i).dtype; }
  // The data of an input whose values decide the output shape; throws kUnsupported when unknown.
  bool has_value(int i) const;
  const Tensor& value(int i) const;
  const Attrs& attrs() const { return attrs_; }
  // The number of outputs the caller asked for, or -1 for the op's default.
  int num_outputs_requested() const { return num_outputs_; }
  const OpSchema& schema() const { return schema_; }

  std::string input_label(int i) const;   // "input 1 (B)"
  std::string output_label(int i) const;  // "output 0 (Y)"

 private:
  const OpSchema& schema_;
  const Attrs& attrs_;
  std::vector<std::optional<TensorInfo>> inputs_;
  std::vector<const Tensor*> values_;
  int num_outputs_;
};

// What a kernel keeps between the calls of one executor (a backend's objects bound to that
// executor's buffers, say); made by the kernel's provider, one per executor, never shared.
class KernelState {
 public:
  virtual ~KernelState() = default;
};

// What a reference kernel sees: contiguous input tensors (undefined for a missing optional
// input) and output tensors already allocated with the inferred shapes and dtypes.
struct KernelContext {
  const Attrs& attrs;
  const std::vector<Tensor>& inputs;
  std::vector<Tensor>& outputs;
  KernelState* state = nullptr;  // the executor's state for this kernel, if its provider makes one
  // For an op that draws random numbers (OpSchema::draws_random): the seed the caller fixed for
  // this call, else the kernel takes the next of kiln::random's sequence when it runs.
  std::optional<uint64_t> call_seed;

  int num_inputs() const { return static_cast<int>(inputs.size()); }
  int num_outputs() const { return static_cast<int>(outputs.size()); }
  bool has_input(int i) const { return i < num_inputs() && inputs[static_cast<size_t>(i)].defined(); }
  const Tensor& input(int i) const { return inputs[static_cast<size_t>(i)]; }
  Tensor& output(int i) { return outputs[static_cast<size_t>(i)]; }
};

// The gradient rule of an op, as a function of its inputs, outputs and output gradients, built
// from calls of other ops (gradient.h). Declared here so an op's definition stays in one place.
class GradientContext;
using GradientFn = std::function<void(GradientContext&)>;

using InferFn = std::function<std::vector<TensorInfo>(InferContext&)>;
using KernelFn = std::function<void(KernelContext&)>;

class OpSchema {
 public:
  explicit OpSchema(std::string name) : name_(std::move(name)) {}

  OpSchema& doc(std::string text);
  OpSchema& input(std::string name, Arity arity = Arity::kRequired);
  // An input whose values decide the output shape (Reshape's shape, Expand's shape, ...).
  OpSchema& shape_input(std::string name, Arity arity = Arity::kRequired);
  OpSchema& output(std::string name, Arity arity = Arity::kRequired);
  OpSchema& attr(std::string name, AttrType type, AttrValue default_value, AttrValidator validate = {});
  OpSchema& required_attr(std::string name, AttrType type, AttrValidator validate = {});
  // An attribute with no default whose absence the op handles itself (check attrs.has()).
  OpSchema& optional_attr(std::string name, AttrType type, AttrValidator validate = {});
  OpSchema& infer(InferFn fn);
  OpSchema& kernel(KernelFn fn);
  OpSchema& gradient(GradientFn fn);
  // Adds a group of declarations several ops share (conv_util.h's conv_window_attrs).
  OpSchema& with(void (*declare)(OpSchema&)) {
    declare(*this);
    return *this;
  }
  // Marks an op whose kernel reads element i of every input before writing element i of the
  // output, so an output may share storage with an input of the same shape (in-place updates).
  OpSchema& elementwise();
  // Marks an op whose output 0 is input 0's bytes under another shape (Reshape, Flatten, Squeeze,
  // Unsqueeze), so the output may take over the input's storage and its kernel copy nothing.
  OpSchema& same_bytes();
  // Marks an op that draws random numbers. Unless its attributes seed it, its kernel takes the
  // next seed of kiln::random's sequence; the NDArray API takes that seed when the call is made
  // (KernelContext::call_seed), so that asynchronous execution keeps the draws in program order.
  OpSchema& draws_random();
  // Marks an op that reads only its inputs' shapes and dtypes, never their values (Shape, Size):
  // a value it computes that decides a shape downstream never depends on its inputs' data.
  OpSchema& reads_shapes_only();
  // Marks an op whose output shapes depend on the values of its data inputs (NonZero,
  // NonMaxSuppression, Compress, Unique): those inputs are shape inputs, but they are not small
  // values a plan can be keyed by; the runtime runs the node, learns the sizes, and plans the rest.
  OpSchema& data_dependent_shape();
  // Marks an op that takes the types Kiln does not compute in (dtype.hpp's is_moved_only: the 8-
  // and 4-bit floats, the 4- and 2-bit integers, complex numbers): it converts them (Cast,
  // QuantizeLinear, DequantizeLinear) or moves whole elements. Shape inference refuses them for
  // every other op, naming the input.
  OpSchema& takes_storage_types();
  // Marks an op that takes sequences or optional values (the sequence ops, the optional ops,
  // Identity, control flow). Shape inference refuses them for every other op, naming the input.
  OpSchema& takes_sequences();
  // Marks an op whose kernel reads or writes string tensors itself (Cast, the string ops).
  OpSchema& takes_strings();
  // Marks an op that only moves or compares whole elements (Identity, Reshape, Gather, Concat,
  // Where, Equal, Shape, ...): it runs on string tensors by running on their ids (each distinct
  // string one uint64, the same across the inputs) and giving each uint64 output back as the
  // strings of its ids, unless the op reads shapes only (run_reference, infer_types).
  OpSchema& moves_strings();
  // Shape inference refuses string inputs for every op marked neither way, naming the input.

  const std::string& name() const { return name_; }
  const std::string& description() const { return doc_; }
  const std::vector<InputSpec>& inputs() const { return inputs_; }
  const std::vector<OutputSpec>& outputs() const { return outputs_; }
  const std::vector<AttrSpec>& attrs() const { return attrs_; }
  const KernelFn& reference_kernel() const { return kernel_; }
  const GradientFn& gradient_fn() const { return gradient_; }
  bool has_gradient() const { return static_cast<bool>(gradient_); }
  bool is_elementwise() const { return elementwise_; }
  bool is_same_bytes() const { return same_bytes_; }
  bool is_random() const { return random_; }
  bool is_shapes_only() const { return shapes_only_; }
  bool is_data_dependent_shape() const { return data_dependent_shape_; }
  bool is_storage_types_taken() const { return storage_types_; }
  bool is_sequences_taken() const { return sequences_; }
  bool is_strings_taken() const { return strings_; }
  bool is_strings_moved() const { return moves_strings_; }

  // Checks names, fills defaults, coerces types and runs validators.
  Attrs bind(const AttrMap& given) const;
  // The smallest and largest number of inputs a call may pass (-1: unbounded).
  int min_inputs() const;
  int max_inputs() const;
  std::string input_name(int i) const;
  std::string output_name(int i) const;

  // Shape and dtype inference, with errors prefixed by the op's name.
  std::vector<TensorInfo> infer_types(const Attrs& attrs,
                                      const std::vector<std::optional<TensorInfo>>& inputs,
                                      const std::vector<const Tensor*>& values, int num_outputs = -1) const;
  // Runs the reference kernel synchronously: infers, allocates the outputs and computes them.
  std::vector<Tensor> run_reference(const Attrs& attrs, const std::vector<Tensor>& inputs,
                                    int num_outputs = -1) const;

 private:
  std::string name_;
  std::string doc_;
  std::vector<InputSpec> inputs_;
  std::vector<OutputSpec> outputs_;
  std::vector<AttrSpec> attrs_;
  InferFn infer_;
  KernelFn kernel_;
  GradientFn gradient_;
  bool random_ = false;
  bool elementwise_ = false;
  bool same_bytes_ = false;
  bool shapes_only_ = false;
  bool data_dependent_shape_ = false;
  bool storage_types_ = false;
  bool sequences_ = false;
  bool strings_ = false;
  bool moves_strings_ = false;
};

// The registry is filled by static registrations before main() and only read afterwards.
class OpRegistry {
 public:
  static OpRegistry& global();
  OpSchema& add(const std::string& name);
  const OpSchema* find(const std::string& name) const;
  const OpSchema& get(const std::string& name) const;  // throws kNotFound, suggesting close names
  std::vector<std::string> names() const;

 private:
  std::map<std::string, std::unique_ptr<OpSchema>> ops_;
};

// Prefixes any kiln::Error thrown by `fn` with "<op>: " so errors name their op.
template <class F>
decltype(auto) with_op_context(const std::string& op, F&& fn) {
  try {
    return fn();
  } catch (const Error& e) {
    throw Error(e.code(), op + ": " + e.what());
  }
}

}  // namespace kiln::ops

#define KILN_OP_CONCAT_INNER(a, b) a##b
#define KILN_OP_CONCAT(a, b) KILN_OP_CONCAT_INNER(a, b)
#define KILN_REGISTER_OP(Name)                                                           \
  [[maybe_unused]] static ::kiln::ops::OpSchema& KILN_OP_CONCAT(kiln_op_, __COUNTER__) = \
      ::kiln::ops::OpRegistry::global().add(#Name)
