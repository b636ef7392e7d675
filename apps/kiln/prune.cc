// kiln prune MODEL --ratio R [--structured] [--norm l1|l2] -o OUT.onnx: magnitude pruning
// (include/kiln/prune.hpp). Without --structured, the weights of smallest |w| of each Conv, Gemm
// and MatMul are zeroed (a share R of each); with it, a share R of the output channels of each
// prunable Conv is removed, with what reads them. Prints the report: parameters, FLOPs and
// sparsity per layer and in total, before and after.
#include <iostream>
#include <memory>

#include "cli.h"
#include "kiln/prune.hpp"

namespace kiln::cli {

void add_prune_command(CLI::App& app) {
  struct PruneArgs {
    std::string model, out, norm = "l1";
    double ratio = 0.3;
    bool structured = false;
  };
  auto args = std::make_shared<PruneArgs>();
  CLI::App* cmd = app.add_subcommand("prune", "magnitude pruning (weights, or whole Conv channels), to ONNX");
  cmd->add_option("model", args->model, "NAME-symbol.json, a prefix NAME, or a .onnx file")->required();
  cmd->add_option("--ratio", args->ratio, "share of weights (or channels) removed, in [0, 1)")
      ->capture_default_str();
  cmd->add_flag("--structured", args->structured, "remove Conv output channels of smallest filter norm");
  cmd->add_option("--norm", args->norm, "filter norm ranking channels (--structured)")
      ->capture_default_str()
      ->check(CLI::IsMember({"l1", "l2"}));
  cmd->add_option("-o,--output", args->out, "the pruned model, OUT.onnx")->required();
  cmd->callback([args] {
    const pruning::PruneReport report =
        pruning::prune_model_file(args->model, args->out, args->ratio, args->structured, args->norm);
    std::cout << report.to_string() << "wrote " << args->out << " (ONNX)\n";
  });
}

}  // namespace kiln::cli
