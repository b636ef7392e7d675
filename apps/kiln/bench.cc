// kiln bench MODEL [--batch N] [--threads T] [--warmup W] [--iters I] [--json] [--shape ...]
// [--input NAME=FILE.npy ...] [--peak-gflops X]: latency (mean, p50, p90, p99 in ms), CPU time per
// call, throughput and GFLOPS of predict() on fixed inputs (random with a fixed seed unless given), and the
// GFLOPS as a share of the machine's practical peak (given, or measured with oneDNN's matmul in the model's
// arithmetic: float32, bfloat16 or int8).
#include <time.h>

#include <algorithm>
#include <chrono>
#include <iomanip>
#include <iostream>
#include <memory>
#include <numeric>
#include <optional>

#include <nlohmann/json.hpp>

#include "cli.h"
#include "kiln/threading.hpp"
#include "runtime/flops.h"
#include "runtime/plan.h"
#ifdef KILN_WITH_ONEDNN
#include "backends/onednn/peak.h"
#endif

namespace kiln::cli {

namespace {

struct BenchArgs {
  ModelArgs model;
  int64_t batch = 1;
  int warmup = 10;
  int iters = 100;
  bool json = false;
  double peak_gflops = 0;  // 0: measure it
  std::vector<std::string> shapes, inputs;
  CLI::Option* batch_option = nullptr;
};

// CPU seconds this process has used, all threads together.
double process_cpu_seconds() {
  timespec t{};
  clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &t);
  return static_cast<double>(t.tv_sec) + static_cast<double>(t.tv_nsec) * 1e-9;
}

double percentile(const std::vector<double>& sorted, double p) {
  const size_t i = static_cast<size_t>(p / 100.0 * static_cast<double>(sorted.size() - 1) + 0.5);
  return sorted[std::min(i, sorted.size() - 1)];
}

// The arithmetic a model's convolutions and matmuls run in: bfloat16 for a bf16 plan, int8 for a
// quantized model (QDQ pairs or QLinear/Integer ops, which Kiln runs on its int8 kernels), else
// float32.
DType compute_dtype(const graph::Graph& graph, const std::string& precision) {
  if (precision == "bf16") return DType::kBFloat16;
  for (const graph::Node* node : graph.nodes())
    if (node->op == "DequantizeLinear" || node->op.find("QLinear") != std::string::npos ||
        node->op.find("Integer") != std::string::npos)
      return DType::kInt8;
  return DType::kFloat32;
}

// The machine's practical peak in GFLOPS: `given` when positive, else a matmul in the model's
// arithmetic on Kiln's threads timed for half a second (after the model's timing, so the two do
// not share the cores), or nothing without the oneDNN backend or where this CPU has no such
// arithmetic (bfloat16 without AVX-512), which is said on stderr.
std::optional<double> machine_peak_gflops(double given, DType dtype) {
  if (given > 0) return given;
#ifdef KILN_WITH_ONEDNN
  try {
    return onednn::measure_matmul_peak_gflops(num_threads(), dtype, 0.5);
  } catch (const Error& e) {
    if (e.code() != ErrorCode::kUnsupported) throw;
    std::cerr << "kiln bench: no share of peak: " << e.what() << "\n";
    return std::nullopt;
  }
#else
  (void)dtype;
  return std::nullopt;
#endif
}

void bench(const BenchArgs& args) {
  const std::map<std::string, Shape> given_shapes = parse_shapes(args.shapes);
  const std::map<std::string, std::string> files = parse_files(args.inputs);
  const Predictor predictor = load_model(args.model, given_shapes);
  check_memory(predictor, concrete_shapes(predictor, given_shapes, args.batch),
               args.batch_option->count() > 0 ? "--batch " + std::to_string(args.batch) : "the input shapes");
  const std::vector<Tensor> inputs = make_inputs(predictor, given_shapes, files, args.batch);
  const int64_t samples =
      batch_of(predictor, given_shapes, files, inputs, args.batch, args.batch_option->count() > 0);
  std::map<std::string, Shape> shapes;
  for (size_t i = 0; i < inputs.size(); ++i) shapes.emplace(predictor.inputs()[i].name, inputs[i].shape());
  // Read before the first call: the weights its plan packs are then held once, packed (see
  // Predictor::graph), as in a deployment.
  int64_t flops = 0;
  std::string not_counted;  // ops whose FLOPs no rule counts
  DType dtype = DType::kFloat32;
  predictor.read_graph([&](const graph::Graph& graph) {
    const runtime::FlopCount count = runtime::count_flops(runtime::bind_input_shapes(graph, shapes));
    flops = count.total;
    not_counted = runtime::not_counted_text(count);
    dtype = compute_dtype(graph, args.model.precision);
  });

  for (int i = 0; i < args.warmup; ++i) predictor.predict(inputs);  // compiles the plan, warms caches
  std::vector<double> ms;
  ms.reserve(static_cast<size_t>(args.iters));
  // CPU time per call says how much work a call is when other processes share the cores and the
  // latency says mostly how much of them this one got.
  const double cpu_start = process_cpu_seconds();
  for (int i = 0; i < args.iters; ++i) {
    const auto start = std::chrono::steady_clock::now();
    predictor.predict(inputs);
    ms.push_back(std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count());
  }
  const double cpu_ms = (process_cpu_seconds() - cpu_start) * 1e3 / static_cast<double>(args.iters);
  const double mean = std::accumulate(ms.begin(), ms.end(), 0.0) / static_cast<double>(ms.size());
  std::sort(ms.begin(), ms.end());
  const double throughput = static_cast<double>(samples) * 1000.0 / mean;
  const double gflops = static_cast<double>(flops) / (mean * 1e-3) / 1e9;
  const std::optional<double> peak = machine_peak_gflops(args.peak_gflops, dtype);

  if (args.json) {
    nlohmann::json j = {{"model", args.model.model},
                        {"batch", samples},
                        {"threads", num_threads()},
                        {"warmup", args.warmup},
                        {"iters", args.iters},
                        {"mean_ms", mean},
                        {"p50_ms", percentile(ms, 50)},
                        {"p90_ms", percentile(ms, 90)},
                        {"p99_ms", percentile(ms, 99)},
                        {"min_ms", ms.front()},
                        {"max_ms", ms.back()},
                        {"cpu_ms", cpu_ms},
                        {"throughput", throughput},
                        {"flops", flops},
                        {"flops_not_counted", not_counted},
                        {"gflops", gflops},
                        {"peak_dtype", dtype_name(dtype)},
                        {"peak_gflops", peak ? nlohmann::json(*peak) : nlohmann::json()},
                        {"peak_share", peak ? nlohmann::json(gflops / *peak) : nlohmann::json()}};
    std::cout << j.dump(2) << "\n";
    return;
  }
  // Below a millisecond the latencies print in microseconds, where three decimals of ms would
  // show 0.000 or a single digit.
  const bool micro = percentile(ms, 50) < 1.0;
  const double scale = micro ? 1e3 : 1.0;
  const char* unit = micro ? "us" : "ms";
  std::cout << std::fixed << std::setprecision(3) << "model " << predictor.name() << ", batch " << samples
            << ", " << num_threads() << " thread(s), " << args.iters << " iterations after " << args.warmup
            << " warmup\n"
            << "latency " << unit << ": mean " << mean * scale << "  p50 " << percentile(ms, 50) * scale
            << "  p90 " << percentile(ms, 90) * scale << "  p99 " << percentile(ms, 99) * scale << "  min "
            << ms.front() * scale << "  max " << ms.back() * scale << "\n"
            << "CPU " << unit << " per call: " << cpu_ms * scale << " (all threads)\n"
            << std::setprecision(1) << "throughput: " << throughput << " samples/s\n"
            << std::setprecision(3) << "compute: " << gflops << " GFLOPS (" << flops << " FLOPs per call"
            << (not_counted.empty() ? "" : "; not counted: " + not_counted) << ")\n";
  if (peak) {
    std::cout << std::setprecision(1) << "share of peak: " << 100.0 * gflops / *peak << "% of " << *peak
              << " GFLOPS ("
              << (args.peak_gflops > 0 ? std::string("given")
                                       : std::string(dtype_name(dtype)) + " matmul, measured")
              << ")\n";
  }
}

}  // namespace

void add_bench_command(CLI::App& app) {
  auto args = std::make_shared<BenchArgs>();
  CLI::App* cmd = app.add_subcommand("bench", "latency and throughput of a model");
  add_model_args(cmd, args->model, "all");
  args->batch_option =
      cmd->add_option("--batch", args->batch, "batch size for inputs with a free first dimension")
          ->capture_default_str()
          ->check(whole_number(1));
  cmd->add_option("--warmup", args->warmup, "untimed calls first")
      ->capture_default_str()
      ->check(whole_number(0, std::numeric_limits<int>::max()));
  cmd->add_option("--iters", args->iters, "timed calls")
      ->capture_default_str()
      ->check(whole_number(1, std::numeric_limits<int>::max()));
  cmd->add_flag("--json", args->json, "print JSON");
  cmd->add_option("--peak-gflops", args->peak_gflops,
                  "the machine's peak GFLOPS for the share of peak (default: measured, oneDNN builds)")
      ->check(real_number(0, std::numeric_limits<double>::max(), true));
  cmd->add_option("--shape", args->shapes, "an input's shape, NAME=D0,D1,... (repeatable)");
  cmd->add_option("--input", args->inputs, "an input from a file, NAME=FILE.npy (repeatable)");
  cmd->callback([args] { bench(*args); });
}

}  // namespace kiln::cli
