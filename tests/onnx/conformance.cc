// Runs the ONNX backend node tests (written by tests/onnx/tools/write_node_tests.py) through
// Kiln's ONNX importer and runtime, and reports pass / fail / unsupported per op.
//
//   kiln_onnx_conformance DIR [--filter SUBSTR] [--verbose] [--json FILE] [--min-pass-rate PERCENT]
//                         [--baseline FILE] [--write-baseline FILE]
//
// Every folder DIR/<test>/ with a model.onnx is one test: the model is imported into a
// kiln::Predictor with `kiln run`'s options, each test_data_set_<k>/input_<j>.pb is given as the
// j-th input (as ONNX Runtime's runner gives it: inputs that decide shapes stay inputs), and every
// output must match output_<j>.pb as ONNX's own backend runner requires: same dtype and shape,
// floats within rtol=1e-3, atol=1e-7 (for bfloat16 an rtol of two ulps), NaN equal to NaN,
// integers and bools exact; the random ops' outputs, whose expected values ONNX calls informational,
// by shape and dtype only (counted apart in the summary). A kiln::Error(kUnsupported) from a test whose op
// Kiln does not register makes the test "unsupported"; anything else that is not a match is a failure, so a
// registered op that rejects a valid attribute or dtype fails.
//
// Beside that figure, each test also runs the older way: the graph inputs whose values decide a
// shape bound as constants first (see bind_shape_deciding_inputs) and compiled with the reference
// kernels. That figure is reported next to the first, never instead of it.
//
// Exit status 1 when a test listed in --baseline (the tests that passed when it was written, by
// --write-baseline) does not pass, or when the pass rate is under --min-pass-rate.
#include <algorithm>
#include <cctype>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <limits>
#include <map>
#include <nlohmann/json.hpp>
#include <optional>
#include <set>
#include <sstream>
#include <string>
#include <tuple>
#include <vector>

#include "frontends/onnx/import.h"
#include "frontends/onnx/tensor_proto.h"
#include "graph/passes/passes.h"
#include "kiln/error.hpp"
#include "kiln/predictor.hpp"
#include "onnx/onnx_pb.h"
#include "ops/op_schema.h"
#include "runtime/executor.h"
#include "runtime/plan.h"

namespace {

namespace fs = std::filesystem;
using kiln::DType;
using kiln::ErrorCode;
using kiln::Tensor;
using kiln::graph::Graph;
using kiln::graph::Node;
using kiln::graph::Value;

// The tolerances of onnx.backend.test.runner for node tests.
constexpr double kRtol = 1e-3;
constexpr double kAtol = 1e-7;
constexpr double kBFloat16Rtol = 1.0 / 64;  // two bfloat16 ulps, as the ONNX runner allows

enum class Status { kPass, kFail, kUnsupported };

const char* status_name(Status s) {
  switch (s) {
    case Status::kPass:
      return "pass";
    case Status::kFail:
      return "fail";
    case Status::kUnsupported:
      return "unsupported";
  }
  return "?";
}

struct Options {
  fs::path dir;
  std::string filter;
  bool verbose = false;
  std::string json_path;
  double min_pass_rate = 0;  // percent
  std::string baseline_path;
  std::string write_baseline_path;
};

// A kiln::Error(kUnsupported) is a gap in Kiln; any other problem is a failure.
struct Outcome {
  Status status = Status::kPass;  // given as inputs, through the Predictor
  std::string reason;
  Status bound_status = Status::kPass;  // with shape-deciding inputs bound as constants
  std::string bound_reason;
  bool bound_shape_values = false;  // see bind_shape_deciding_inputs
  bool random_values = false;       // compared by shape and dtype (draws_informational_values)
};

struct TestResult {
  std::string name;
  std::string op;
  Outcome outcome;
};

std::string one_line(const std::string& text) {
  std::string out;
  for (char c : text) {
    if (c == '\n') {
      out += "; ";
    } else {
      out += c;
    }
  }
  return out;
}

::onnx::ModelProto read_model(const fs::path& path) {
  std::ifstream in(path, std::ios::binary);
  ::onnx::ModelProto model;
  KILN_CHECK(in.good() && model.ParseFromIstream(&in), ErrorCode::kIo, "'", path.string(),
             "' is not an ONNX model");
  return model;
}

// The op a test exercises. A one-node test names its node's op. A multi-node test (a function's
// expansion, a small model) is attributed to the one-node test whose name is the longest prefix of
// its own ("test_softmax_axis_0_expanded" -> "test_softmax_axis_0" -> Softmax); failing that, to
// the first word of its name ("test_sequence_map_add" -> "sequence").
class OpGrouper {
 public:
  void add_single_node_test(const std::string& name, const std::string& op) { single_[name] = op; }

  std::string op_of(const std::string& name) const {
    if (auto it = single_.find(name); it != single_.end()) return it->second;
    for (std::string prefix = name; !prefix.empty();) {
      const size_t cut = prefix.rfind('_');
      if (cut == std::string::npos) break;
      prefix.resize(cut);
      if (auto it = single_.find(prefix); it != single_.end()) return it->second;
    }
    std::string rest = name.rfind("test_", 0) == 0 ? name.substr(5) : name;
    return rest.substr(0, rest.find('_'));
  }

 private:
  std::map<std::string, std::string> single_;
};

// Where the expected and actual tensors first differ, or nothing when they match. `relative_atol`
// adds that fraction of the largest expected magnitude to the absolute tolerance. Sequences match
// element by element; an absent optional value matches only another.
std::string compare(const Tensor& expected, const Tensor& actual, const std::string& what,
                    double relative_atol = 0) {
  std::ostringstream msg;
  if (!expected.defined() || !actual.defined()) {
    if (expected.defined() == actual.defined()) return {};
    return what +
           (actual.defined() ? ": a value, expected none (an empty optional)" : ": no value, expected one");
  }
  if (expected.is_sequence() || actual.is_sequence()) {
    if (!expected.is_sequence() || !actual.is_sequence())
      return what +
             (actual.is_sequence() ? ": a sequence, expected a tensor" : ": a tensor, expected a sequence");
    const std::vector<Tensor>& want = expected.elements();
    const std::vector<Tensor>& got = actual.elements();
    if (want.size() != got.size())
      return what + ": a sequence of " + std::to_string(got.size()) + " tensors, expected " +
             std::to_string(want.size());
    for (size_t i = 0; i < want.size(); ++i) {
      std::string problem = compare(want[i], got[i], what + " element " + std::to_string(i), relative_atol);
      if (!problem.empty()) return problem;
    }
    return {};
  }
  if (actual.dtype() != expected.dtype()) {
    msg << what << ": dtype " << actual.dtype() << ", expected " << expected.dtype();
    return msg.str();
  }
  if (actual.shape() != expected.shape()) {
    msg << what << ": shape " << actual.shape() << ", expected " << expected.shape();
    return msg.str();
  }
  if (kiln::is_string(expected.dtype())) {
    const std::vector<std::string> e = expected.to_vector<std::string>(), a = actual.to_vector<std::string>();
    for (size_t i = 0; i < e.size(); ++i)
      if (a[i] != e[i])
        return what + ": element " + std::to_string(i) + " is '" + a[i] + "', expected '" + e[i] + "'";
    return {};
  }
  const int64_t n = expected.numel();
  int64_t mismatches = 0;
  int64_t first = -1;
  double first_actual = 0;
  double first_expected = 0;
  // The storage floats compare as the exact values they hold.
  if (kiln::is_floating(expected.dtype()) || kiln::is_storage_float(expected.dtype())) {
    const double rtol = expected.dtype() == DType::kBFloat16 ? kBFloat16Rtol : kRtol;
    const std::vector<double> e = expected.cast(DType::kFloat64).to_vector<double>();
    const std::vector<double> a = actual.cast(DType::kFloat64).to_vector<double>();
    double largest = 0;
    for (double y : e)
      if (std::isfinite(y)) largest = std::max(largest, std::abs(y));
    const double atol = kAtol + relative_atol * largest;
    for (int64_t i = 0; i < n; ++i) {
      const double x = a[static_cast<size_t>(i)];
      const double y = e[static_cast<size_t>(i)];
      bool close;
      if (std::isnan(x) || std::isnan(y)) {
        close = std::isnan(x) && std::isnan(y);
      } else if (std::isinf(x) || std::isinf(y)) {
        close = x == y;
      } else {
        close = std::abs(x - y) <= atol + rtol * std::abs(y);
      }
      if (!close && mismatches++ == 0) {
        first = i;
        first_actual = x;
        first_expected = y;
      }
    }
  } else {
    const std::vector<int64_t> e = expected.cast(DType::kInt64).to_vector<int64_t>();
    const std::vector<int64_t> a = actual.cast(DType::kInt64).to_vector<int64_t>();
    for (int64_t i = 0; i < n; ++i) {
      if (a[static_cast<size_t>(i)] != e[static_cast<size_t>(i)] && mismatches++ == 0) {
        first = i;
        first_actual = static_cast<double>(a[static_cast<size_t>(i)]);
        first_expected = static_cast<double>(e[static_cast<size_t>(i)]);
      }
    }
  }
  if (mismatches == 0) return {};
  msg.precision(9);
  msg << what << ": " << mismatches << " of " << n << " elements differ; first at flat index " << first
      << ": " << first_actual << ", expected " << first_expected << " (shape " << expected.shape() << ", "
      << expected.dtype() << ")";
  return msg.str();
}

// What each value file of a data set holds, as the model declares its inputs (those that are not
// initializers) or outputs: a tensor, a sequence or an optional value, and the element type.
struct ValueFile {
  kiln::onnx::ValueFile kind = kiln::onnx::ValueFile::kTensor;
  DType element_dtype = DType::kFloat32;
};

ValueFile value_file(const ::onnx::TypeProto& type) {
  ValueFile file;
  const ::onnx::TypeProto* t = &type;
  if (t->has_optional_type()) {
    file.kind = kiln::onnx::ValueFile::kOptional;
    t = &t->optional_type().elem_type();
  }
  if (t->has_sequence_type()) {
    if (file.kind == kiln::onnx::ValueFile::kTensor) file.kind = kiln::onnx::ValueFile::kSequence;
    t = &t->sequence_type().elem_type();
  }
  try {
    if (t->has_tensor_type()) file.element_dtype = kiln::dtype_from_onnx(t->tensor_type().elem_type());
  } catch (const kiln::Error&) {
    // A type Kiln lacks: importing the model says so.
  }
  return file;
}

struct DeclaredFiles {
  std::vector<ValueFile> inputs, outputs;
};

DeclaredFiles declared_files(const fs::path& model_path) {
  ::onnx::ModelProto model;
  std::ifstream in(model_path, std::ios::binary);
  KILN_CHECK(in.good() && model.ParseFromIstream(&in), ErrorCode::kIo, "cannot read '", model_path.string(),
             "'");
  std::set<std::string> initializers;
  for (const auto& init : model.graph().initializer()) initializers.insert(init.name());
  DeclaredFiles files;
  for (const auto& input : model.graph().input())
    if (!initializers.count(input.name())) files.inputs.push_back(value_file(input.type()));
  for (const auto& output : model.graph().output()) files.outputs.push_back(value_file(output.type()));
  return files;
}

// The values <prefix>_0.pb, <prefix>_1.pb, ... of one data set, read as `declared` says.
std::vector<Tensor> load_tensors(const fs::path& data_set, const std::string& prefix,
                                 const std::vector<ValueFile>& declared) {
  std::vector<Tensor> tensors;
  for (size_t j = 0;; ++j) {
    const fs::path file = data_set / (prefix + "_" + std::to_string(j) + ".pb");
    if (!fs::exists(file)) break;
    const ValueFile kind = j < declared.size() ? declared[j] : ValueFile{};
    tensors.push_back(kiln::onnx::load_value_pb(file.string(), kind.kind, kind.element_dtype));
  }
  return tensors;
}

std::vector<fs::path> data_sets(const fs::path& test_dir) {
  std::vector<fs::path> sets;
  for (const auto& entry : fs::directory_iterator(test_dir)) {
    if (entry.is_directory() && entry.path().filename().string().rfind("test_data_set_", 0) == 0)
      sets.push_back(entry.path());
  }
  std::sort(sets.begin(), sets.end());
  return sets;
}

// The graph inputs whose values decide a shape: read, directly or through other nodes, by an input
// that shape inference reads the values of (Reshape's shape, Range's limits, Split's split, ...).
std::set<const Value*> shape_deciding_inputs(const Graph& graph) {
  std::set<const Value*> graph_inputs(graph.inputs().begin(), graph.inputs().end());
  std::set<const Value*> found;
  std::set<const Value*> seen;
  std::vector<const Value*> pending;
  for (const Node* node : graph.nodes()) {
    const auto& specs = node->schema().inputs();
    for (size_t i = 0; i < node->inputs.size() && !specs.empty(); ++i) {
      if (node->inputs[i] != nullptr && specs[std::min(i, specs.size() - 1)].value_sets_shape)
        pending.push_back(node->inputs[i]);
    }
  }
  while (!pending.empty()) {
    const Value* v = pending.back();
    pending.pop_back();
    if (!seen.insert(v).second) continue;
    if (graph_inputs.count(v)) found.insert(v);
    if (v->producer != nullptr) {
      for (const Value* in : v->producer->inputs)
        if (in != nullptr) pending.push_back(in);
    }
  }
  return found;
}

// Kiln compiles every shape ahead of time, so the values that decide shapes must be constants
// when a plan is compiled. The ONNX tests feed some of them as graph inputs; those become
// initializers here (as an exporter with fixed shapes writes them) and what can be computed from
// constants alone is folded with the ops' reference kernels. Returns whether anything was bound.
bool bind_shape_deciding_inputs(Graph& graph, const std::map<std::string, Tensor>& values) {
  const std::set<const Value*> deciding = shape_deciding_inputs(graph);
  if (deciding.empty()) return false;
  for (Value* input : std::vector<Value*>(graph.inputs())) {
    if (!deciding.count(input)) continue;
    Value* constant = graph.add_initializer(graph.fresh_name(input->name + "/value"), values.at(input->name));
    graph.replace_all_uses(input, constant);
  }
  graph.remove_unused_values(/*inputs_too=*/true);
  kiln::graph::constant_folding_pass().run(graph);
  return true;
}

// Older ONNX releases wrote bfloat16 test tensors with data_type UINT16 (Debian's libonnx-testdata
// has such files); their bits are bfloat16's, so a uint16 tensor where bfloat16 is declared or
// produced is read as bfloat16.
Tensor as_bfloat16_if_declared(const Tensor& t, DType declared) {
  if (!t.defined() || t.is_sequence() || declared != DType::kBFloat16 || t.dtype() != DType::kUInt16)
    return t;
  return Tensor(t.storage(), t.shape(), DType::kBFloat16, t.strides(), t.offset());
}

// DFT and STFT sum whole signals, and the ONNX reference computes them with numpy's float32 FFT,
// whose rounding is float32's epsilon times the signal's magnitude: a graph with one compares with
// an absolute tolerance of that epsilon times the largest expected magnitude.
double spectral_atol(const Graph& g) {
  for (const Node* node : g.nodes())
    if (node->op == "DFT" || node->op == "STFT") return std::numeric_limits<float>::epsilon();
  return 0;
}

// The ops whose node tests hold draws of numpy's generator, which ONNX calls informational: "the
// generator operator is non-deterministic and may not produce the same values in different
// implementations even if a seed is specified" (ONNX Runtime's runner skips them). Their outputs
// are compared by shape and dtype, and the summary counts them apart.
bool draws_informational_values(const Graph& g) {
  static const std::set<std::string> kRandomOps = {"Bernoulli",        "Multinomial",   "RandomNormal",
                                                   "RandomNormalLike", "RandomUniform", "RandomUniformLike"};
  for (const kiln::graph::Node* n : g.nodes())
    if (kRandomOps.count(n->op)) return true;
  return false;
}

std::string compare_shape_and_dtype(const Tensor& expected, const Tensor& actual, const std::string& what) {
  if (expected.shape() == actual.shape() && expected.dtype() == actual.dtype()) return {};
  std::ostringstream msg;
  msg << what << ": " << actual.dtype() << " " << actual.shape() << ", expected " << expected.dtype() << " "
      << expected.shape();
  return msg.str();
}

// Where the outputs first differ from the data set's expected ones, or nothing when they match.
std::string compare_outputs(const Graph& imported, const DeclaredFiles& files, const fs::path& data_set,
                            const std::vector<Tensor>& outputs) {
  const std::vector<Tensor> expected = load_tensors(data_set, "output", files.outputs);
  if (outputs.size() != expected.size()) {
    return data_set.filename().string() + ": " + std::to_string(outputs.size()) + " outputs, expected " +
           std::to_string(expected.size());
  }
  const bool random = draws_informational_values(imported);
  for (size_t j = 0; j < outputs.size(); ++j) {
    const std::string what = data_set.filename().string() + " output " + std::to_string(j) + " '" +
                             imported.outputs()[j]->name + "'";
    std::string problem = random ? compare_shape_and_dtype(expected[j], outputs[j], what)
                                 : compare(as_bfloat16_if_declared(expected[j], outputs[j].dtype()),
                                           outputs[j], what, spectral_atol(imported));
    if (!problem.empty()) return problem;
  }
  return {};
}

// The inputs of one data set, checked against the graph's inputs.
std::vector<Tensor> data_set_inputs(const Graph& imported, const DeclaredFiles& files,
                                    const fs::path& data_set) {
  std::vector<Tensor> inputs = load_tensors(data_set, "input", files.inputs);
  std::vector<const Value*> fed;
  for (const Value* v : imported.inputs())
    if (!v->is_constant()) fed.push_back(v);
  KILN_CHECK(inputs.size() == fed.size(), ErrorCode::kInvalidArgument, data_set.filename().string(), ": ",
             inputs.size(), " input files for ", fed.size(), " graph inputs");
  for (size_t i = 0; i < inputs.size(); ++i)
    if (fed[i]->info) inputs[i] = as_bfloat16_if_declared(inputs[i], fed[i]->info->dtype);
  return inputs;
}

// Binds one data set's input shapes and shape-deciding values, compiles with the reference
// kernels, runs and compares; the first problem is returned.
std::string run_data_set_bound(const Graph& imported, const DeclaredFiles& files, const fs::path& data_set,
                               Status& stage_status, bool& bound_shape_values) {
  const std::vector<Tensor> inputs = data_set_inputs(imported, files, data_set);
  std::map<std::string, Tensor> by_name;
  for (size_t j = 0; j < inputs.size(); ++j) by_name[imported.inputs()[j]->name] = inputs[j];
  // Only binding and compiling may still say kUnsupported (a kernel for a dtype Kiln lacks);
  // running may not.
  stage_status = Status::kUnsupported;
  Graph graph = imported.clone();
  if (bind_shape_deciding_inputs(graph, by_name)) bound_shape_values = true;
  std::map<std::string, kiln::Shape> shapes;
  std::vector<Tensor> feed;
  for (const Value* input : graph.inputs()) {
    shapes[input->name] = by_name.at(input->name).shape();
    feed.push_back(by_name.at(input->name));
  }
  const Graph bound = kiln::runtime::bind_input_shapes(graph, shapes);
  kiln::runtime::Executor executor(kiln::runtime::compile(bound));
  stage_status = Status::kFail;
  return compare_outputs(imported, files, data_set, executor.run(feed));
}

// The outcome of `body` over every data set: the first problem, or a kiln::Error(kUnsupported)
// while `stage` still says kUnsupported as a gap.
template <class Body>
std::pair<Status, std::string> over_data_sets(const std::vector<fs::path>& sets, Body body) {
  Status stage = Status::kUnsupported;
  try {
    for (const fs::path& data_set : sets) {
      stage = Status::kUnsupported;
      std::string problem = body(data_set, stage);
      if (!problem.empty()) return {Status::kFail, problem};
    }
  } catch (const kiln::Error& e) {
    const bool gap = e.code() == ErrorCode::kUnsupported && stage == Status::kUnsupported;
    return {gap ? Status::kUnsupported : Status::kFail,
            std::string(kiln::error_code_name(e.code())) + ": " + e.what()};
  } catch (const std::exception& e) {
    return {Status::kFail, std::string("std::exception: ") + e.what()};
  }
  return {Status::kPass, {}};
}

Outcome run_test(const fs::path& test_dir) {
  Outcome outcome;
  Graph graph;
  std::vector<fs::path> sets;
  DeclaredFiles files;
  // Importing may say kUnsupported (an op or a dtype Kiln lacks).
  try {
    graph = kiln::onnx::import_model((test_dir / "model.onnx").string());
    sets = data_sets(test_dir);
    files = declared_files(test_dir / "model.onnx");
  } catch (const kiln::Error& e) {
    const Status status = e.code() == ErrorCode::kUnsupported ? Status::kUnsupported : Status::kFail;
    const std::string reason = std::string(kiln::error_code_name(e.code())) + ": " + e.what();
    return {status, reason, status, reason, false};
  }
  if (sets.empty()) {
    const std::string reason = "no test_data_set_* folder: nothing was compared";
    return {Status::kFail, reason, Status::kFail, reason, false};
  }
  outcome.random_values = draws_informational_values(graph);
  // As `kiln run` runs it: one Predictor for every data set, every input given as an input.
  std::optional<kiln::Predictor> predictor;
  std::tie(outcome.status, outcome.reason) = over_data_sets(sets, [&](const fs::path& data_set, Status&) {
    if (!predictor) predictor.emplace(graph.clone());
    return compare_outputs(graph, files, data_set,
                           predictor->predict(data_set_inputs(graph, files, data_set)));
  });
  std::tie(outcome.bound_status, outcome.bound_reason) =
      over_data_sets(sets, [&](const fs::path& data_set, Status& stage) {
        return run_data_set_bound(graph, files, data_set, stage, outcome.bound_shape_values);
      });
  return outcome;
}

struct Tally {
  int pass = 0;
  int fail = 0;
  int unsupported = 0;
  int total() const { return pass + fail + unsupported; }
  void add(Status s) {
    if (s == Status::kPass) ++pass;
    if (s == Status::kFail) ++fail;
    if (s == Status::kUnsupported) ++unsupported;
  }
};

void print_table(const std::map<std::string, Tally>& by_op, const std::set<std::string>& kiln_ops) {
  size_t width = 2;
  for (const auto& [op, tally] : by_op) width = std::max(width, op.size());
  std::printf("%-*s  %5s %5s %11s  %s\n", static_cast<int>(width), "op", "pass", "fail", "unsupported",
              "in Kiln");
  for (const auto& [op, tally] : by_op) {
    std::printf("%-*s  %5d %5d %11d  %s\n", static_cast<int>(width), op.c_str(), tally.pass, tally.fail,
                tally.unsupported, kiln_ops.count(op) ? "yes" : "");
  }
}

void write_json(const std::string& path, const std::vector<TestResult>& results, const Tally& total,
                const Tally& bound) {
  nlohmann::json tests = nlohmann::json::array();
  for (const auto& r : results)
    tests.push_back({{"name", r.name},
                     {"op", r.op},
                     {"status", status_name(r.outcome.status)},
                     {"reason", r.outcome.reason},
                     {"status_bound", status_name(r.outcome.bound_status)},
                     {"reason_bound", r.outcome.bound_reason},
                     {"shape_inputs_bound", r.outcome.bound_shape_values}});
  const auto totals = [](const Tally& t) {
    return nlohmann::json{
        {"passed", t.pass}, {"failed", t.fail}, {"unsupported", t.unsupported}, {"total", t.total()}};
  };
  const nlohmann::json doc = {{"tests", tests}, {"totals", totals(total)}, {"totals_bound", totals(bound)}};
  std::ofstream out(path);
  KILN_CHECK(out.good(), ErrorCode::kIo, "cannot write '", path, "'");
  out << doc.dump(1) << "\n";
}

// The test names of a baseline file: one a line; '#' starts a comment.
std::set<std::string> read_baseline(const std::string& path) {
  std::ifstream in(path);
  KILN_CHECK(in.good(), ErrorCode::kIo, "cannot read baseline '", path, "'");
  std::set<std::string> names;
  for (std::string line; std::getline(in, line);) {
    line = line.substr(0, line.find('#'));
    while (!line.empty() && std::isspace(static_cast<unsigned char>(line.back()))) line.pop_back();
    if (!line.empty()) names.insert(line);
  }
  return names;
}

void write_baseline(const std::string& path, const std::vector<TestResult>& results) {
  std::ofstream out(path);
  KILN_CHECK(out.good(), ErrorCode::kIo, "cannot write '", path, "'");
  out << "# ONNX backend node tests that pass through kiln::Predictor with their inputs as inputs\n"
         "# (tests/onnx/conformance.cc). A test listed here may not regress; add tests as they pass.\n";
  for (const auto& r : results)
    if (r.outcome.status == Status::kPass) out << r.name << "\n";
}

int usage() {
  std::cerr << "usage: kiln_onnx_conformance DIR [--filter SUBSTR] [--verbose] [--json FILE] "
               "[--min-pass-rate PERCENT] [--baseline FILE] [--write-baseline FILE]\n";
  return 2;
}

int run(const Options& options) {
  std::vector<fs::path> test_dirs;
  for (const auto& entry : fs::directory_iterator(options.dir)) {
    if (fs::exists(entry.path() / "model.onnx")) test_dirs.push_back(entry.path());
  }
  std::sort(test_dirs.begin(), test_dirs.end());

  // Every test's model is read for grouping, so that a filtered run groups tests the same way.
  OpGrouper grouper;
  for (const fs::path& dir : test_dirs) {
    const ::onnx::ModelProto model = read_model(dir / "model.onnx");
    if (model.graph().node_size() == 1)
      grouper.add_single_node_test(dir.filename().string(), model.graph().node(0).op_type());
  }

  const std::vector<std::string> registered = kiln::ops::OpRegistry::global().names();
  const std::set<std::string> kiln_ops(registered.begin(), registered.end());
  const auto start = std::chrono::steady_clock::now();
  std::vector<TestResult> results;
  for (const fs::path& dir : test_dirs) {
    const std::string name = dir.filename().string();
    if (name.find(options.filter) == std::string::npos) continue;
    results.push_back({name, grouper.op_of(name), run_test(dir)});
    TestResult& r = results.back();
    // A gap is an op Kiln does not have; an op it registers that refuses a valid test fails it.
    if (kiln_ops.count(r.op)) {
      if (r.outcome.status == Status::kUnsupported) r.outcome.status = Status::kFail;
      if (r.outcome.bound_status == Status::kUnsupported) r.outcome.bound_status = Status::kFail;
    }
    const Status status = r.outcome.status;
    if (status == Status::kFail || (options.verbose && status == Status::kUnsupported)) {
      std::printf("%s %s (%s): %s\n", status == Status::kFail ? "FAIL" : "UNSUPPORTED", r.name.c_str(),
                  r.op.c_str(), one_line(r.outcome.reason).c_str());
    }
  }
  const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();

  std::map<std::string, Tally> by_op;
  Tally total, bound_total;
  int bound = 0, random = 0;
  for (const auto& r : results) {
    if (r.outcome.status == Status::kPass && r.outcome.random_values) ++random;
    by_op[r.op].add(r.outcome.status);
    total.add(r.outcome.status);
    bound_total.add(r.outcome.bound_status);
    if (r.outcome.bound_status == Status::kPass && r.outcome.bound_shape_values) ++bound;
  }
  std::printf("\n");
  print_table(by_op, kiln_ops);

  const auto rate = [](const Tally& t) { return t.total() == 0 ? 0.0 : 100.0 * t.pass / t.total(); };
  const double pass_rate = rate(total);
  std::printf("\n%.1f s\n", seconds);
  std::printf(
      "with shape-deciding inputs bound as constants (reference kernels): %d passed, %d failed, %d "
      "unsupported of %d (%.1f%% pass; %d of the passes needed the binding)\n",
      bound_total.pass, bound_total.fail, bound_total.unsupported, bound_total.total(), rate(bound_total),
      bound);
  std::printf(
      "conformance: %d passed, %d failed, %d unsupported of %d (%.1f%% pass), inputs given as inputs; %d of "
      "the "
      "passes draw random values, compared by shape and dtype\n",
      total.pass, total.fail, total.unsupported, total.total(), pass_rate, random);
  if (!options.json_path.empty()) write_json(options.json_path, results, total, bound_total);
  if (!options.write_baseline_path.empty()) write_baseline(options.write_baseline_path, results);

  int status = 0;
  if (!options.baseline_path.empty()) {
    std::map<std::string, const TestResult*> by_name;
    for (const auto& r : results) by_name[r.name] = &r;
    int regressed = 0;
    for (const std::string& name : read_baseline(options.baseline_path)) {
      const auto it = by_name.find(name);
      if (it == by_name.end()) continue;  // filtered out, or not in this set of tests
      if (it->second->outcome.status == Status::kPass) continue;
      std::printf("REGRESSION %s (%s): passed in the baseline, now %s\n", name.c_str(),
                  it->second->op.c_str(), status_name(it->second->outcome.status));
      ++regressed;
    }
    if (regressed > 0) {
      std::printf("%d test(s) of the baseline '%s' no longer pass\n", regressed,
                  options.baseline_path.c_str());
      status = 1;
    }
  }
  if (pass_rate < options.min_pass_rate) {
    std::printf("pass rate %.1f%% is under the required %.1f%%\n", pass_rate, options.min_pass_rate);
    status = 1;
  }
  return status;
}

}  // namespace

int main(int argc, char** argv) {
  Options options;
  std::vector<std::string> args(argv + 1, argv + argc);
  for (size_t i = 0; i < args.size(); ++i) {
    const std::string& arg = args[i];
    const bool has_value = i + 1 < args.size();
    if (arg == "--verbose") {
      options.verbose = true;
    } else if (arg == "--filter" && has_value) {
      options.filter = args[++i];
    } else if (arg == "--baseline" && has_value) {
      options.baseline_path = args[++i];
    } else if (arg == "--write-baseline" && has_value) {
      options.write_baseline_path = args[++i];
    } else if (arg == "--json" && has_value) {
      options.json_path = args[++i];
    } else if (arg == "--min-pass-rate" && has_value) {
      try {
        options.min_pass_rate = std::stod(args[++i]);
      } catch (const std::exception&) {
        return usage();
      }
    } else if (options.dir.empty() && arg.rfind("--", 0) != 0) {
      options.dir = arg;
    } else {
      return usage();
    }
  }
  if (options.dir.empty()) return usage();
  try {
    return run(options);
  } catch (const std::exception& e) {
    std::cerr << "kiln_onnx_conformance: " << e.what() << "\n";
    return 2;
  }
}
