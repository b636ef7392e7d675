// kiln prune MODEL --ratio R [--structured [--channel-multiple N]] [--norm l1|l2] [--layer NAME]...
// [--exclude NAME]... -o OUT.onnx: magnitude pruning
// (include/kiln/prune.hpp). Without --structured, the weights of smallest |w| of each Conv, Gemm
// and MatMul are zeroed (a share R of each); with it, a share R of the output channels of each
// prunable Conv is removed, with what reads them, each keeping a multiple of N channels. Prints the report:
// parameters, FLOPs and sparsity per layer and in total, before and after.
#include <iostream>
#include <memory>

#include "cli.h"
#include "kiln/prune.hpp"

namespace kiln::cli {

void add_prune_command(CLI::App& app) {
  struct PruneArgs {
    std::string model, out;
    bool structured = false;
    pruning::ChannelPruneOptions options;
  };
  auto args = std::make_shared<PruneArgs>();
  args->options.channel_multiple = kDefaultChannelMultiple;
  CLI::App* cmd = app.add_subcommand("prune", "magnitude pruning (weights, or whole Conv channels), to ONNX");
  cmd->add_option("model", args->model, "NAME-symbol.json, a prefix NAME, or a .onnx file")->required();
  cmd->add_option("--ratio", args->options.ratio, "share of weights (or channels) removed, in [0, 1)")
      ->capture_default_str();
  // The channel options mean nothing to unstructured pruning, which zeroes single weights.
  CLI::Option* structured =
      cmd->add_flag("--structured", args->structured, "remove Conv output channels of smallest filter norm");
  cmd->add_option("--norm", args->options.norm, "filter norm ranking channels (--structured)")
      ->capture_default_str()
      ->check(CLI::IsMember({"l1", "l2"}))
      ->needs(structured);
  cmd->add_option("--channel-multiple", args->options.channel_multiple,
                  "pruned Convs keep a multiple of N channels (--structured; 1: exactly R removed)")
      ->capture_default_str()
      ->check(whole_number(1))
      ->needs(structured);
  cmd->add_option("--layer", args->options.layers, "prune only this layer (repeatable)");
  cmd->add_option("--exclude", args->options.excluded_layers,
                  "leave this Conv whole (--structured; repeatable)")
      ->needs(structured);
  cmd->add_option("-o,--output", args->out, "the pruned model, OUT.onnx")->required();
  cmd->callback([args] {
    prepare_output(args->out, "-o", args->model);
    const pruning::PruneReport report =
        pruning::prune_model_file(args->model, args->out, args->structured, args->options);
    std::cout << report.to_string();
    if (report.params_after == report.params_before && report.sparsity_after == report.sparsity_before)
      std::cout << "nothing was pruned: "
                << (args->structured
                        ? "--structured removes Conv output channels, and no Conv here can lose any"
                        : "the ratio removes no weight of any layer")
                << "; the model is written unchanged\n";
    std::cout << "wrote " << args->out << " (ONNX)\n";
  });
}

}  // namespace kiln::cli
