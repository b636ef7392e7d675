// The stage table of `kiln optimize`; see stage_table.h.
#include "stage_table.h"

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <iomanip>
#include <sstream>

#include <nlohmann/json.hpp>

#include "cli.h"
#include "kiln/npy.hpp"
#include "kiln/threading.hpp"

namespace kiln::cli {
namespace {

bool batch_fits(const Predictor& predictor, int64_t batch) {
  for (const TensorSpec& spec : predictor.inputs())
    if (spec.known && spec.shape.ndim() > 0 && spec.shape[0] > 0 && spec.shape[0] != batch) return false;
  return true;
}

std::string fixed(double value, int digits) {
  std::ostringstream out;
  out << std::fixed << std::setprecision(digits) << value;
  return out.str();
}

std::string bytes_text(int64_t bytes) {
  if (bytes < 0) return "-";
  if (bytes >= (int64_t{1} << 20)) return fixed(static_cast<double>(bytes) / (1 << 20), 2) + " MiB";
  return fixed(static_cast<double>(bytes) / 1024, 1) + " KiB";
}

// The cells of a row: stage, ms per batch, speedup per batch, weights, accuracy.
std::vector<std::string> cells(const StageRow& row, const StageRow& original) {
  std::vector<std::string> out{row.stage};
  for (double ms : row.ms) out.push_back(ms >= 0 ? fixed(ms, 3) : "-");
  for (size_t i = 0; i < row.ms.size(); ++i) {
    const double base = i < original.ms.size() ? original.ms[i] : -1;
    out.push_back(row.ms[i] > 0 && base > 0 ? fixed(base / row.ms[i], 2) + "x" : "-");
  }
  out.push_back(row.vs_previous.empty() ? "-" : row.vs_previous);
  out.push_back(bytes_text(row.weight_bytes));
  out.push_back(row.accuracy);
  return out;
}

std::vector<std::string> header(const std::vector<int64_t>& batches) {
  std::vector<std::string> out{"stage"};
  for (int64_t b : batches) out.push_back("ms b" + std::to_string(b));
  for (int64_t b : batches) out.push_back("speedup b" + std::to_string(b));
  out.push_back("vs previous");
  out.push_back("weights");
  out.push_back("accuracy");
  return out;
}

std::vector<std::vector<std::string>> all_cells(const StageTable& table) {
  std::vector<std::vector<std::string>> out{header(table.batches)};
  for (const StageRow& row : table.rows) out.push_back(cells(row, table.rows.front()));
  if (!table.onnxruntime.stage.empty()) out.push_back(cells(table.onnxruntime, table.rows.front()));
  return out;
}

// Times `calls` calls of the predictor on `inputs`, appending each call's milliseconds to `ms`.
void timed_calls(const Predictor& predictor, const std::vector<Tensor>& inputs, int calls,
                 std::vector<double>& ms) {
  for (int i = 0; i < calls; ++i) {
    const auto start = std::chrono::steady_clock::now();
    predictor.predict(inputs);
    ms.push_back(std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count());
  }
}

double median(std::vector<double> values) {
  std::nth_element(values.begin(), values.begin() + static_cast<std::ptrdiff_t>(values.size() / 2),
                   values.end());
  return values[values.size() / 2];
}

std::string run_and_read(const std::string& command, int& status) {
  std::string out;
  FILE* pipe = popen(command.c_str(), "r");
  if (!pipe) {
    status = -1;
    return out;
  }
  char buffer[4096];
  for (size_t n; (n = fread(buffer, 1, sizeof buffer, pipe)) > 0;) out.append(buffer, n);
  status = pclose(pipe);
  return out;
}

std::string quoted(const std::string& text) {
  std::string out = "'";
  for (char c : text) out += c == '\'' ? std::string("'\\''") : std::string(1, c);
  return out + "'";
}

}  // namespace

int64_t weight_bytes(const graph::Graph& g) {
  int64_t bytes = 0;
  for (const graph::Value* v : g.initializers()) bytes += static_cast<int64_t>(v->constant.nbytes());
  return bytes;
}

bool LatencyComparison::short_of(double min_speedup) const {
  if (speedups.empty()) return false;
  return std::all_of(speedups.begin(), speedups.end(),
                     [&](double s) { return s < min_speedup / (1 + kNoise); });
}

std::string LatencyComparison::speedup_text() const {
  if (speedups.empty()) return "-";
  const auto [low, high] = std::minmax_element(speedups.begin(), speedups.end());
  const std::string low_text = fixed(*low, 2), high_text = fixed(*high, 2);
  return low_text + (high_text != low_text ? "-" + high_text : "") + "x";
}

std::vector<LatencyComparison> compare_latencies(const Predictor& before, const Predictor& after,
                                                 const std::vector<int64_t>& batches, int calls, int rounds) {
  std::vector<LatencyComparison> out;
  for (int64_t batch : batches) {
    LatencyComparison& c = out.emplace_back();
    if (!batch_fits(before, batch) || !batch_fits(after, batch)) continue;
    const std::vector<Tensor> before_inputs = make_inputs(before, {}, {}, batch);
    const std::vector<Tensor> after_inputs = make_inputs(after, {}, {}, batch);
    for (int i = 0; i < 3; ++i) {
      before.predict(before_inputs);
      after.predict(after_inputs);
    }
    std::vector<double> all_before, all_after;
    for (int r = 0; r < rounds; ++r) {
      std::vector<double> round_before, round_after;
      timed_calls(before, before_inputs, calls, round_before);
      timed_calls(after, after_inputs, calls, round_after);
      c.speedups.push_back(median(round_before) / median(round_after));
      all_before.insert(all_before.end(), round_before.begin(), round_before.end());
      all_after.insert(all_after.end(), round_after.begin(), round_after.end());
    }
    c.before_ms = median(all_before);
    c.after_ms = median(all_after);
  }
  return out;
}

StageRow onnxruntime_row(const Predictor& original, const std::vector<int64_t>& batches,
                         const std::string& onnx_path, const std::string& python, const std::string& runner,
                         const std::string& work_dir, int iterations, std::string& note) {
  namespace fs = std::filesystem;
  if (!fs::exists(python) || !fs::exists(runner)) {
    note = "ONNX Runtime row skipped: no " + (fs::exists(python) ? runner : python);
    return {};
  }
  int status = 0;
  run_and_read(quoted(python) + " -c 'import onnxruntime' 2>/dev/null", status);
  if (status != 0) {
    note = "ONNX Runtime row skipped: " + python + " cannot import onnxruntime";
    return {};
  }
  StageRow row{.stage = "ONNX Runtime (original)", .weight_bytes = -1, .accuracy = "reference"};
  for (int64_t batch : batches) {
    if (!batch_fits(original, batch)) {
      row.ms.push_back(-1);
      continue;
    }
    const std::vector<Tensor> inputs = make_inputs(original, {}, {}, batch);
    std::string command = "printf 'time " + std::to_string(iterations) + "\\n' | " + quoted(python) + " " +
                          quoted(runner) + " ort " + quoted(onnx_path) + " --warmup-calls 3 --threads " +
                          std::to_string(num_threads());
    for (size_t i = 0; i < inputs.size(); ++i) {
      const std::string file = (fs::path(work_dir) / ("ort_input" + std::to_string(i) + ".npy")).string();
      npy::save(file, inputs[i]);
      command += " --input " + quoted(original.inputs()[i].name + "=" + file);
    }
    const std::string out = run_and_read(command + " 2>&1", status);
    std::vector<double> ms;
    std::istringstream lines(out);
    for (std::string line; std::getline(lines, line);) {
      const auto reply = nlohmann::json::parse(line, nullptr, /*allow_exceptions=*/false);
      if (reply.is_object() && reply.contains("ms")) ms = reply["ms"].get<std::vector<double>>();
    }
    if (status != 0 || ms.empty()) {
      note = "ONNX Runtime row skipped: the runner failed (" + out.substr(0, 400) + ")";
      return {};
    }
    row.ms.push_back(median(ms));
  }
  return row;
}

std::string StageTable::to_text() const {
  const std::vector<std::vector<std::string>> rows_cells = all_cells(*this);
  std::vector<size_t> width(rows_cells[0].size(), 0);
  for (const auto& r : rows_cells)
    for (size_t i = 0; i < r.size(); ++i) width[i] = std::max(width[i], r[i].size());
  std::ostringstream out;
  for (size_t k = 0; k < rows_cells.size(); ++k) {
    for (size_t i = 0; i < rows_cells[k].size(); ++i) {
      const std::string& c = rows_cells[k][i];
      // The stage and accuracy columns are text (left-aligned), the others numbers.
      const bool left = i == 0 || i + 1 == rows_cells[k].size();
      out << (i ? "  " : "")
          << (left ? c + std::string(width[i] - c.size(), ' ') : std::string(width[i] - c.size(), ' ') + c);
    }
    out << "\n";
    if (k == 0) {
      size_t total = 0;
      for (size_t w : width) total += w + 2;
      out << std::string(total - 2, '-') << "\n";
    }
  }
  if (!onnxruntime_note.empty()) out << onnxruntime_note << "\n";
  for (const std::string& warning : warnings) out << warning << "\n";
  return out.str();
}

std::string StageTable::to_markdown() const {
  const std::vector<std::vector<std::string>> rows_cells = all_cells(*this);
  std::ostringstream out;
  for (size_t k = 0; k < rows_cells.size(); ++k) {
    out << "|";
    for (const std::string& c : rows_cells[k]) out << " " << c << " |";
    out << "\n";
    if (k == 0) {
      out << "|";
      for (size_t i = 0; i < rows_cells[k].size(); ++i)
        out << (i == 0 || i + 1 == rows_cells[k].size() ? "---|" : "---:|");
      out << "\n";
    }
  }
  if (!onnxruntime_note.empty()) out << "\n" << onnxruntime_note << "\n";
  if (!warnings.empty()) out << "\n";
  for (const std::string& warning : warnings) out << "- " << warning << "\n";
  return out.str();
}

}  // namespace kiln::cli
