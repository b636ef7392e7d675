// kiln info MODEL [--json] [--nodes] [--shape NAME=D0,D1,...]: inputs, outputs, op counts,
// parameters and FLOPs (for the given shapes, or the declared ones with a free batch of 1), and with
// --nodes every node. An input given a shape shows it, beside the shape the model declares.
#include <algorithm>
#include <iomanip>
#include <iostream>
#include <memory>
#include <optional>

#include <nlohmann/json.hpp>

#include "cli.h"
#include "graph/graph.h"
#include "runtime/flops.h"
#include "runtime/graph_checks.h"
#include "runtime/plan.h"

namespace kiln::cli {

namespace {

struct InfoArgs {
  ModelArgs model;
  bool json = false;
  bool nodes = false;
  std::vector<std::string> shapes;
};

// A value's shape as inference left it: "(1, 3, 224, 224)", "?" when unknown, "-" when absent.
std::string value_text(const graph::Value* v) {
  if (v == nullptr) return "-";
  return v->info ? v->info->shape.to_string() : "?";
}

// One row per node, in graph order: name, op, input shapes -> output shapes. The names are what
// quantize --exclude, prune --layer and optimize --fp32-node take.
nlohmann::json node_rows(const graph::Graph& g) {
  nlohmann::json rows = nlohmann::json::array();
  for (const graph::Node* node : g.topological_order()) {
    nlohmann::json inputs = nlohmann::json::array(), outputs = nlohmann::json::array();
    for (const graph::Value* v : node->inputs) inputs.push_back(value_text(v));
    for (const graph::Value* v : node->outputs) outputs.push_back(value_text(v));
    rows.push_back({{"name", node->name}, {"op", node->op}, {"inputs", inputs}, {"outputs", outputs}});
  }
  return rows;
}

void print_node_rows(const nlohmann::json& rows) {
  size_t name_width = 4, op_width = 2;
  for (const auto& row : rows) {
    name_width = std::max(name_width, row["name"].get<std::string>().size());
    op_width = std::max(op_width, row["op"].get<std::string>().size());
  }
  std::cout << "nodes:\n";
  for (const auto& row : rows) {
    auto joined = [](const nlohmann::json& shapes) {
      std::string text;
      for (const auto& s : shapes) text += (text.empty() ? "" : ", ") + s.get<std::string>();
      return text;
    };
    std::cout << "  " << std::left << std::setw(static_cast<int>(name_width))
              << row["name"].get<std::string>() << "  " << std::setw(static_cast<int>(op_width))
              << row["op"].get<std::string>() << "  " << joined(row["inputs"]) << " -> "
              << joined(row["outputs"]) << "\n";
  }
}

// A sequence's dtype is its elements'; it has no shape of its own.
nlohmann::json spec_json(const TensorSpec& spec) {
  if (!spec.known) return {{"name", spec.name}, {"dtype", nullptr}, {"shape", nullptr}};
  return {{"name", spec.name},
          {"dtype", dtype_name(spec.dtype)},
          {"shape", spec.sequence ? nlohmann::json(nullptr) : nlohmann::json(spec.shape.dims())},
          {"sequence", spec.sequence},
          {"optional", spec.optional}};
}

std::string shapes_text(const std::map<std::string, Shape>& shapes) {
  std::string text;
  for (const auto& [name, shape] : shapes)
    text += (text.empty() ? "" : ", ") + name + "=" + shape.to_string();
  return text;
}

void info(const InfoArgs& args) {
  const std::map<std::string, Shape> given = parse_shapes(args.shapes);
  const Predictor predictor = load_model(args.model, given);
  const graph::Graph& g = predictor.graph();

  std::map<std::string, int> op_counts;
  for (const graph::Node* node : g.nodes()) ++op_counts[node->op];
  int64_t param_count = 0, param_bytes = 0;
  for (const graph::Value* v : g.initializers()) {
    param_count += v->constant.numel();
    param_bytes += static_cast<int64_t>(v->constant.nbytes());
  }

  // FLOPs and output shapes need every input's shape.
  const std::map<std::string, Shape> shapes = concrete_shapes(predictor, given, 1);
  std::optional<runtime::FlopCount> flops;
  std::optional<runtime::MemoryPlanStats> memory;
  std::vector<TensorSpec> outputs = predictor.outputs();
  std::vector<TensorSpec> inputs = predictor.inputs();
  for (TensorSpec& spec : inputs)  // the shapes asked about, where given
    if (const auto it = given.find(spec.name); it != given.end()) spec.shape = it->second;
  const bool all_shapes = shapes.size() == predictor.inputs().size();
  nlohmann::json nodes;
  if (args.nodes && !all_shapes) nodes = node_rows(g);  // with every shape, the bound graph's rows below
  if (all_shapes) {
    const graph::Graph bound = runtime::bind_input_shapes(g, shapes);
    if (args.nodes) nodes = node_rows(bound);
    flops = runtime::count_flops(bound);
    // Sequences, optional values, text and control flow run node by node, outside any plan.
    const auto& all = bound.nodes();
    if (std::all_of(all.begin(), all.end(), [](const graph::Node* n) { return runtime::fits_in_plan(*n); }))
      memory = runtime::compile(bound)->memory;
    for (size_t i = 0; i < outputs.size() && !args.shapes.empty(); ++i)  // shapes for the inputs asked about
      if (const auto& out_info = bound.outputs()[i]->info)
        outputs[i] = {outputs[i].name, out_info->dtype, out_info->shape};
  }

  if (args.json) {
    nlohmann::json j;
    j["model"] = args.model.model;
    j["name"] = predictor.name();
    j["opt_level"] = args.model.opt_level;
    for (size_t i = 0; i < inputs.size(); ++i) {
      j["inputs"].push_back(spec_json(inputs[i]));
      if (given.count(inputs[i].name))
        j["inputs"].back()["declared_shape"] = spec_json(predictor.inputs()[i])["shape"];
    }
    if (args.nodes) j["nodes"] = nodes;
    for (const TensorSpec& s : outputs) j["outputs"].push_back(spec_json(s));
    j["num_nodes"] = g.num_nodes();
    j["ops"] = op_counts;
    j["parameters"] = {{"count", param_count}, {"bytes", param_bytes}};
    nlohmann::json shape_json = nlohmann::json::object();
    for (const auto& [name, shape] : shapes) shape_json[name] = shape.dims();
    j["flops_input_shapes"] = shape_json;
    j["flops"] = flops ? nlohmann::json(flops->total) : nlohmann::json(nullptr);
    if (flops) {
      j["flops_by_op"] = flops->by_op;
      j["flops_not_counted"] = flops->not_counted;
    }
    if (memory)
      j["activation_memory"] = {{"planned_bytes", memory->planned_bytes},
                                {"naive_bytes", memory->naive_bytes}};
    std::cout << j.dump(2) << "\n";
    return;
  }
  std::cout << "model: " << predictor.name() << " (" << args.model.model << "), opt level "
            << args.model.opt_level << "\n";
  std::cout << "inputs:\n";
  for (size_t i = 0; i < inputs.size(); ++i) {
    const bool shape_given = given.count(inputs[i].name) > 0;
    std::cout << "  " << inputs[i].name << "  "
              << (shape_given ? std::string(inputs[i].known ? dtype_name(inputs[i].dtype) : "?") + " " +
                                    inputs[i].shape.to_string() + "  (given; declared " +
                                    describe(predictor.inputs()[i]) + ")"
                              : describe(inputs[i]));
    std::cout << "\n";
  }
  std::cout << "outputs:\n";
  for (const TensorSpec& s : outputs) std::cout << "  " << s.name << "  " << describe(s) << "\n";
  std::cout << "ops (" << g.num_nodes() << " nodes):\n";
  for (const auto& [op, count] : op_counts)
    std::cout << "  " << std::left << std::setw(24) << op << count << "\n";
  if (args.nodes) print_node_rows(nodes);
  std::cout << "parameters: " << param_count << " (" << param_bytes << " bytes, " << std::fixed
            << std::setprecision(2) << static_cast<double>(param_bytes) / (1 << 20) << " MiB)\n";
  if (flops) {
    std::cout << "FLOPs for " << shapes_text(shapes) << ": " << flops->total << " ("
              << static_cast<double>(flops->total) / 1e9 << " GFLOPs)\n";
    for (const auto& [op, n] : flops->by_op)
      std::cout << "  " << std::left << std::setw(24) << op << n << "\n";
    if (!flops->not_counted.empty())
      std::cout << "  not counted: " << runtime::not_counted_text(*flops) << "\n";
    // Intermediates only: the static memory plan against one buffer per value.
    if (memory) {
      std::cout << "activation memory: " << memory->planned_bytes << " bytes planned, " << memory->naive_bytes
                << " naive (" << std::setprecision(1)
                << 100.0 * static_cast<double>(memory->planned_bytes) /
                       static_cast<double>(std::max<size_t>(memory->naive_bytes, 1))
                << "%)\n";
    } else {
      std::cout << "activation memory: not planned (sequences, optional values, text or control flow run "
                   "node by node)\n";
    }
  } else {
    std::cout << "FLOPs: unknown; give every input's shape with --shape NAME=D0,D1,...\n";
  }
}

}  // namespace

void add_info_command(CLI::App& app) {
  auto args = std::make_shared<InfoArgs>();
  CLI::App* cmd = app.add_subcommand("info", "inputs, outputs, op counts, parameters and FLOPs of a model");
  add_model_args(cmd, args->model, "none");
  cmd->add_flag("--json", args->json, "print JSON");
  cmd->add_flag("--nodes", args->nodes,
                "list every node: name, op, input and output shapes (the names --exclude and --layer take)");
  cmd->add_option("--shape", args->shapes, "input shape for FLOPs, NAME=D0,D1,... (repeatable)");
  cmd->callback([args] { info(*args); });
}

}  // namespace kiln::cli
