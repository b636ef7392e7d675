#include "op_schema.h"

#include <algorithm>
#include <set>
#include <unordered_map>

namespace kiln::ops {

InferContext::InferContext(const OpSchema& schema, const Attrs& attrs,
                           std::vector<std::optional<TensorInfo>> inputs, std::vector<const Tensor*> values,
                           int num_outputs)
    : schema_(schema),
      attrs_(attrs),
      inputs_(std::move(inputs)),
      values_(std::move(values)),
      num_outputs_(num_outputs) {
  values_.resize(inputs_.size(), nullptr);
}

const TensorInfo& InferContext::input(int i) const {
  KILN_CHECK(has_input(i), ErrorCode::kInvalidArgument, input_label(i), " is required but missing");
  return *inputs_[static_cast<size_t>(i)];
}

bool InferContext::has_value(int i) const {
  return i < num_inputs() && values_[static_cast<size_t>(i)] != nullptr;
}

const Tensor& InferContext::value(int i) const {
  KILN_CHECK(has_value(i), ErrorCode::kUnsupported, input_label(i),
             ": its values decide the output shape, and they are not known here");
  return *values_[static_cast<size_t>(i)];
}

std::string InferContext::input_label(int i) const {
  return "input " + std::to_string(i) + " (" + schema_.input_name(i) + ")";
}

std::string InferContext::output_label(int i) const {
  return "output " + std::to_string(i) + " (" + schema_.output_name(i) + ")";
}

OpSchema& OpSchema::doc(std::string text) {
  doc_ = std::move(text);
  return *this;
}

OpSchema& OpSchema::input(std::string name, Arity arity) {
  inputs_.push_back({std::move(name), arity, false});
  return *this;
}

OpSchema& OpSchema::shape_input(std::string name, Arity arity) {
  inputs_.push_back({std::move(name), arity, true});
  return *this;
}

OpSchema& OpSchema::output(std::string name, Arity arity) {
  outputs_.push_back({std::move(name), arity});
  return *this;
}

OpSchema& OpSchema::attr(std::string name, AttrType type, AttrValue default_value, AttrValidator validate) {
  attrs_.push_back({std::move(name), type, default_value.coerced_to(type, name_ + " default"), false,
                    std::move(validate)});
  return *this;
}

OpSchema& OpSchema::required_attr(std::string name, AttrType type, AttrValidator validate) {
  attrs_.push_back({std::move(name), type, std::nullopt, true, std::move(validate)});
  return *this;
}

OpSchema& OpSchema::optional_attr(std::string name, AttrType type, AttrValidator validate) {
  attrs_.push_back({std::move(name), type, std::nullopt, false, std::move(validate)});
  return *this;
}

OpSchema& OpSchema::infer(InferFn fn) {
  infer_ = std::move(fn);
  return *this;
}

OpSchema& OpSchema::kernel(KernelFn fn) {
  kernel_ = std::move(fn);
  return *this;
}

OpSchema& OpSchema::gradient(GradientFn fn) {
  gradient_ = std::move(fn);
  return *this;
}

OpSchema& OpSchema::elementwise() {
  elementwise_ = true;
  return *this;
}

OpSchema& OpSchema::same_bytes() {
  same_bytes_ = true;
  return *this;
}

OpSchema& OpSchema::draws_random() {
  random_ = true;
  return *this;
}

OpSchema& OpSchema::reads_shapes_only() {
  shapes_only_ = true;
  return *this;
}

OpSchema& OpSchema::takes_storage_types() {
  storage_types_ = true;
  return *this;
}

OpSchema& OpSchema::takes_sequences() {
  sequences_ = true;
  return *this;
}

OpSchema& OpSchema::takes_strings() {
  strings_ = true;
  return *this;
}

OpSchema& OpSchema::moves_strings() {
  moves_strings_ = true;
  return *this;
}

namespace {

bool any_string(const std::vector<Tensor>& inputs) {
  for (const Tensor& t : inputs)
    if (t.defined() && !t.is_sequence() && is_string(t.dtype())) return true;
  return false;
}

// What an op that moves strings sees of a string tensor: the ids of its strings.
constexpr DType kStringIds = DType::kUInt64;

// String tensors as the ids of their strings (interned in `strings`, shared by every input, so
// that equal strings have equal ids); other inputs as they are.
std::vector<Tensor> as_string_ids(const std::vector<Tensor>& inputs, std::vector<std::string>& strings) {
  std::unordered_map<std::string, uint64_t> ids;
  std::vector<Tensor> out;
  for (const Tensor& t : inputs) {
    if (!t.defined() || t.is_sequence() || !is_string(t.dtype())) {
      out.push_back(t);
      continue;
    }
    const Tensor c = t.contiguous();
    Tensor id = Tensor::empty(c.shape(), kStringIds);
    for (int64_t i = 0; i < c.numel(); ++i) {
      const std::string& s = c.data<std::string>()[i];
      auto [it, added] = ids.emplace(s, strings.size());
      if (added) strings.push_back(s);
      id.data<uint64_t>()[i] = it->second;
    }
    out.push_back(std::move(id));
  }
  return out;
}

Tensor strings_of_ids(const Tensor& ids, const std::vector<std::string>& strings) {
  const Tensor c = ids.contiguous();
  Tensor out = Tensor::empty(c.shape(), DType::kString);
  for (int64_t i = 0; i < c.numel(); ++i) {
    const uint64_t id = c.data<uint64_t>()[i];
    KILN_CHECK(id < strings.size(), ErrorCode::kInternal, "a string id out of range");
    out.data<std::string>()[i] = strings[id];
  }
  return out;
}

}  // namespace

TensorInfo info_of(const Tensor& value) {
  if (value.is_sequence()) return TensorInfo{value.dtype(), Shape{}, ValueKind::kSequence};
  return TensorInfo{value.dtype(), value.shape()};
}

std::string describe_info(const TensorInfo& info) {
  const std::string what = info.kind == ValueKind::kSequence
                               ? std::string("a sequence of ") + dtype_name(info.dtype) + " tensors"
                               : std::string(dtype_name(info.dtype)) + " " + info.shape.to_string();
  return info.optional ? "an optional " + what : what;
}

Tensor allocate_output(const TensorInfo& info) {
  return info.is_plain() ? Tensor::empty(info.shape, info.dtype) : Tensor();
}

OpSchema& OpSchema::data_dependent_shape() {
  data_dependent_shape_ = true;
  return *this;
}

Attrs OpSchema::bind(const AttrMap& given) const {
  std::map<std::string, AttrValue> bound;
  for (const auto& [key, value] : given) {
    auto spec = std::find_if(attrs_.begin(), attrs_.end(),
                             [&name = key](const AttrSpec& s) { return s.name == name; });
    if (spec == attrs_.end()) {
      std::string known;
      for (const auto& s : attrs_) known += (known.empty() ? "" : ", ") + s.name;
      raise(ErrorCode::kInvalidArgument, name_, ": unknown attribute '", key,
            "' (known: ", known.empty() ? "none" : known, ")");
    }
    const std::string what = name_ + " attribute '" + key + "'";
    AttrValue v = value.coerced_to(spec->type, what);
    if (spec->validate) spec->validate(v, what);
    bound.emplace(key, std::move(v));
  }
  for (const auto& spec : attrs_) {
    if (bound.count(spec.name)) continue;
    KILN_CHECK(!spec.required, ErrorCode::kInvalidArgument, name_, ": required attribute '", spec.name, "' (",
               attr_type_name(spec.type), ") is missing");
    if (spec.default_value) bound.emplace(spec.name, *spec.default_value);
  }
  return Attrs(std::move(bound));
}

int OpSchema::min_inputs() const {
  int n = 0;
  for (const auto& in : inputs_) {
    if (in.arity == Arity::kRequired) n = static_cast<int>(&in - inputs_.data()) + 1;
    if (in.arity == Arity::kVariadic) return std::max(n, static_cast<int>(&in - inputs_.data()) + 1);
    if (in.arity == Arity::kVariadicOrNone) return n;
  }
  return n;
}

int OpSchema::max_inputs() const {
  if (!inputs_.empty() && is_variadic(inputs_.back().arity)) return -1;
  return static_cast<int>(inputs_.size());
}

std::string OpSchema::input_name(int i) const {
  if (inputs_.empty()) return "?";
  if (i < static_cast<int>(inputs_.size())) return inputs_[static_cast<size_t>(i)].name;
  return is_variadic(inputs_.back().arity) ? inputs_.back().name : "?";
}

std::string OpSchema::output_name(int i) const {
  if (outputs_.empty()) return "?";
  if (i < static_cast<int>(outputs_.size())) return outputs_[static_cast<size_t>(i)].name;
  return is_variadic(outputs_.back().arity) ? outputs_.back().name : "?";
}

std::vector<TensorInfo> OpSchema::infer_types(const Attrs& attrs,
                                              const std::vector<std::optional<TensorInfo>>& inputs,
                                              const std::vector<const Tensor*>& values,
                                              int num_outputs) const {
  const auto is_text = [](const std::optional<TensorInfo>& info) {
    return info && info->kind == ValueKind::kTensor && is_string(info->dtype);
  };
  if (moves_strings_ && std::any_of(inputs.begin(), inputs.end(), is_text)) {
    // Inferred as for the ids the op runs on; its id outputs are strings again.
    std::vector<std::optional<TensorInfo>> ids(inputs);
    for (auto& info : ids)
      if (is_text(info)) info->dtype = kStringIds;
    std::vector<TensorInfo> out = infer_types(attrs, ids, values, num_outputs);
    for (TensorInfo& info : out)
      if (!shapes_only_ && info.dtype == kStringIds) info.dtype = DType::kString;
    return out;
  }
  return with_op_context(name_, [&] {
    const int n = static_cast<int>(inputs.size());
    const int max = max_inputs();
    KILN_CHECK(n >= min_inputs() && (max < 0 || n <= max), ErrorCode::kInvalidArgument, "expected ",
               min_inputs(), max < 0 ? " or more" : (max == min_inputs() ? "" : " to " + std::to_string(max)),
               " inputs, got ", n);
    for (int i = 0; i < n; ++i) {
      const size_t k = std::min<size_t>(static_cast<size_t>(i), inputs_.size() - 1);
      KILN_CHECK(inputs[static_cast<size_t>(i)].has_value() || inputs_[k].arity == Arity::kOptional,
                 ErrorCode::kInvalidArgument, "input ", i, " (", input_name(i), ") is required but missing");
    }
    KILN_CHECK(infer_ != nullptr, ErrorCode::kInternal, "no shape inference registered");
    InferContext ctx(*this, attrs, inputs, values, num_outputs);
    for (int i = 0; i < n && !sequences_; ++i) {
      if (ctx.has_input(i) && !ctx.input(i).is_plain())
        raise(ErrorCode::kInvalidArgument, ctx.input_label(i), " is ", describe_info(ctx.input(i)), "; ",
              name_, " takes tensors");
    }
    for (int i = 0; i < n && !strings_; ++i) {
      if (ctx.has_input(i) && ctx.input(i).kind == ValueKind::kTensor && is_string(ctx.dtype(i)))
        raise(ErrorCode::kTypeMismatch, ctx.input_label(i), " is a string tensor; ", name_, " takes numbers");
    }
    for (int i = 0; i < n && !storage_types_; ++i) {
      // A complex input is outside the op's types (ONNX computes in no complex type either); a
      // storage type is one Kiln has yet to compute in.
      if (ctx.has_input(i) && is_moved_only(ctx.dtype(i)))
        raise(is_complex(ctx.dtype(i)) ? ErrorCode::kTypeMismatch : ErrorCode::kUnsupported,
              ctx.input_label(i), " is ", dtype_name(ctx.dtype(i)),
              is_complex(ctx.dtype(i)) ? ", a complex type Kiln moves but does not compute in"
                                       : ", a storage type Kiln converts and moves but does not compute in; "
                                         "Cast it to a wider type first");
    }
    return infer_(ctx);
  });
}

std::vector<Tensor> OpSchema::run_reference(const Attrs& attrs, const std::vector<Tensor>& inputs,
                                            int num_outputs) const {
  if (moves_strings_ && any_string(inputs)) {
    std::vector<std::string> strings;
    std::vector<Tensor> outputs = run_reference(attrs, as_string_ids(inputs, strings), num_outputs);
    for (Tensor& t : outputs)
      if (!shapes_only_ && t.defined() && !t.is_sequence() && t.dtype() == kStringIds)
        t = strings_of_ids(t, strings);
    return outputs;
  }
  std::vector<std::optional<TensorInfo>> infos;
  std::vector<const Tensor*> values;
  std::vector<Tensor> contiguous;
  for (const auto& t : inputs) contiguous.push_back(t.defined() ? t.contiguous() : Tensor());
  for (const auto& t : contiguous) {
    infos.push_back(t.defined() ? std::optional<TensorInfo>(info_of(t)) : std::nullopt);
    values.push_back(t.defined() ? &t : nullptr);
  }
  const auto out_infos = infer_types(attrs, infos, values, num_outputs);
  std::vector<Tensor> outputs;
  for (const auto& info : out_infos) outputs.push_back(allocate_output(info));
  with_op_context(name_, [&] {
    KILN_CHECK(kernel_ != nullptr, ErrorCode::kUnsupported, "no CPU kernel registered");
    KernelContext ctx{attrs, contiguous, outputs};
    kernel_(ctx);
  });
  return outputs;
}

OpRegistry& OpRegistry::global() {
  static OpRegistry registry;
  return registry;
}

OpSchema& OpRegistry::add(const std::string& name) {
  auto [it, inserted] = ops_.emplace(name, std::make_unique<OpSchema>(name));
  KILN_CHECK(inserted, ErrorCode::kInternal, "op '", name, "' is registered twice");
  return *it->second;
}

const OpSchema* OpRegistry::find(const std::string& name) const {
  auto it = ops_.find(name);
  return it == ops_.end() ? nullptr : it->second.get();
}

namespace {
// Edit distance, to suggest the op a caller probably meant.
size_t edit_distance(const std::string& a, const std::string& b) {
  std::vector<size_t> row(b.size() + 1);
  for (size_t j = 0; j <= b.size(); ++j) row[j] = j;
  for (size_t i = 1; i <= a.size(); ++i) {
    size_t diag = row[0];
    row[0] = i;
    for (size_t j = 1; j <= b.size(); ++j) {
      const size_t up = row[j];
      const bool same = std::tolower(static_cast<unsigned char>(a[i - 1])) ==
                        std::tolower(static_cast<unsigned char>(b[j - 1]));
      row[j] = std::min({row[j] + 1, row[j - 1] + 1, diag + (same ? 0 : 1)});
      diag = up;
    }
  }
  return row[b.size()];
}
}  // namespace

const OpSchema& OpRegistry::get(const std::string& name) const {
  if (const OpSchema* s = find(name)) return *s;
  std::string best;
  size_t best_distance = 3;
  for (const auto& [candidate, schema] : ops_) {
    const size_t d = edit_distance(name, candidate);
    if (d < best_distance) {
      best_distance = d;
      best = candidate;
    }
  }
  raise(ErrorCode::kNotFound, "unknown op '", name, "'",
        best.empty() ? "" : " (did you mean '" + best + "'?)");
}

std::vector<std::string> OpRegistry::names() const {
  std::vector<std::string> out;
  for (const auto& [name, schema] : ops_) out.push_back(name);
  return out;
}

}  // namespace kiln::ops
