// kiln: inspect, run, benchmark, profile, convert, quantize, prune and optimize models from the
// command line.
//   kiln info MODEL | run MODEL --input NAME=FILE.npy | bench MODEL | profile MODEL | convert IN OUT
//   | quantize MODEL --calib DIR -o OUT.onnx | prune MODEL --ratio R [--structured] -o OUT.onnx
//   | optimize MODEL --steps fuse,bf16,int8 --calib DIR [--val DIR --labels FILE] -o OUT.onnx
// Failures print "kiln: error: <message>" and exit 1; usage errors exit 2.
#include <iostream>

#include "cli.h"
#include "kiln/environment.hpp"
#include "kiln/error.hpp"
#include "kiln/version.hpp"

int main(int argc, char** argv) {
  kiln::cli::spin_openmp_briefly(argv);
  CLI::App app{
      "kiln: inspect, run, benchmark, profile, convert, quantize, prune and optimize models (MXNet "
      "-symbol.json + .params, .onnx)",
      "kiln"};
  app.set_version_flag("--version", kiln::version_text());
  app.require_subcommand(1);
  kiln::cli::add_info_command(app);
  kiln::cli::add_run_command(app);
  kiln::cli::add_bench_command(app);
  kiln::cli::add_profile_command(app);
  kiln::cli::add_convert_command(app);
  kiln::cli::add_quantize_command(app);
  kiln::cli::add_prune_command(app);
  kiln::cli::add_optimize_command(app);
  try {
    kiln::check_environment();
  } catch (const kiln::Error& e) {
    std::cerr << "kiln: usage error: " << e.what() << "\n";
    return 2;
  }
  try {
    app.parse(argc, argv);  // the chosen subcommand runs inside parse()
  } catch (const CLI::ParseError& e) {
    return app.exit(e) == 0 ? 0 : 2;  // --help exits 0
  } catch (const kiln::cli::UsageError& e) {
    std::cerr << "kiln: usage error: " << e.what() << "\n";
    return 2;
  } catch (const std::exception& e) {
    std::cerr << "kiln: error: " << e.what() << "\n";
    return 1;
  }
  return 0;
}
