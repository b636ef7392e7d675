// If, Loop and Scan (ONNX opset 16 semantics, which are opset 11's for tensors; Scan opset 9's):
// the schemas, the check of a node against its subgraphs, and what running one means, over the
// SubgraphRunner the runtime gives (control_flow.h).
//
// Their output shapes are known only once a subgraph has run (an If's branches may give different
// shapes, a Loop's scan outputs are as long as it ran), so shape inference reports kUnsupported
// and the ops are marked data_dependent_shape: the runtime runs the node and plans what follows for
// the sizes it gave.
#include "ops/control_flow.h"

#include <algorithm>
#include <limits>

namespace kiln::ops {
namespace {

std::vector<TensorInfo> infer_after_run(InferContext& ctx) {
  raise(ErrorCode::kUnsupported, "the outputs of ", ctx.schema().name(),
        " are known only when its subgraph runs");
}

std::string describe(const std::optional<TensorInfo>& info) {
  if (!info) return "any type";
  return info->kind == ValueKind::kSequence ? std::string("a sequence of ") + dtype_name(info->dtype)
                                            : std::string(dtype_name(info->dtype));
}

// Both declared and different.
bool types_differ(const std::optional<TensorInfo>& a, const std::optional<TensorInfo>& b) {
  return a && b && (a->dtype != b->dtype || a->kind != b->kind);
}

const SubgraphSignature& signature(const std::map<std::string, SubgraphSignature>& subgraphs,
                                   const std::string& op, const std::string& name) {
  const auto it = subgraphs.find(name);
  KILN_CHECK(it != subgraphs.end(), ErrorCode::kInvalidArgument, op, " has no subgraph '", name, "'");
  return it->second;
}

void check_count(const std::string& what, size_t count, size_t expected, const std::string& why) {
  KILN_CHECK(count == expected, ErrorCode::kInvalidArgument, what, " has ", count, ", expected ", expected,
             " (", why, ")");
}

void check_type(const std::string& what, const std::optional<TensorInfo>& got, DType expected) {
  KILN_CHECK(!got || got->dtype == expected, ErrorCode::kInvalidArgument, what, " is ", describe(got),
             ", expected ", dtype_name(expected));
}

void check_same_type(const std::string& what, const std::optional<TensorInfo>& a, const std::string& other,
                     const std::optional<TensorInfo>& b) {
  KILN_CHECK(!types_differ(a, b), ErrorCode::kInvalidArgument, what, " is ", describe(a), " but ", other,
             " is ", describe(b));
}

// The captured values: the node's last inputs and the subgraph's, in the same order.
void check_captured(const std::string& sub, const std::vector<std::optional<TensorInfo>>& node_inputs,
                    const SubgraphSignature& s, size_t num_captured) {
  for (size_t c = 0; c < num_captured; ++c) {
    const size_t node_k = node_inputs.size() - num_captured + c, sub_k = s.inputs.size() - num_captured + c;
    check_same_type(sub + " input " + std::to_string(sub_k) + " (a value it reads from outside)",
                    s.inputs[sub_k], "the value it reads, node input " + std::to_string(node_k),
                    node_inputs[node_k]);
  }
}

void check_if(const std::vector<std::optional<TensorInfo>>& node_inputs, size_t num_outputs,
              size_t num_captured, const std::map<std::string, SubgraphSignature>& subgraphs) {
  check_type("If input 0 (cond)", node_inputs[0], DType::kBool);
  const SubgraphSignature& then_branch = signature(subgraphs, "If", "then_branch");
  const SubgraphSignature& else_branch = signature(subgraphs, "If", "else_branch");
  for (const auto& [name, s] :
       {std::pair{"then_branch", &then_branch}, std::pair{"else_branch", &else_branch}}) {
    const std::string sub = std::string("If subgraph '") + name + "'";
    check_count(sub + " inputs", s->inputs.size(), num_captured, "a branch takes only values from outside");
    check_count(sub + " outputs", s->outputs.size(), num_outputs, "one per output of the If");
    check_captured(sub, node_inputs, *s, num_captured);
  }
  for (size_t i = 0; i < num_outputs; ++i)
    check_same_type("If output " + std::to_string(i) + " of then_branch", then_branch.outputs[i],
                    "else_branch's", else_branch.outputs[i]);
}

void check_loop(const std::vector<std::optional<TensorInfo>>& node_inputs, size_t num_outputs,
                size_t num_captured, const std::map<std::string, SubgraphSignature>& subgraphs) {
  KILN_CHECK(node_inputs.size() >= 2 + num_captured, ErrorCode::kInvalidArgument,
             "Loop needs inputs M and cond (either may be missing) before its loop-carried values");
  const size_t carried = node_inputs.size() - 2 - num_captured;
  KILN_CHECK(num_outputs >= carried, ErrorCode::kInvalidArgument, "Loop has ", carried,
             " loop-carried values but only ", num_outputs,
             " outputs (one per loop-carried value, then the scan outputs)");
  const size_t scans = num_outputs - carried;
  check_type("Loop input 0 (M)", node_inputs[0], DType::kInt64);
  check_type("Loop input 1 (cond)", node_inputs[1], DType::kBool);
  const SubgraphSignature& body = signature(subgraphs, "Loop", "body");
  check_count("Loop subgraph 'body' inputs", body.inputs.size(), 2 + carried + num_captured,
              "the iteration number, the condition, " + std::to_string(carried) +
                  " loop-carried value(s) and " + std::to_string(num_captured) + " value(s) from outside");
  check_count("Loop subgraph 'body' outputs", body.outputs.size(), 1 + carried + scans,
              "the condition, " + std::to_string(carried) + " loop-carried value(s) and " +
                  std::to_string(scans) + " scan output(s)");
  check_type("Loop subgraph 'body' input 0 (the iteration number)", body.inputs[0], DType::kInt64);
  check_type("Loop subgraph 'body' input 1 (the condition)", body.inputs[1], DType::kBool);
  check_type("Loop subgraph 'body' output 0 (the condition)", body.outputs[0], DType::kBool);
  for (size_t j = 0; j < carried; ++j) {
    const std::string v = "loop-carried value " + std::to_string(j);
    check_same_type("Loop subgraph 'body' input " + std::to_string(2 + j) + " (" + v + ")",
                    body.inputs[2 + j], "Loop input " + std::to_string(2 + j), node_inputs[2 + j]);
    check_same_type("Loop subgraph 'body' output " + std::to_string(1 + j) + " (" + v + ")",
                    body.outputs[1 + j], "Loop input " + std::to_string(2 + j), node_inputs[2 + j]);
  }
  check_captured("Loop subgraph 'body'", node_inputs, body, num_captured);
}

void check_scan(const Attrs& attrs, const std::vector<std::optional<TensorInfo>>& node_inputs,
                size_t num_outputs, size_t num_captured,
                const std::map<std::string, SubgraphSignature>& subgraphs) {
  const size_t own = node_inputs.size() - num_captured;
  const int64_t m = attrs.get_int("num_scan_inputs");
  KILN_CHECK(m >= 1 && static_cast<size_t>(m) <= own, ErrorCode::kInvalidArgument, "Scan num_scan_inputs is ",
             m, ", expected 1 to ", own, " (the number of its inputs)");
  const size_t scan_inputs = static_cast<size_t>(m), states = own - scan_inputs;
  KILN_CHECK(num_outputs >= states, ErrorCode::kInvalidArgument, "Scan has ", states, " states but only ",
             num_outputs, " outputs (one per state, then the scan outputs)");
  const size_t scans = num_outputs - states;
  for (const auto& [name, expected] :
       {std::pair{"scan_input_axes", scan_inputs}, std::pair{"scan_input_directions", scan_inputs},
        std::pair{"scan_output_axes", scans}, std::pair{"scan_output_directions", scans}}) {
    if (attrs.has(name))
      check_count(std::string("Scan attribute ") + name, attrs.get_ints(name).size(), expected,
                  "one per scan " +
                      std::string(std::string(name).find("input") != std::string::npos ? "input" : "output"));
  }
  const SubgraphSignature& body = signature(subgraphs, "Scan", "body");
  check_count("Scan subgraph 'body' inputs", body.inputs.size(), states + scan_inputs + num_captured,
              std::to_string(states) + " state(s), a slice of each of " + std::to_string(scan_inputs) +
                  " scan input(s) and " + std::to_string(num_captured) + " value(s) from outside");
  check_count("Scan subgraph 'body' outputs", body.outputs.size(), states + scans,
              std::to_string(states) + " state(s) and " + std::to_string(scans) + " scan output(s)");
  for (size_t j = 0; j < states + scan_inputs; ++j)
    check_same_type("Scan subgraph 'body' input " + std::to_string(j), body.inputs[j],
                    "Scan input " + std::to_string(j), node_inputs[j]);
  for (size_t j = 0; j < states; ++j)
    check_same_type("Scan subgraph 'body' output " + std::to_string(j) + " (state " + std::to_string(j) + ")",
                    body.outputs[j], "Scan input " + std::to_string(j), node_inputs[j]);
  check_captured("Scan subgraph 'body'", node_inputs, body, num_captured);
}

void check_sequence_map(const std::vector<std::optional<TensorInfo>>& node_inputs, size_t num_outputs,
                        size_t num_captured, const std::map<std::string, SubgraphSignature>& subgraphs) {
  const size_t own = node_inputs.size() - num_captured;
  KILN_CHECK(own >= 1, ErrorCode::kInvalidArgument, "SequenceMap needs its input sequence");
  KILN_CHECK(!node_inputs[0] || node_inputs[0]->kind == ValueKind::kSequence, ErrorCode::kInvalidArgument,
             "SequenceMap input 0 (input_sequence) is ", describe(node_inputs[0]), ", expected a sequence");
  const SubgraphSignature& body = signature(subgraphs, "SequenceMap", "body");
  check_count("SequenceMap subgraph 'body' inputs", body.inputs.size(), own + num_captured,
              "one per input of the node (an element of each sequence, or the tensor) and " +
                  std::to_string(num_captured) + " value(s) from outside");
  check_count("SequenceMap subgraph 'body' outputs", body.outputs.size(), num_outputs,
              "one per output sequence");
  for (size_t j = 0; j < own; ++j) {
    const std::optional<TensorInfo>& given = node_inputs[j];
    const std::optional<TensorInfo>& taken = body.inputs[j];
    KILN_CHECK(!given || !taken || given->dtype == taken->dtype, ErrorCode::kInvalidArgument,
               "SequenceMap subgraph 'body' input ", j, " is ", describe(taken), " but SequenceMap input ", j,
               " is ", describe(given));
  }
  check_captured("SequenceMap subgraph 'body'", node_inputs, body, num_captured);
}

// ---- running ----

// The value of a one-element bool tensor (If's cond, a Loop's condition).
bool truth(const Tensor& t, const std::string& what) {
  KILN_CHECK(t.dtype() == DType::kBool && t.numel() == 1, ErrorCode::kInvalidArgument, what,
             ": expected one bool, got ", dtype_name(t.dtype()), " ", t.shape());
  return t.contiguous().data<bool>()[0];
}

// x at `index` along `axis`, that axis removed.
Tensor take(const Tensor& x, int axis, int64_t index) {
  std::vector<int64_t> dims = x.shape().dims();
  dims.erase(dims.begin() + axis);
  return x.slice(axis, index, index + 1).contiguous().reshape(Shape(dims));
}

// The pieces (one per iteration, all of one shape and type) stacked along a new axis `axis`, the
// last first when `reverse`.
Tensor stack(const std::vector<Tensor>& pieces, int axis, bool reverse, const std::string& what,
             int64_t max_elements) {
  const Tensor& first = pieces.front();
  for (size_t t = 1; t < pieces.size(); ++t)
    KILN_CHECK(pieces[t].shape() == first.shape() && pieces[t].dtype() == first.dtype(),
               ErrorCode::kShapeMismatch, what, ": iteration ", t, " gives ", dtype_name(pieces[t].dtype()),
               " ", pieces[t].shape(), ", iteration 0 gave ", dtype_name(first.dtype()), " ", first.shape(),
               " (every iteration must give the same)");
  KILN_CHECK(axis >= 0 && axis <= first.ndim(), ErrorCode::kInvalidArgument, what, ": axis ", axis,
             " is outside a stack of rank ", first.ndim() + 1);
  const auto count = static_cast<int64_t>(pieces.size());
  KILN_CHECK(first.numel() <= max_elements / count, ErrorCode::kOutOfRange, what, ": ", count,
             " iterations of ", first.shape(), " are more than max_dynamic_elements = ", max_elements);
  std::vector<int64_t> dims = first.shape().dims(), one = dims;
  dims.insert(dims.begin() + axis, count);
  one.insert(one.begin() + axis, 1);
  Tensor out = Tensor::empty(Shape(dims), first.dtype());
  for (int64_t t = 0; t < count; ++t) {
    const int64_t at = reverse ? count - 1 - t : t;
    Tensor slot = out.slice(axis, at, at + 1);
    slot.copy_from(pieces[static_cast<size_t>(t)].contiguous().reshape(Shape(one)));
  }
  return out;
}

// A scan output of an op that ran no iteration: empty along the stacked axis, the rest as the
// subgraph declares (a declared dimension that is not known counts as 0).
Tensor empty_stack(const std::optional<TensorInfo>& declared, int axis) {
  std::vector<int64_t> dims;
  DType dtype = DType::kFloat32;
  if (declared) {
    dtype = declared->dtype;
    for (int64_t d : declared->shape.dims()) dims.push_back(std::max<int64_t>(d, 0));
  }
  axis = std::clamp(axis, 0, static_cast<int>(dims.size()));
  dims.insert(dims.begin() + axis, 0);
  return Tensor::empty(Shape(dims), dtype);
}

std::vector<Tensor> outputs_of(const std::string& sub, const SubgraphRunner& run,
                               const std::vector<Tensor>& in, size_t expected) {
  std::vector<Tensor> out = run(sub, in);
  KILN_CHECK(out.size() == expected, ErrorCode::kInternal, "subgraph '", sub, "' gave ", out.size(),
             " outputs, expected ", expected);
  return out;
}

void check_carried(const std::string& what, const Tensor& given, const Tensor& before) {
  if (!given.defined() || !before.defined()) return;  // an optional value, absent before or after
  KILN_CHECK(given.dtype() == before.dtype() && given.is_sequence() == before.is_sequence(),
             ErrorCode::kTypeMismatch, what, " is ", describe(info_of(given)), " after an iteration but was ",
             describe(info_of(before)));
}

std::vector<Tensor> run_if(const std::vector<Tensor>& inputs, size_t num_captured, size_t num_outputs,
                           const SubgraphRunner& run) {
  const bool cond = truth(inputs.at(0), "input 0 (cond)");
  const std::vector<Tensor> captured(inputs.end() - static_cast<std::ptrdiff_t>(num_captured), inputs.end());
  return outputs_of(cond ? "then_branch" : "else_branch", run, captured, num_outputs);
}

std::vector<Tensor> run_loop(const std::vector<Tensor>& inputs, size_t num_captured, size_t num_outputs,
                             const std::map<std::string, SubgraphSignature>& signatures,
                             const SubgraphRunner& run, const ControlFlowLimits& limits) {
  const Tensor& trip_count = inputs.at(0);
  const Tensor& cond_given = inputs.at(1);
  const size_t carried = inputs.size() - 2 - num_captured, scans = num_outputs - carried;
  int64_t max_trips = std::numeric_limits<int64_t>::max();
  if (trip_count.defined()) {
    KILN_CHECK(trip_count.dtype() == DType::kInt64 && trip_count.numel() == 1, ErrorCode::kInvalidArgument,
               "input 0 (M): expected one int64, got ", dtype_name(trip_count.dtype()), " ",
               trip_count.shape());
    max_trips = trip_count.contiguous().data<int64_t>()[0];
    KILN_CHECK(max_trips >= 0, ErrorCode::kInvalidArgument, "input 0 (M): the trip count is ", max_trips,
               "; it must be 0 or more");
  }
  bool cond = cond_given.defined() ? truth(cond_given, "input 1 (cond)") : true;
  std::vector<Tensor> body_inputs(inputs.begin() + 2, inputs.end());
  body_inputs.insert(body_inputs.begin(), {Tensor(), Tensor::scalar(1.0, DType::kBool)});
  std::vector<std::vector<Tensor>> scanned(scans);
  for (int64_t i = 0; i < max_trips && cond; ++i) {
    KILN_CHECK(i < limits.max_iterations, ErrorCode::kOutOfRange, "ran ", limits.max_iterations,
               " iterations and would run more, over max_loop_iterations = ", limits.max_iterations);
    body_inputs[0] = Tensor::scalar(static_cast<double>(i), DType::kInt64);
    body_inputs[1] = Tensor::scalar(cond ? 1.0 : 0.0, DType::kBool);
    std::vector<Tensor> out = outputs_of("body", run, body_inputs, 1 + carried + scans);
    // Without a condition input the loop is a for loop: the body's condition is not read.
    if (cond_given.defined())
      cond = truth(out[0], "iteration " + std::to_string(i) + ": body output 0 (cond)");
    for (size_t j = 0; j < carried; ++j) {
      check_carried("loop-carried value " + std::to_string(j), out[1 + j], body_inputs[2 + j]);
      body_inputs[2 + j] = std::move(out[1 + j]);
    }
    for (size_t k = 0; k < scans; ++k) scanned[k].push_back(std::move(out[1 + carried + k]));
  }
  std::vector<Tensor> outputs(body_inputs.begin() + 2,
                              body_inputs.begin() + 2 + static_cast<std::ptrdiff_t>(carried));
  const SubgraphSignature& body = signatures.at("body");
  for (size_t k = 0; k < scans; ++k) {
    const std::string what = "scan output " + std::to_string(k);
    outputs.push_back(scanned[k].empty() ? empty_stack(body.outputs.at(1 + carried + k), 0)
                                         : stack(scanned[k], 0, false, what, limits.max_elements));
  }
  return outputs;
}

// SequenceMap: the body once per element of the input sequence, given the element at that position
// of every sequence input and the tensor inputs whole; output j is the sequence of the body's
// output j.
std::vector<Tensor> run_sequence_map(const std::vector<Tensor>& inputs, size_t num_captured,
                                     size_t num_outputs,
                                     const std::map<std::string, SubgraphSignature>& signatures,
                                     const SubgraphRunner& run, const ControlFlowLimits& limits) {
  const size_t own = inputs.size() - num_captured;
  KILN_CHECK(inputs[0].is_sequence(), ErrorCode::kTypeMismatch, "input 0 (input_sequence) is not a sequence");
  const size_t length = inputs[0].elements().size();
  for (size_t j = 1; j < own; ++j)
    KILN_CHECK(!inputs[j].is_sequence() || inputs[j].elements().size() == length, ErrorCode::kShapeMismatch,
               "input ", j, " is a sequence of ", inputs[j].elements().size(), " tensors, input 0 one of ",
               length);
  KILN_CHECK(static_cast<int64_t>(length) <= limits.max_iterations, ErrorCode::kOutOfRange, "would run ",
             length, " iterations, over max_loop_iterations = ", limits.max_iterations);
  std::vector<Tensor> body_inputs(inputs);
  std::vector<std::vector<Tensor>> mapped(num_outputs);
  for (size_t i = 0; i < length; ++i) {
    for (size_t j = 0; j < own; ++j)
      if (inputs[j].is_sequence()) body_inputs[j] = inputs[j].elements()[i];
    std::vector<Tensor> out = outputs_of("body", run, body_inputs, num_outputs);
    for (size_t k = 0; k < num_outputs; ++k) mapped[k].push_back(std::move(out[k]));
  }
  std::vector<Tensor> outputs;
  const SubgraphSignature& body = signatures.at("body");
  for (size_t k = 0; k < num_outputs; ++k) {
    const std::optional<TensorInfo>& declared = body.outputs.at(k);
    const DType dtype = !mapped[k].empty() ? mapped[k].front().dtype()
                        : declared         ? declared->dtype
                                           : DType::kFloat32;
    outputs.push_back(Tensor::sequence(dtype, std::move(mapped[k])));
  }
  return outputs;
}

// An axis attribute's value for an array of rank `rank`, negative counting from the end.
int normalize_axis(int64_t axis, int rank, const std::string& what) {
  KILN_CHECK(axis >= -rank && axis < rank, ErrorCode::kInvalidArgument, what, " is ", axis, ", outside rank ",
             rank);
  return static_cast<int>(axis < 0 ? axis + rank : axis);
}

std::vector<int64_t> ints_or_zeros(const Attrs& attrs, const std::string& name, size_t count) {
  return attrs.has(name) ? attrs.get_ints(name) : std::vector<int64_t>(count, 0);
}

std::vector<Tensor> run_scan(const Attrs& attrs, const std::vector<Tensor>& inputs, size_t num_captured,
                             size_t num_outputs, const std::map<std::string, SubgraphSignature>& signatures,
                             const SubgraphRunner& run, const ControlFlowLimits& limits) {
  const size_t scan_inputs = static_cast<size_t>(attrs.get_int("num_scan_inputs"));
  const size_t states = inputs.size() - num_captured - scan_inputs, scans = num_outputs - states;
  const std::vector<int64_t> in_axes = ints_or_zeros(attrs, "scan_input_axes", scan_inputs);
  const std::vector<int64_t> in_directions = ints_or_zeros(attrs, "scan_input_directions", scan_inputs);
  const std::vector<int64_t> out_axes = ints_or_zeros(attrs, "scan_output_axes", scans);
  const std::vector<int64_t> out_directions = ints_or_zeros(attrs, "scan_output_directions", scans);
  std::vector<int> axes;
  int64_t length = -1;
  for (size_t j = 0; j < scan_inputs; ++j) {
    const Tensor& x = inputs[states + j];
    const std::string what = "scan input " + std::to_string(j);
    axes.push_back(normalize_axis(in_axes[j], x.ndim(), what + "'s axis"));
    const int64_t n = x.shape()[axes.back()];
    KILN_CHECK(length < 0 || n == length, ErrorCode::kShapeMismatch, what, " ", x.shape(), " has ", n,
               " steps along axis ", axes.back(), ", scan input 0 has ", length);
    length = n;
  }
  KILN_CHECK(length <= limits.max_iterations, ErrorCode::kOutOfRange, "would take ", length,
             " steps, over max_loop_iterations = ", limits.max_iterations);
  std::vector<Tensor> body_inputs(inputs.begin(), inputs.begin() + static_cast<std::ptrdiff_t>(states));
  body_inputs.resize(states + scan_inputs);
  body_inputs.insert(body_inputs.end(), inputs.end() - static_cast<std::ptrdiff_t>(num_captured),
                     inputs.end());
  std::vector<std::vector<Tensor>> scanned(scans);
  for (int64_t t = 0; t < length; ++t) {
    for (size_t j = 0; j < scan_inputs; ++j)
      body_inputs[states + j] = take(inputs[states + j], axes[j], in_directions[j] == 1 ? length - 1 - t : t);
    std::vector<Tensor> out = outputs_of("body", run, body_inputs, states + scans);
    for (size_t j = 0; j < states; ++j) {
      check_carried("state " + std::to_string(j), out[j], body_inputs[j]);
      body_inputs[j] = std::move(out[j]);
    }
    for (size_t k = 0; k < scans; ++k) scanned[k].push_back(std::move(out[states + k]));
  }
  std::vector<Tensor> outputs(body_inputs.begin(), body_inputs.begin() + static_cast<std::ptrdiff_t>(states));
  const SubgraphSignature& body = signatures.at("body");
  for (size_t k = 0; k < scans; ++k) {
    const std::string what = "scan output " + std::to_string(k);
    if (scanned[k].empty()) {
      const auto& declared = body.outputs.at(states + k);
      const int rank = declared ? declared->shape.ndim() + 1 : 1;
      outputs.push_back(empty_stack(declared, normalize_axis(out_axes[k], rank, what + "'s axis")));
      continue;
    }
    const int axis = normalize_axis(out_axes[k], scanned[k].front().ndim() + 1, what + "'s axis");
    outputs.push_back(stack(scanned[k], axis, out_directions[k] == 1, what, limits.max_elements));
  }
  return outputs;
}

void require_directions(const AttrValue& value, const std::string& what) {
  for (int64_t d : std::get<std::vector<int64_t>>(value.variant()))
    KILN_CHECK(d == 0 || d == 1, ErrorCode::kInvalidArgument, what,
               ": a direction is 0 (forward) or 1 (reverse), got ", d);
}

// ---- inference ----

const TensorInfo& known(const std::optional<TensorInfo>& info, const std::string& what) {
  KILN_CHECK(info.has_value(), ErrorCode::kUnsupported, what, " is not known before it runs");
  return *info;
}

// One info for two that agree on type and rank: dims that differ become free.
TensorInfo merged(const TensorInfo& a, const std::optional<TensorInfo>& b, const std::string& what) {
  const TensorInfo& other = known(b, what);
  KILN_CHECK(a.dtype == other.dtype && a.kind == other.kind && a.shape.ndim() == other.shape.ndim(),
             ErrorCode::kUnsupported, what, " may be ", describe_info(a), " or ", describe_info(other));
  std::vector<int64_t> dims = a.shape.dims();
  for (size_t d = 0; d < dims.size(); ++d)
    if (dims[d] != other.shape[static_cast<int>(d)]) dims[d] = Shape::kUnknown;
  return TensorInfo{a.dtype, Shape(dims), a.kind, a.optional || other.optional};
}

// A scan output: the per-step info with the number of steps inserted at `axis`.
TensorInfo stacked(const TensorInfo& step, int64_t axis, int64_t count, const std::string& what) {
  const int rank = step.shape.ndim() + 1;
  KILN_CHECK(axis >= -rank && axis < rank, ErrorCode::kInvalidArgument, what, "'s axis is ", axis,
             ", outside rank ", rank);
  std::vector<int64_t> dims = step.shape.dims();
  dims.insert(dims.begin() + (axis < 0 ? axis + rank : axis), count);
  return TensorInfo{step.dtype, Shape(dims)};
}

}  // namespace

std::optional<TensorInfo> subgraph_input_info(const std::string& op, const Attrs& attrs,
                                              const std::vector<std::optional<TensorInfo>>& node_inputs,
                                              size_t num_captured, size_t k) {
  const auto node_info = [&](size_t i) { return i < node_inputs.size() ? node_inputs[i] : std::nullopt; };
  if (op == "If") return node_info(k + 1);
  if (op == "SequenceMap") {
    // An element of a sequence: its type is the sequence's, its shape known only when it runs.
    const std::optional<TensorInfo> info = node_info(k);
    return info && info->kind == ValueKind::kSequence ? std::nullopt : info;
  }
  if (op == "Loop" && k == 0) return TensorInfo{DType::kInt64, Shape{}};
  if (op == "Loop" && k == 1) return TensorInfo{DType::kBool, Shape{}};
  if (op == "Scan") {
    const auto scan_inputs = static_cast<size_t>(attrs.get_int("num_scan_inputs"));
    if (node_inputs.size() < num_captured + scan_inputs) return std::nullopt;
    const size_t states = node_inputs.size() - num_captured - scan_inputs;
    if (k >= states && k < states + scan_inputs) {
      std::optional<TensorInfo> info = node_info(k);
      if (!info) return info;
      const int rank = info->shape.ndim();
      int64_t axis = attrs.has("scan_input_axes") ? attrs.get_ints("scan_input_axes").at(k - states) : 0;
      if (axis < 0) axis += rank;
      if (axis < 0 || axis >= rank) return std::nullopt;
      std::vector<int64_t> dims = info->shape.dims();
      dims.erase(dims.begin() + axis);
      return TensorInfo{info->dtype, Shape(dims)};
    }
  }
  return node_info(k);
}

// Element i of what a malformed model may make too short (a subgraph with fewer outputs than its
// node reads): a kiln::Error naming the node's op instead of std::out_of_range.
template <class Container>
const typename Container::value_type& entry(const Container& items, size_t i) {
  KILN_CHECK(i < items.size(), ErrorCode::kInvalidArgument, "control flow: expected at least ", i + 1,
             " values where a subgraph or its node has ", items.size());
  return items[i];
}

std::vector<TensorInfo> infer_control_flow(const std::string& op, const Attrs& attrs,
                                           const std::vector<std::optional<TensorInfo>>& node_inputs,
                                           size_t num_outputs, size_t num_captured,
                                           const std::map<std::string, SubgraphSignature>& subgraphs) {
  std::vector<TensorInfo> out;
  if (op == "If") {
    const SubgraphSignature& then_branch = signature(subgraphs, op, "then_branch");
    const SubgraphSignature& else_branch = signature(subgraphs, op, "else_branch");
    for (size_t i = 0; i < num_outputs; ++i) {
      const std::string what = "If output " + std::to_string(i);
      out.push_back(merged(known(entry(then_branch.outputs, i), what), entry(else_branch.outputs, i), what));
    }
    return out;
  }
  const SubgraphSignature& body = signature(subgraphs, op, "body");
  const size_t own = node_inputs.size() - num_captured;
  if (op == "Loop") {
    const size_t carried = own - 2;
    // A carried value may change its shape from one iteration to the next: what the loop gives
    // agrees with both its initial value and what the body gives.
    for (size_t j = 0; j < carried; ++j) {
      const std::string what = "Loop output " + std::to_string(j);
      out.push_back(merged(known(entry(node_inputs, 2 + j), what), entry(body.outputs, 1 + j), what));
    }
    for (size_t k = carried; k < num_outputs; ++k)
      out.push_back(
          stacked(known(entry(body.outputs, 1 + k), "Loop scan output " + std::to_string(k - carried)), 0,
                  Shape::kUnknown, "Loop scan output"));
    return out;
  }
  if (op == "SequenceMap") {
    for (size_t k = 0; k < num_outputs; ++k) {
      const TensorInfo& element = known(entry(body.outputs, k), "SequenceMap output " + std::to_string(k));
      out.push_back(TensorInfo{element.dtype, Shape{}, ValueKind::kSequence});
    }
    return out;
  }
  if (op == "Scan") {
    const auto scan_inputs = static_cast<size_t>(attrs.get_int("num_scan_inputs"));
    const size_t states = own - scan_inputs;
    int64_t steps = Shape::kUnknown;
    if (scan_inputs > 0 && entry(node_inputs, states)) {
      const Shape& first = node_inputs[states]->shape;
      int64_t axis = attrs.has("scan_input_axes") ? attrs.get_ints("scan_input_axes").at(0) : 0;
      if (axis < 0) axis += first.ndim();
      if (axis >= 0 && axis < first.ndim()) steps = first[static_cast<int>(axis)];
    }
    for (size_t j = 0; j < states; ++j) {
      const std::string what = "Scan output " + std::to_string(j);
      out.push_back(merged(known(entry(node_inputs, j), what), entry(body.outputs, j), what));
    }
    const std::vector<int64_t> axes = ints_or_zeros(attrs, "scan_output_axes", num_outputs - states);
    for (size_t k = states; k < num_outputs; ++k) {
      const std::string what = "Scan scan output " + std::to_string(k - states);
      out.push_back(stacked(known(entry(body.outputs, k), what), entry(axes, k - states), steps, what));
    }
    return out;
  }
  raise(ErrorCode::kInternal, op, " is not a control-flow op");
}

bool is_control_flow(const std::string& op) {
  return op == "If" || op == "Loop" || op == "Scan" || op == "SequenceMap";
}

std::vector<std::string> subgraph_names(const std::string& op) {
  if (op == "If") return {"then_branch", "else_branch"};
  if (op == "Loop" || op == "Scan" || op == "SequenceMap") return {"body"};
  return {};
}

void check_subgraphs(const std::string& op, const Attrs& attrs,
                     const std::vector<std::optional<TensorInfo>>& node_inputs, size_t num_outputs,
                     size_t num_captured, const std::map<std::string, SubgraphSignature>& subgraphs) {
  const std::vector<std::string> needed = subgraph_names(op);
  for (const auto& [name, s] : subgraphs)
    KILN_CHECK(std::find(needed.begin(), needed.end(), name) != needed.end(), ErrorCode::kInvalidArgument, op,
               " has a subgraph '", name, "', which it does not take");
  KILN_CHECK(num_captured <= node_inputs.size(), ErrorCode::kInternal, op, ": ", num_captured,
             " captured values but ", node_inputs.size(), " inputs");
  for (const auto& [name, s] : subgraphs)
    KILN_CHECK(s.inputs.size() >= num_captured, ErrorCode::kInvalidArgument, op, " subgraph '", name,
               "' has ", s.inputs.size(), " inputs, fewer than the ", num_captured,
               " values it reads from outside");
  if (op == "If") return check_if(node_inputs, num_outputs, num_captured, subgraphs);
  if (op == "Loop") return check_loop(node_inputs, num_outputs, num_captured, subgraphs);
  if (op == "Scan") return check_scan(attrs, node_inputs, num_outputs, num_captured, subgraphs);
  if (op == "SequenceMap") return check_sequence_map(node_inputs, num_outputs, num_captured, subgraphs);
  KILN_CHECK(subgraphs.empty(), ErrorCode::kInvalidArgument, op,
             " is not a control-flow op and takes no subgraph");
}

std::vector<Tensor> run_control_flow(const std::string& op, const Attrs& attrs,
                                     const std::vector<Tensor>& inputs, size_t num_captured,
                                     size_t num_outputs,
                                     const std::map<std::string, SubgraphSignature>& signatures,
                                     const SubgraphRunner& run_subgraph, const ControlFlowLimits& limits) {
  if (op == "If") return run_if(inputs, num_captured, num_outputs, run_subgraph);
  if (op == "Loop") return run_loop(inputs, num_captured, num_outputs, signatures, run_subgraph, limits);
  if (op == "Scan")
    return run_scan(attrs, inputs, num_captured, num_outputs, signatures, run_subgraph, limits);
  if (op == "SequenceMap")
    return run_sequence_map(inputs, num_captured, num_outputs, signatures, run_subgraph, limits);
  raise(ErrorCode::kInternal, op, " is not a control-flow op");
}

KILN_REGISTER_OP(If)
    .doc(
        "Runs then_branch when the one-element bool cond is true, else else_branch, and gives its "
        "outputs; the branches may give different shapes.")
    .input("cond")
    .input("captured", Arity::kVariadicOrNone)
    .output("outputs", Arity::kVariadic)
    .takes_sequences()
    .data_dependent_shape()
    .infer(infer_after_run);

KILN_REGISTER_OP(Loop)
    .doc(
        "Runs body while the iteration number is below the trip count M and cond holds (either may "
        "be missing), threading the loop-carried values through; gives their final values, then each "
        "scan output stacked over the iterations along a new first axis.")
    .input("M", Arity::kOptional)
    .input("cond", Arity::kOptional)
    .input("v_initial_and_captured", Arity::kVariadicOrNone)
    .output("v_final_and_scan_outputs", Arity::kVariadic)
    .takes_sequences()
    .data_dependent_shape()
    .infer(infer_after_run);

KILN_REGISTER_OP(Scan)
    .doc(
        "Runs body once per step along the scan axis of its last num_scan_inputs inputs, threading "
        "the states (its first inputs) through; gives the final states, then each scan output "
        "stacked along its scan_output_axes (reversed where scan_output_directions is 1).")
    .input("initial_state_and_scan_inputs", Arity::kVariadic)
    .output("final_state_and_scan_outputs", Arity::kVariadic)
    .required_attr("num_scan_inputs", AttrType::kInt)
    .optional_attr("scan_input_axes", AttrType::kInts)
    .optional_attr("scan_input_directions", AttrType::kInts, require_directions)
    .optional_attr("scan_output_axes", AttrType::kInts)
    .optional_attr("scan_output_directions", AttrType::kInts, require_directions)
    .data_dependent_shape()
    .infer(infer_after_run);

KILN_REGISTER_OP(SequenceMap)
    .doc(
        "Runs body once per tensor of input_sequence, given the tensor at that position of every "
        "sequence input and each tensor input whole; gives one sequence per body output.")
    .input("input_sequence")
    .input("additional_inputs_and_captured", Arity::kVariadicOrNone)
    .output("out_sequence", Arity::kVariadic)
    .takes_sequences()
    .takes_storage_types()
    .data_dependent_shape()
    .infer(infer_after_run);

}  // namespace kiln::ops
