// What the `kiln` subcommands share: the model arguments and loading, input tensors from
// --shape / --input / random values, and the subcommand registrations (one file each).
#pragma once

#include <limits>
#include <map>
#include <stdexcept>
#include <string>
#include <vector>

#include <CLI/CLI.hpp>

#include "kiln/predictor.hpp"
#include "kiln/tensor.hpp"

namespace kiln::cli {

// A mistake in how the program was called (exit status 2), as opposed to a failure (status 1).
class UsageError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

// Runs the program again with a short OpenMP spin (GOMP_SPINCOUNT) unless the caller chose one
// (openmp_spin.cc says why); returns when it does not.
void spin_openmp_briefly(char** argv);

// `--channel-multiple` of `kiln prune --structured` and `kiln optimize`'s prune step: pruned Convs
// keep a multiple of this many channels, so oneDNN's blocked layouts hold no padding (docs/BENCHMARKS.md,
// pruning, has the measurement that chose it).
inline constexpr int64_t kDefaultChannelMultiple = 16;

// The most threads --threads takes (and KILN_NUM_THREADS, kiln/environment.hpp).
inline constexpr int64_t kMaxThreads = 4096;

// MODEL, --epoch and the load options every subcommand takes.
struct ModelArgs {
  std::string model;
  int epoch = -1;
  std::string opt_level;
  std::string kernels = "fast";
  std::string precision = "fp32";
  int threads = 0;
};

// Adds MODEL, --epoch, --opt-level (default `default_opt_level`), --kernels, --precision and --threads
// to `command`.
void add_model_args(CLI::App* command, ModelArgs& args, const std::string& default_opt_level);
// Loads MODEL as it declares its inputs. A model that cannot be imported without input shapes (an
// MXNet symbol saved without them whose Reshape codes need the input's rank: kUnsupported) is
// loaded again with `input_shapes` (from --shape or the input files; PredictorOptions::input_shapes).
Predictor load_model(const ModelArgs& args, const std::map<std::string, Shape>& input_shapes = {});

// "NAME=1,3,224,224" -> {NAME: (1, 3, 224, 224)}; a malformed one is a UsageError.
std::map<std::string, Shape> parse_shapes(const std::vector<std::string>& specs);
// "NAME=FILE.npy" -> {NAME: FILE.npy}.
std::map<std::string, std::string> parse_files(const std::vector<std::string>& specs);

// An input's file: a .npy file, or, for a sequence input, a folder of 0.npy, 1.npy, ... in order
// (an empty folder is an empty sequence of `spec`'s element type).
Tensor load_input_file(const std::string& path, const TensorSpec& spec);

// One tensor per model input: loaded from `files`, else random (fixed seed) of the shape in
// `shapes`, else of the declared shape with a free first dimension set to `batch`; an optional
// input without a file is left empty, a sequence input needs one.
std::vector<Tensor> make_inputs(const Predictor& predictor, const std::map<std::string, Shape>& shapes,
                                const std::map<std::string, std::string>& files, int64_t batch);

// Refuses (UsageError, led by `cause`) a run whose inputs of `shapes`, planned activations and
// outputs need more memory than the machine has available now, saying how much each takes; a
// run whose input shapes are not all known is not weighed.
void check_memory(const Predictor& predictor, const std::map<std::string, Shape>& shapes,
                  const std::string& cause);

// The samples per call: `batch` when some input takes it (a free first dimension not set by
// `shapes` or `files`), else the first dimension of the first input. A `batch_given` that no input
// takes is a UsageError (it would be reported and not used).
int64_t batch_of(const Predictor& predictor, const std::map<std::string, Shape>& shapes,
                 const std::map<std::string, std::string>& files, const std::vector<Tensor>& inputs,
                 int64_t batch, bool batch_given);

// The shapes to count FLOPs for: those given, else the declared ones with a free first
// dimension set to `batch`; inputs that stay partly unknown are left out.
std::map<std::string, Shape> concrete_shapes(const Predictor& predictor,
                                             const std::map<std::string, Shape>& given, int64_t batch);

// Option checks whose messages say what the option takes (option_checks.cc): a whole number in
// [min, max], and a finite number in [min, max] (above min when `open_min`).
CLI::Validator whole_number(int64_t min, int64_t max = std::numeric_limits<int64_t>::max());
CLI::Validator real_number(double min, double max = std::numeric_limits<double>::max(),
                           bool open_min = false);
// -1 (all) or a count >= 1.
CLI::Validator count_or_all();
// Readies the output file `path` of `option` before any work: creates its missing folders, and
// refuses (UsageError) a folder, an unwritable place, or the input `model` itself.
void prepare_output(const std::string& path, const std::string& option, const std::string& model = "");

void add_info_command(CLI::App& app);
void add_run_command(CLI::App& app);
void add_bench_command(CLI::App& app);
void add_profile_command(CLI::App& app);
void add_convert_command(CLI::App& app);
void add_quantize_command(CLI::App& app);
void add_prune_command(CLI::App& app);
void add_optimize_command(CLI::App& app);

}  // namespace kiln::cli
