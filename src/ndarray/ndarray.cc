#include "kiln/ndarray.hpp"

#include <algorithm>
#include <array>
#include <span>
#include <sstream>

#include "core/object_cache.h"
#include "core/small_vector.h"
#include "engine/engine.h"
#include "kiln/random.hpp"
#include "ndarray/autograd_hook.h"
#include "ndarray/op_call.h"
#include "ndarray/read_ready.h"
#include "ops/op_schema.h"

namespace kiln {

namespace detail {
// The storage's engine variable, held inline: one allocation per new array, not two.
struct Chunk {
  engine::Var var;
};

constinit thread_local OpRecorder* t_op_recorder = nullptr;
}  // namespace detail

namespace {
std::shared_ptr<detail::Chunk> new_chunk() {
  return std::make_shared<detail::Chunk>();
}

// The array's engine variable, sharing ownership with its chunk.
engine::VarPtr var_of(const NDArray& a) {
  return engine::VarPtr(a.chunk(), &a.chunk()->var);
}

bool shares_storage(const NDArray& a, const NDArray& b) {
  return a.defined() && b.defined() && a.view().storage() == b.view().storage();
}

NDArray int64_array(const std::vector<int64_t>& values) {
  return nd::array(values, Shape{static_cast<int64_t>(values.size())});
}

// A view of a recorded array, made while recording, is recorded as the op it equals so that
// gradients flow through it.
bool records_views_of(const NDArray& a) {
  return detail::t_op_recorder != nullptr && a.autograd_entry() != nullptr;
}

NDArray record_view(NDArray view, const std::string& op, const std::vector<NDArray>& inputs,
                    const AttrMap& attrs = {}) {
  std::vector<NDArray> outputs{std::move(view)};
  detail::t_op_recorder->record(op, attrs, inputs, outputs);
  return outputs[0];
}
}  // namespace

NDArray::NDArray(Tensor tensor) : chunk_(new_chunk()), view_(std::move(tensor)) {}

void NDArray::wait_to_read() const {
  if (chunk_) engine::get().wait_for_var(var_of(*this));
}

bool nd::try_wait_to_read(const NDArray& a) {
  return !a.chunk() || engine::get().try_wait_for_var(var_of(a));
}

void NDArray::wait_to_write() const {
  if (chunk_) engine::get().wait_for_var_write(var_of(*this));
}

Tensor NDArray::tensor() const {
  KILN_CHECK(defined(), ErrorCode::kInvalidArgument, "NDArray: reading an undefined array");
  wait_to_read();
  return view_;
}

const void* NDArray::contiguous_data(DType expected) const {
  const Tensor t = tensor();
  t.check_dtype(expected, "NDArray::data");
  KILN_CHECK(t.is_contiguous(), ErrorCode::kInvalidArgument, "NDArray::data: the array of shape ", shape(),
             " is a strided view; call copy() first");
  return t.raw_data();
}

std::string NDArray::to_string() const {
  if (!defined()) return "<NDArray undefined>";
  std::string text = tensor().to_string();
  // "<Tensor (3, 4) float32>" becomes "<NDArray (3, 4) float32 @cpu(0)>".
  const size_t tag = text.rfind("<Tensor ");
  return text.substr(0, tag) + "<NDArray " + text.substr(tag + 8, text.size() - tag - 9) + " @" +
         device().to_string() + ">";
}

std::ostream& operator<<(std::ostream& os, const NDArray& a) {
  return os << a.to_string();
}

NDArray NDArray::reshape(const Shape& requested) const {
  std::vector<int64_t> dims = requested.dims();
  int infer_at = -1;
  int64_t known = 1;
  for (size_t i = 0; i < dims.size(); ++i) {
    if (dims[i] == -1) {
      KILN_CHECK(infer_at < 0, ErrorCode::kInvalidArgument, "reshape: at most one -1 allowed, got ",
                 requested);
      infer_at = static_cast<int>(i);
    } else {
      KILN_CHECK(dims[i] >= 0, ErrorCode::kInvalidArgument, "reshape: invalid dimension ", dims[i], " in ",
                 requested);
      known *= dims[i];
    }
  }
  if (infer_at >= 0) {
    KILN_CHECK(known > 0 && size() % known == 0, ErrorCode::kShapeMismatch, "reshape: cannot reshape ",
               shape(), " to ", requested);
    dims[static_cast<size_t>(infer_at)] = size() / known;
  }
  const Shape target(dims);
  KILN_CHECK(target.numel() == size(), ErrorCode::kShapeMismatch, "reshape: cannot reshape ", shape(), " (",
             size(), " elements) to ", target, " (", target.numel(), " elements)");
  if (!view_.is_contiguous()) return copy().reshape(target);
  NDArray view(chunk_, view_.reshape(target));
  if (!records_views_of(*this)) return view;
  return record_view(std::move(view), "Reshape", {*this, int64_array(target.dims())});
}

NDArray NDArray::flatten() const {
  if (ndim() == 0) return reshape(Shape{1, 1});
  if (!view_.is_contiguous()) return copy().flatten();
  int64_t columns = 1;  // the product, not size() / rows, which a 0-sized first axis would lose
  for (int a = 1; a < ndim(); ++a) columns *= shape()[a];
  NDArray view(chunk_, view_.reshape(Shape{shape()[0], columns}));
  if (!records_views_of(*this)) return view;
  return record_view(std::move(view), "Flatten", {*this}, {{"axis", 1}});
}

NDArray NDArray::slice(int64_t axis, int64_t begin, int64_t end, int64_t step) const {
  NDArray view(chunk_, view_.slice(axis, begin, end, step));
  if (!records_views_of(*this)) return view;
  return record_view(
      std::move(view), "Slice",
      {*this, int64_array({begin}), int64_array({end}), int64_array({axis}), int64_array({step})});
}

NDArray NDArray::transpose(std::vector<int64_t> perm) const {
  if (perm.empty())
    for (int i = ndim() - 1; i >= 0; --i) perm.push_back(i);
  NDArray view(chunk_, view_.transpose(perm));
  if (!records_views_of(*this)) return view;
  return record_view(std::move(view), "Transpose", {*this}, {{"perm", std::move(perm)}});
}

NDArray NDArray::at(int64_t index) const {
  KILN_CHECK(ndim() >= 1, ErrorCode::kOutOfRange, "at: cannot index a 0-d array");
  const int64_t n = shape()[0];
  KILN_CHECK(index >= -n && index < n, ErrorCode::kOutOfRange, "at: index ", index,
             " is out of range for axis 0 of size ", n);
  if (index < 0) index += n;
  std::vector<int64_t> dims(shape().begin() + 1, shape().end());
  std::vector<int64_t> strides(view_.strides().begin() + 1, view_.strides().end());
  NDArray view(chunk_, view_.as_strided(Shape(dims), strides, view_.offset() + index * view_.strides()[0]));
  if (!records_views_of(*this)) return view;
  return record_view(std::move(view), "Gather",
                     {*this, nd::scalar(static_cast<double>(index), DType::kInt64)}, {{"axis", 0}});
}

NDArray NDArray::copy() const {
  const NDArray* self = this;
  return detail::call1(detail::schema_of<"Identity">(), std::span(&self, 1));
}

NDArray NDArray::copyto(Device device) const {
  KILN_CHECK(device == this->device(), ErrorCode::kUnsupported, "copyto: copies from ", this->device(),
             " to ", device, " need the CUDA backend");
  return copy();
}

NDArray NDArray::astype(DType dtype) const {
  return nd::cast(*this, dtype);
}

namespace nd {

namespace {

// One queued op call: the kernel, its bound attributes and the views it reads and writes. Calls
// are recycled through ObjectCache with their vectors' capacity, so a call fills them without
// allocating.
struct PendingCall {
  const ops::OpSchema* schema = nullptr;
  Attrs attrs;
  std::vector<Tensor> inputs, outputs;
  std::vector<bool> via_scratch;
  bool inputs_contiguous = true;
  std::optional<uint64_t> seed;

  void run() {
    std::vector<Tensor> strided_copies;
    if (!inputs_contiguous)
      for (const auto& t : inputs) strided_copies.push_back(t.defined() ? t.contiguous() : Tensor());
    const std::vector<Tensor>& ins = inputs_contiguous ? inputs : strided_copies;
    if (std::none_of(via_scratch.begin(), via_scratch.end(), [](bool b) { return b; })) {
      ops::KernelContext ctx{attrs, ins, outputs, nullptr, seed};
      schema->reference_kernel()(ctx);
      return;
    }
    std::vector<Tensor> outs = outputs;
    for (size_t o = 0; o < outs.size(); ++o)
      if (via_scratch[o]) outs[o] = Tensor::empty(outputs[o].shape(), outputs[o].dtype());
    ops::KernelContext ctx{attrs, ins, outs, nullptr, seed};
    schema->reference_kernel()(ctx);
    for (size_t o = 0; o < outs.size(); ++o)
      if (via_scratch[o]) outputs[o].copy_from(outs[o]);
  }
};

// The engine's work for one call: owns the call and returns it to the cache, emptied (its arrays'
// storage released), when the engine is done with it, whether it ran or was skipped after an
// input's error.
class CallWork {
 public:
  CallWork() : call_(ObjectCache<PendingCall>::acquire()) {
    call_->inputs_contiguous = true;
    call_->seed.reset();
  }
  CallWork(CallWork&& other) noexcept : call_(std::exchange(other.call_, nullptr)) {}
  CallWork(const CallWork&) = delete;
  CallWork& operator=(const CallWork&) = delete;
  CallWork& operator=(CallWork&&) = delete;
  ~CallWork() {
    if (!call_) return;
    call_->attrs = Attrs();
    call_->inputs.clear();
    call_->outputs.clear();
    call_->via_scratch.clear();
    ObjectCache<PendingCall>::release(call_);
  }

  PendingCall& call() { return *call_; }
  void operator()() { call_->run(); }

 private:
  PendingCall* call_;
};

// Vectors that shape inference fills on every call, kept per thread so that their capacity is
// reused. A call borrows them (swaps them out) for its duration, so a nested call on the same
// thread gets vectors of its own.
struct InferScratch {
  std::vector<std::optional<ops::TensorInfo>> infos;
  std::vector<const Tensor*> values;
};

class BorrowedScratch {
 public:
  BorrowedScratch() { swap(); }
  ~BorrowedScratch() {
    scratch.infos.clear();
    scratch.values.clear();
    swap();
  }
  BorrowedScratch(const BorrowedScratch&) = delete;
  BorrowedScratch& operator=(const BorrowedScratch&) = delete;

  InferScratch scratch;

 private:
  void swap() {
    thread_local InferScratch kept;
    std::swap(kept.infos, scratch.infos);
    std::swap(kept.values, scratch.values);
  }
};

bool same_types(const std::vector<std::optional<ops::TensorInfo>>& a,
                const std::vector<std::optional<ops::TensorInfo>>& b) {
  if (a.size() != b.size()) return false;
  for (size_t i = 0; i < a.size(); ++i) {
    if (a[i].has_value() != b[i].has_value()) return false;
    if (a[i] && (a[i]->dtype != b[i]->dtype || a[i]->shape != b[i]->shape)) return false;
  }
  return true;
}

// The result types of recent calls on this thread, by op and input types. A call with the op's
// default attributes and no input whose values set a shape gets the same result types from the
// same input types, so a loop of a + b on arrays of one shape runs the op's shape inference
// (checks, broadcasting) once. A few entries, replaced in turn.
class InferenceCache {
 public:
  using Inputs = std::vector<std::optional<ops::TensorInfo>>;

  static InferenceCache& local() {
    thread_local InferenceCache cache;
    return cache;
  }

  const std::vector<ops::TensorInfo>* find(const ops::OpSchema& op, const Inputs& inputs,
                                           int requested) const {
    for (const Entry& e : entries_)
      if (e.op == &op && e.requested == requested && same_types(e.inputs, inputs)) return &e.outputs;
    return nullptr;
  }

  void insert(const ops::OpSchema& op, const Inputs& inputs, int requested,
              const std::vector<ops::TensorInfo>& outputs) {
    Entry& e = entries_[next_];
    next_ = (next_ + 1) % entries_.size();
    e.op = &op;
    e.requested = requested;
    e.inputs = inputs;
    e.outputs = outputs;
  }

 private:
  struct Entry {
    const ops::OpSchema* op = nullptr;
    int requested = 0;
    Inputs inputs;
    std::vector<ops::TensorInfo> outputs;
  };
  std::array<Entry, 8> entries_;
  size_t next_ = 0;
};

// The seed of a call of an op that draws random numbers (OpSchema::draws_random): the next of
// kiln::random's sequence, taken now, in program order, rather than when the engine runs the
// kernel; a call whose values a trace discards takes none (seed 0), so hybridizing does not shift
// the sequence.
std::optional<uint64_t> call_seed(const ops::OpSchema& schema) {
  if (!schema.is_random()) return std::nullopt;
  if (detail::t_op_recorder != nullptr && detail::t_op_recorder->discards_values()) return 0;
  return random::next_seed();
}

// A call that reads and writes at most this many elements in all is small work for the engine
// (engine::WorkSize::kSmall): a few microseconds for an elementwise kernel, about what handing it
// to an engine worker costs. Larger calls always go to the workers.
constexpr int64_t kSmallOpElements = 4096;

// An op call's result arrays: most ops have one or two.
using Outputs = SmallVector<NDArray, 2>;

// Pushes one op. `given` holds the arrays to write into, or is empty to allocate new ones.
Outputs push_op(const ops::OpSchema& schema, detail::ArrayRefs inputs, const AttrMap& attrs, int num_outputs,
                detail::ArrayRefs given) {
  const std::string& op_name = schema.name();
  Attrs bound = schema.bind(attrs);

  Device device = cpu();
  for (const NDArray* in : inputs)
    if (in->defined()) {
      device = in->device();
      break;
    }
  SmallVector<ops::TensorInfo, 2> out_infos;
  {
    BorrowedScratch borrowed;
    auto& infos = borrowed.scratch.infos;
    auto& values = borrowed.scratch.values;
    values.assign(inputs.size(), nullptr);
    std::vector<Tensor> known_values;  // sized only for ops that read input values, most do not
    bool cacheable = attrs.empty();
    for (size_t i = 0; i < inputs.size(); ++i) {
      const NDArray& in = *inputs[i];
      if (!in.defined()) {
        infos.emplace_back(std::nullopt);
        continue;
      }
      KILN_CHECK(in.device() == device, ErrorCode::kInvalidArgument, op_name, ": input ", i, " (",
                 schema.input_name(static_cast<int>(i)), ") is on ", in.device(), ", expected ", device);
      infos.emplace_back(ops::TensorInfo{in.dtype(), in.shape()});
      const size_t spec = std::min(i, schema.inputs().size() - 1);
      if (schema.inputs()[spec].value_sets_shape) {  // shape inference needs these values now
        cacheable = false;
        known_values.resize(inputs.size());
        known_values[i] = in.tensor().contiguous();
        values[i] = &known_values[i];
      }
    }
    const int requested = given.empty() ? num_outputs : static_cast<int>(given.size());
    InferenceCache& cache = InferenceCache::local();
    const std::vector<ops::TensorInfo>* known = cacheable ? cache.find(schema, infos, requested) : nullptr;
    if (known) {
      for (const auto& info : *known) out_infos.push_back(info);
    } else {
      const std::vector<ops::TensorInfo> inferred = schema.infer_types(bound, infos, values, requested);
      if (cacheable) cache.insert(schema, infos, requested, inferred);
      for (const auto& info : inferred) out_infos.push_back(info);
    }
  }
  KILN_CHECK(schema.reference_kernel() != nullptr, ErrorCode::kUnsupported, op_name, ": no CPU kernel");
  KILN_CHECK(device.is_cpu(), ErrorCode::kUnsupported, op_name, ": no kernel for ", device,
             " in this build (the CUDA backend is not built)");

  Outputs outputs;
  if (given.empty()) {
    for (const auto& info : out_infos)
      outputs.push_back(NDArray(Tensor::empty(info.shape, info.dtype, device)));
  } else {
    KILN_CHECK(given.size() == out_infos.size(), ErrorCode::kInvalidArgument, op_name, ": ", given.size(),
               " output arrays given, the op produces ", out_infos.size());
    for (size_t i = 0; i < given.size(); ++i) {
      const NDArray& out = *given[i];
      KILN_CHECK(out.shape() == out_infos[i].shape, ErrorCode::kShapeMismatch, op_name, ": output ", i, " (",
                 schema.output_name(static_cast<int>(i)), "): the result has shape ", out_infos[i].shape,
                 " but the array written into has shape ", out.shape());
      KILN_CHECK(out.dtype() == out_infos[i].dtype, ErrorCode::kTypeMismatch, op_name, ": output ", i, " (",
                 schema.output_name(static_cast<int>(i)), "): the result has dtype ", out_infos[i].dtype,
                 " but the array written into has dtype ", out.dtype());
      outputs.push_back(out);
    }
  }

  // Everything the kernel needs travels in one recycled block, which the engine's work owns.
  CallWork work;
  PendingCall& call = work.call();
  call.schema = &schema;
  call.attrs = std::move(bound);
  call.seed = call_seed(schema);
  engine::VarList reads, writes;
  int64_t elements = 0;
  for (const NDArray* input : inputs) {
    const NDArray& in = *input;
    if (!in.defined()) {
      call.inputs.emplace_back();
      continue;
    }
    call.inputs.push_back(in.view());  // copied in place, not through a temporary
    call.inputs_contiguous &= in.view().is_contiguous();
    reads.push_back(var_of(in));
    elements += in.size();
  }
  // An output that shares storage with an input is computed in a scratch buffer and copied in,
  // unless the op is elementwise (it reads each element before writing it, so aliasing is safe).
  // Arrays made above for the results are contiguous and share nothing: no check needed.
  const bool new_outputs = given.empty();
  for (const auto& out : outputs) {
    bool via_scratch = false;
    if (!new_outputs) {
      bool aliased = false;
      for (const NDArray* in : inputs) aliased |= shares_storage(*in, out);
      via_scratch = !out.view().is_contiguous() || (aliased && !schema.is_elementwise());
    }
    call.outputs.push_back(out.view());
    call.via_scratch.push_back(via_scratch);
    writes.push_back(var_of(out));
    elements += out.size();
  }
  const auto size = elements <= kSmallOpElements ? engine::WorkSize::kSmall : engine::WorkSize::kUnknown;
  engine::get().push(std::move(work), std::move(reads), std::move(writes), op_name.c_str(), size);
  return outputs;
}

std::vector<NDArray> copies(detail::ArrayRefs arrays) {
  std::vector<NDArray> out;
  out.reserve(arrays.size());
  for (const NDArray* a : arrays) out.push_back(*a);
  return out;
}

// Points at each array of `arrays`.
SmallVector<const NDArray*, 4> refs(const std::vector<NDArray>& arrays) {
  SmallVector<const NDArray*, 4> out;
  for (const NDArray& a : arrays) out.push_back(&a);
  return out;
}

void record(const ops::OpSchema& op, const AttrMap& attrs, detail::ArrayRefs inputs,
            std::vector<NDArray>& outputs) {
  detail::t_op_recorder->record(op.name(), attrs, copies(inputs), outputs);
}

}  // namespace

std::vector<NDArray> invoke(const std::string& op, const std::vector<NDArray>& inputs, const AttrMap& attrs,
                            int num_outputs) {
  const ops::OpSchema& schema = ops::OpRegistry::global().get(op);
  const Outputs pushed = push_op(schema, refs(inputs), attrs, num_outputs, {});
  std::vector<NDArray> outputs(pushed.begin(), pushed.end());
  if (detail::t_op_recorder != nullptr) detail::t_op_recorder->record(op, attrs, inputs, outputs);
  return outputs;
}

NDArray invoke1(const std::string& op, const std::vector<NDArray>& inputs, const AttrMap& attrs) {
  return detail::call1(ops::OpRegistry::global().get(op), refs(inputs), attrs);
}

void invoke_into(const std::string& op, const std::vector<NDArray>& inputs,
                 const std::vector<NDArray>& outputs, const AttrMap& attrs) {
  detail::call_into(ops::OpRegistry::global().get(op), refs(inputs), refs(outputs), attrs);
}

void waitall() {
  engine::get().wait_all();
}

NDArray empty(const Shape& shape, DType dtype, Device device) {
  return NDArray(Tensor::empty(shape, dtype, device));
}

NDArray full(const Shape& shape, double value, DType dtype, Device device) {
  NDArray out = empty(shape, dtype, device);
  const NDArray dims = array(shape.dims(), Shape{shape.ndim()});
  const NDArray* dims_ref = &dims;
  const NDArray* out_ref = &out;
  detail::call_into(detail::schema_of<"ConstantOfShape">(), std::span(&dims_ref, 1), std::span(&out_ref, 1),
                    {{"value", Tensor::scalar(value, dtype)}});
  return out;
}

NDArray zeros(const Shape& shape, DType dtype, Device device) {
  return full(shape, 0, dtype, device);
}
NDArray ones(const Shape& shape, Device device) {
  return full(shape, 1, DType::kFloat32, device);
}
NDArray ones(const Shape& shape, DType dtype, Device device) {
  return full(shape, 1, dtype, device);
}
NDArray scalar(double value, DType dtype) {
  return NDArray(Tensor::scalar(value, dtype));
}

NDArray arange(double start, double stop, double step, DType dtype) {
  return invoke1("Range", {scalar(start, dtype), scalar(stop, dtype), scalar(step, dtype)});
}

}  // namespace nd

namespace detail {

NDArray call1(const ops::OpSchema& op, ArrayRefs inputs, const AttrMap& attrs) {
  nd::Outputs pushed = nd::push_op(op, inputs, attrs, -1, {});
  KILN_CHECK(!pushed.empty(), ErrorCode::kInternal, op.name(), ": the op produced no output");
  if (detail::t_op_recorder == nullptr) return std::move(pushed[0]);
  std::vector<NDArray> outputs(pushed.begin(), pushed.end());
  nd::record(op, attrs, inputs, outputs);
  return std::move(outputs[0]);
}

void call_into(const ops::OpSchema& op, ArrayRefs inputs, ArrayRefs outputs, const AttrMap& attrs) {
  KILN_CHECK(!outputs.empty(), ErrorCode::kInvalidArgument, op.name(),
             ": invoke_into needs at least one output array");
  for (const NDArray* o : outputs)
    KILN_CHECK(o->defined(), ErrorCode::kInvalidArgument, op.name(),
               ": invoke_into got an undefined output array");
  if (detail::t_op_recorder != nullptr)
    detail::t_op_recorder->check_write(op.name(), nd::copies(inputs), nd::copies(outputs));
  nd::push_op(op, inputs, attrs, static_cast<int>(outputs.size()), outputs);
}

}  // namespace detail

}  // namespace kiln
