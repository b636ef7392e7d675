// kiln convert IN OUT [--epoch N] [--opset N] [--simplify] [--shape NAME=D0,D1,...]: reads a model
// (.onnx, or MXNet NAME-symbol.json / a prefix NAME) and writes it as ONNX (OUT ends in .onnx) or
// as an MXNet checkpoint (OUT-symbol.json + OUT-EPOCH.params). --shape fixes input shapes in the
// written model; --simplify runs Kiln's graph passes at level `all` first, which folds shape
// arithmetic wherever the shapes it reads are known.
#include <algorithm>
#include <cstdlib>
#include <iostream>
#include <map>
#include <memory>

#include "cli.h"
#include "frontends/model_files.h"
#include "frontends/mxnet/export.h"
#include "frontends/mxnet/import.h"
#include "frontends/onnx/export.h"
#include "frontends/onnx/import.h"
#include "graph/pass_manager.h"
#include "kiln/error.hpp"
#include "runtime/plan.h"

namespace kiln::cli {

namespace {

struct ConvertArgs {
  std::string in, out;
  int epoch = -1;
  int opset = onnx::ExportOptions{}.opset;
  bool simplify = false;
  std::vector<std::string> shapes;
  CLI::Option* opset_option = nullptr;
};

bool ends_with(const std::string& s, const std::string& suffix) {
  return s.size() >= suffix.size() && s.compare(s.size() - suffix.size(), suffix.size(), suffix) == 0;
}

// The model and, for an MXNet checkpoint, its epoch (which an MXNet OUT keeps).
struct LoadedModel {
  graph::Graph graph;
  std::string format;
  int epoch = 0;
};

// Gives the inputs named in `shapes` those shapes, which must fit the declared ones, and infers
// what they make known.
void fix_input_shapes(graph::Graph& g, const std::map<std::string, Shape>& shapes, const std::string& where) {
  runtime::narrow_input_shapes(g, shapes, where, "--shape");
  g.infer_shapes(/*allow_unknown=*/true);
}

LoadedModel load(const ConvertArgs& args, const std::map<std::string, Shape>& shapes) {
  const frontends::ModelFiles files = frontends::resolve_model_files(args.in, args.epoch);
  LoadedModel model;
  if (files.format == frontends::ModelFiles::Format::kOnnx) {
    model.graph = onnx::import_model(files.symbol_path);
    model.format = "ONNX";
  } else {
    // The MXNet importer needs the shapes while it converts (Reshape's special values).
    const frontends::MxnetCheckpoint checkpoint = frontends::read_mxnet_checkpoint(files);
    model.graph = mxnet::import_symbol(checkpoint.symbol, checkpoint.params, files.name, shapes);
    model.format = "MXNet, epoch " + std::to_string(files.epoch);
    model.epoch = files.epoch;
  }
  fix_input_shapes(model.graph, shapes, "model '" + args.in + "'");
  return model;
}

void simplify(graph::Graph& g) {
  graph::PassManager passes = graph::PassManager::for_level(graph::OptLevel::kAll);
  const size_t before = g.num_nodes();
  passes.run(g);
  // Nodes each pass removed, over all sweeps, in the order the passes first ran.
  std::vector<std::pair<std::string, long>> removed;
  for (const graph::PassStats& st : passes.stats()) {
    auto it = std::find_if(removed.begin(), removed.end(), [&](const auto& r) { return r.first == st.pass; });
    if (it == removed.end()) it = removed.insert(removed.end(), {st.pass, 0});
    it->second += static_cast<long>(st.nodes_before) - static_cast<long>(st.nodes_after);
  }
  std::cout << "simplify: " << before << " -> " << g.num_nodes() << " nodes in " << passes.sweeps_run()
            << (passes.sweeps_run() == 1 ? " sweep" : " sweeps") << " (";
  bool any = false;
  for (const auto& [pass, count] : removed) {
    if (count == 0) continue;
    std::cout << (any ? ", " : "") << pass << (count > 0 ? " removed " : " added ") << std::abs(count);
    any = true;
  }
  std::cout << (any ? ")\n" : "nothing to remove)\n");
}

void convert(const ConvertArgs& args) {
  const bool onnx_out = ends_with(args.out, ".onnx");
  prepare_output(onnx_out || ends_with(args.out, "-symbol.json") ? args.out : args.out + "-symbol.json",
                 "OUT", args.in);
  if (!onnx_out && args.opset_option->count() > 0)
    throw UsageError("--opset applies to ONNX output (OUT ending in .onnx), not to '" + args.out + "'");
  LoadedModel model = load(args, parse_shapes(args.shapes));
  std::cout << "read " << args.in << " (" << model.format << "): " << model.graph.num_nodes() << " nodes, "
            << model.graph.initializers().size() << " initializers\n";
  if (args.simplify) simplify(model.graph);
  if (onnx_out) {
    onnx::export_model(model.graph, args.out, {.opset = args.opset});
    std::cout << "wrote " << args.out << " (ONNX opset " << args.opset << "): ";
  } else {
    const std::string prefix =
        ends_with(args.out, "-symbol.json") ? args.out.substr(0, args.out.size() - 12) : args.out;
    mxnet::save_checkpoint(model.graph, prefix, model.epoch);
    std::cout << "wrote " << prefix << "-symbol.json and its parameters (MXNet, epoch " << model.epoch
              << "): ";
  }
  std::cout << model.graph.num_nodes() << " nodes\n";
}

}  // namespace

void add_convert_command(CLI::App& app) {
  auto args = std::make_shared<ConvertArgs>();
  CLI::App* cmd = app.add_subcommand("convert", "convert between ONNX and MXNet, optionally simplifying");
  cmd->add_option("in", args->in, "NAME-symbol.json, a prefix NAME (with --epoch), or a .onnx file")
      ->required();
  cmd->add_option("out", args->out, "OUT.onnx, or an MXNet NAME-symbol.json / prefix NAME")->required();
  cmd->add_option("--epoch", args->epoch, "parameter file epoch of IN (default: the highest found)");
  args->opset_option = cmd->add_option("--opset", args->opset, "ONNX opset to write")
                           ->capture_default_str()
                           ->check(whole_number(onnx::kOldestExportOpset, onnx::kNewestOpset));
  cmd->add_flag("--simplify", args->simplify,
                "fold constants and shape arithmetic, remove dead and identity nodes, merge common "
                "subexpressions, fold BatchNormalization into Conv");
  cmd->add_option("--shape", args->shapes, "fix an input's shape, NAME=D0,D1,... (repeatable)");
  cmd->callback([args] { convert(*args); });
}

}  // namespace kiln::cli
