// Runs the ONNX backend node tests (written by tests/onnx/tools/write_node_tests.py) through
// Kiln's ONNX importer and runtime, and reports pass / fail / unsupported per op.
//
//   kiln_onnx_conformance DIR [--filter SUBSTR] [--verbose] [--json FILE] [--min-pass-rate PERCENT]
//
// Every folder DIR/<test>/ with a model.onnx is one test: the model is imported, each
// test_data_set_<k>/input_<j>.pb feeds the j-th graph input, and every output must match
// output_<j>.pb as ONNX's own backend runner requires: same dtype and shape, floats within
// rtol=1e-3, atol=1e-7 (for bfloat16 an rtol of two ulps), NaN equal to NaN, integers and bools
// exact. A kiln::Error(kUnsupported) while importing, reading the test data or compiling makes the
// test "unsupported" (an op, attribute or dtype Kiln does not have); anything else that is not a
// match is a failure.
//
// Kiln compiles shapes ahead of time, so graph inputs whose values decide a shape (Reshape's
// shape fed as an input) are bound as constants before compiling; see bind_shape_deciding_inputs.
// The summary says how many passing tests needed that.
//
// Exit status 1 when an op Kiln registers fails any of its tests (a supported op that computes
// the wrong thing is a bug, not a gap) or when the pass rate is under --min-pass-rate.
#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <map>
#include <nlohmann/json.hpp>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include "frontends/onnx/import.h"
#include "frontends/onnx/tensor_proto.h"
#include "graph/passes/passes.h"
#include "kiln/error.hpp"
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
};

// A kiln::Error(kUnsupported) is a gap in Kiln; any other problem is a failure.
struct Outcome {
  Status status = Status::kPass;
  std::string reason;
  bool bound_shape_values = false;  // see bind_shape_deciding_inputs
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

// Where the expected and actual tensors first differ, or nothing when they match.
std::string compare(const Tensor& expected, const Tensor& actual, const std::string& what) {
  std::ostringstream msg;
  if (actual.dtype() != expected.dtype()) {
    msg << what << ": dtype " << actual.dtype() << ", expected " << expected.dtype();
    return msg.str();
  }
  if (actual.shape() != expected.shape()) {
    msg << what << ": shape " << actual.shape() << ", expected " << expected.shape();
    return msg.str();
  }
  const int64_t n = expected.numel();
  int64_t mismatches = 0;
  int64_t first = -1;
  double first_actual = 0;
  double first_expected = 0;
  if (kiln::is_floating(expected.dtype())) {
    const double rtol = expected.dtype() == DType::kBFloat16 ? kBFloat16Rtol : kRtol;
    const std::vector<double> e = expected.cast(DType::kFloat64).to_vector<double>();
    const std::vector<double> a = actual.cast(DType::kFloat64).to_vector<double>();
    for (int64_t i = 0; i < n; ++i) {
      const double x = a[static_cast<size_t>(i)];
      const double y = e[static_cast<size_t>(i)];
      bool close;
      if (std::isnan(x) || std::isnan(y)) {
        close = std::isnan(x) && std::isnan(y);
      } else if (std::isinf(x) || std::isinf(y)) {
        close = x == y;
      } else {
        close = std::abs(x - y) <= kAtol + rtol * std::abs(y);
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

// The tensors <prefix>_0.pb, <prefix>_1.pb, ... of one data set.
std::vector<Tensor> load_tensors(const fs::path& data_set, const std::string& prefix) {
  std::vector<Tensor> tensors;
  for (int j = 0;; ++j) {
    const fs::path file = data_set / (prefix + "_" + std::to_string(j) + ".pb");
    if (!fs::exists(file)) break;
    tensors.push_back(kiln::onnx::load_tensor_pb(file.string()));
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

// Binds one data set's input shapes, compiles, runs and compares; the first problem is returned.
std::string run_data_set(const Graph& imported, const fs::path& data_set, Status& stage_status,
                         bool& bound_shape_values) {
  const std::vector<Tensor> inputs = load_tensors(data_set, "input");
  const std::vector<Tensor> expected = load_tensors(data_set, "output");
  const auto& imported_inputs = imported.inputs();
  if (inputs.size() != imported_inputs.size()) {
    return data_set.filename().string() + ": " + std::to_string(inputs.size()) + " input files for " +
           std::to_string(imported_inputs.size()) + " graph inputs";
  }
  std::map<std::string, Tensor> by_name;
  for (size_t j = 0; j < inputs.size(); ++j) by_name[imported_inputs[j]->name] = inputs[j];
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
  const std::vector<Tensor> outputs = executor.run(feed);
  if (outputs.size() != expected.size()) {
    return data_set.filename().string() + ": " + std::to_string(outputs.size()) + " outputs, expected " +
           std::to_string(expected.size());
  }
  for (size_t j = 0; j < outputs.size(); ++j) {
    const std::string what = data_set.filename().string() + " output " + std::to_string(j) + " '" +
                             imported.outputs()[j]->name + "'";
    std::string problem = compare(expected[j], outputs[j], what);
    if (!problem.empty()) return problem;
  }
  return {};
}

Outcome run_test(const fs::path& test_dir) {
  Outcome outcome;
  // Importing and reading the test data may say kUnsupported (an op or a dtype Kiln lacks).
  Status stage_status = Status::kUnsupported;
  try {
    const Graph graph = kiln::onnx::import_model((test_dir / "model.onnx").string());
    const std::vector<fs::path> sets = data_sets(test_dir);
    if (sets.empty()) return {Status::kFail, "no test_data_set_* folder: nothing was compared", false};
    for (const fs::path& data_set : sets) {
      stage_status = Status::kUnsupported;
      outcome.reason = run_data_set(graph, data_set, stage_status, outcome.bound_shape_values);
      if (!outcome.reason.empty()) {
        outcome.status = Status::kFail;
        return outcome;
      }
    }
  } catch (const kiln::Error& e) {
    const bool gap = e.code() == ErrorCode::kUnsupported && stage_status == Status::kUnsupported;
    outcome.status = gap ? Status::kUnsupported : Status::kFail;
    outcome.reason = std::string(kiln::error_code_name(e.code())) + ": " + e.what();
  } catch (const std::exception& e) {
    outcome.status = Status::kFail;
    outcome.reason = std::string("std::exception: ") + e.what();
  }
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

void write_json(const std::string& path, const std::vector<TestResult>& results, const Tally& total) {
  nlohmann::json tests = nlohmann::json::array();
  for (const auto& r : results)
    tests.push_back({{"name", r.name},
                     {"op", r.op},
                     {"status", status_name(r.outcome.status)},
                     {"reason", r.outcome.reason},
                     {"shape_inputs_bound", r.outcome.bound_shape_values}});
  const nlohmann::json doc = {{"tests", tests},
                              {"totals",
                               {{"passed", total.pass},
                                {"failed", total.fail},
                                {"unsupported", total.unsupported},
                                {"total", total.total()}}}};
  std::ofstream out(path);
  KILN_CHECK(out.good(), ErrorCode::kIo, "cannot write '", path, "'");
  out << doc.dump(1) << "\n";
}

int usage() {
  std::cerr << "usage: kiln_onnx_conformance DIR [--filter SUBSTR] [--verbose] [--json FILE] "
               "[--min-pass-rate PERCENT]\n";
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

  const auto start = std::chrono::steady_clock::now();
  std::vector<TestResult> results;
  for (const fs::path& dir : test_dirs) {
    const std::string name = dir.filename().string();
    if (name.find(options.filter) == std::string::npos) continue;
    results.push_back({name, grouper.op_of(name), run_test(dir)});
    const TestResult& r = results.back();
    const Status status = r.outcome.status;
    if (status == Status::kFail || (options.verbose && status == Status::kUnsupported)) {
      std::printf("%s %s (%s): %s\n", status == Status::kFail ? "FAIL" : "UNSUPPORTED", r.name.c_str(),
                  r.op.c_str(), one_line(r.outcome.reason).c_str());
    }
  }
  const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();

  const std::vector<std::string> registered = kiln::ops::OpRegistry::global().names();
  const std::set<std::string> kiln_ops(registered.begin(), registered.end());
  std::map<std::string, Tally> by_op;
  Tally total;
  int bound = 0;
  for (const auto& r : results) {
    by_op[r.op].add(r.outcome.status);
    total.add(r.outcome.status);
    if (r.outcome.status == Status::kPass && r.outcome.bound_shape_values) ++bound;
  }
  std::printf("\n");
  print_table(by_op, kiln_ops);

  std::vector<std::string> failing_kiln_ops;
  for (const auto& [op, tally] : by_op)
    if (tally.fail > 0 && kiln_ops.count(op)) failing_kiln_ops.push_back(op);
  const double pass_rate = total.total() == 0 ? 0.0 : 100.0 * total.pass / total.total();
  std::printf("\n%d passing tests ran with their shape-deciding inputs bound as constants; %.1f s\n", bound,
              seconds);
  std::printf("conformance: %d passed, %d failed, %d unsupported of %d (%.1f%% pass)\n", total.pass,
              total.fail, total.unsupported, total.total(), pass_rate);
  if (!options.json_path.empty()) write_json(options.json_path, results, total);

  int status = 0;
  if (!failing_kiln_ops.empty()) {
    std::printf("ops Kiln registers with failing tests:");
    for (const auto& op : failing_kiln_ops) std::printf(" %s", op.c_str());
    std::printf("\n");
    status = 1;
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
