// Comparing an optimized model with its original over a validation set, and the degradation
// gate (include/kiln/accuracy.hpp).
#include <algorithm>
#include <cmath>
#include <iomanip>
#include <memory>
#include <sstream>

#include "kiln/accuracy.hpp"
#include "kiln/error.hpp"
#include "kiln/predictor.hpp"

namespace kiln::accuracy {
namespace {

using Batch = std::map<std::string, Tensor>;

// The batch with "" (the only input) named, cut into slices of the model's fixed batch size when
// it has one and the batch holds a multiple of it.
std::vector<Batch> model_batches(const Predictor& model, Batch batch) {
  if (batch.size() == 1 && batch.begin()->first.empty()) {
    KILN_CHECK(model.inputs().size() == 1, ErrorCode::kInvalidArgument, "validation data: model '",
               model.name(), "' has ", model.inputs().size(),
               " inputs; give a folder per batch with a file INPUT_NAME.npy each");
    batch = {{model.inputs()[0].name, batch.begin()->second}};
  }
  int64_t fixed = -1, rows = -1;
  for (const TensorSpec& spec : model.inputs()) {
    const auto it = batch.find(spec.name);
    if (it == batch.end() || spec.shape.ndim() == 0 || it->second.ndim() == 0) continue;
    if (spec.shape[0] > 0 && it->second.shape()[0] != spec.shape[0]) {
      fixed = spec.shape[0];
      rows = it->second.shape()[0];
    }
  }
  if (fixed <= 0 || rows % fixed != 0) return {batch};
  std::vector<Batch> slices;
  for (int64_t begin = 0; begin < rows; begin += fixed) {
    Batch slice;
    for (const auto& [name, t] : batch) slice[name] = t.slice(0, begin, begin + fixed).contiguous();
    slices.push_back(std::move(slice));
  }
  return slices;
}

}  // namespace

quantization::CalibrationBatches model_sized(const Predictor& model,
                                             quantization::CalibrationBatches batches) {
  struct State {
    std::vector<Batch> pending;
    size_t next = 0;
  };
  auto state = std::make_shared<State>();
  return [&model, batches, state](Batch& batch) {
    if (state->next == state->pending.size()) {
      Batch whole;
      if (!batches(whole)) return false;
      state->pending = model_batches(model, std::move(whole));
      state->next = 0;
    }
    batch = state->pending[state->next++];
    return true;
  };
}

namespace {

std::string task_of(const Tensor& first_output) {
  if (first_output.ndim() == 2 && first_output.shape()[1] >= 2) return "classifier";
  if (first_output.ndim() == 3 && first_output.shape()[2] >= 6) return "detector";
  return "other";
}

std::string percent(double share) {
  std::ostringstream out;
  out << std::fixed << std::setprecision(2) << 100 * share << "%";
  return out.str();
}

}  // namespace

double AccuracyReport::degradation_points() const {
  if (reference_accuracy >= 0 && candidate_accuracy >= 0)
    return 100 * (reference_accuracy - candidate_accuracy);
  if (top1_agreement >= 0) return 100 * (1 - top1_agreement);
  if (map50 >= 0) return 100 * (1 - map50);
  return 0;
}

std::string AccuracyReport::summary() const {
  std::ostringstream out;
  out << samples << " samples";
  if (top1_agreement >= 0) out << ", top-1 agreement " << percent(top1_agreement);
  if (reference_accuracy >= 0)
    out << ", accuracy " << percent(reference_accuracy) << " -> " << percent(candidate_accuracy);
  if (map50 >= 0) out << ", mAP@0.5 against the original's boxes " << percent(map50);
  if (reference_map50 >= 0)
    out << ", mAP@0.5 against the labels " << percent(reference_map50) << " -> " << percent(candidate_map50);
  for (const OutputError& e : errors)
    out << ", " << e.name << ": max |diff| " << std::setprecision(4) << e.max_abs << ", mean |diff| "
        << e.mean_abs;
  return out.str();
}

AccuracyReport compare(const Predictor& reference, const Predictor& candidate,
                       const quantization::CalibrationBatches& batches, const Labels& labels,
                       const Progress& progress) {
  AccuracyReport report;
  std::vector<double> error_sums;
  std::vector<int64_t> error_counts;
  std::vector<int64_t> reference_top1, candidate_top1;
  std::vector<std::vector<Detection>> reference_boxes, candidate_boxes;
  const std::vector<std::string> names = reference.output_names();
  report.errors.resize(names.size());
  error_sums.assign(names.size(), 0);
  error_counts.assign(names.size(), 0);
  for (size_t i = 0; i < names.size(); ++i) report.errors[i].name = names[i];

  Batch batch;
  int64_t done = 0;
  while (batches(batch)) {
    for (const Batch& slice : model_batches(reference, batch)) {
      const std::vector<Tensor> want = reference.predict(slice);
      const std::vector<Tensor> got = candidate.predict(slice);
      KILN_CHECK(want.size() == got.size(), ErrorCode::kShapeMismatch, "accuracy check: the original gives ",
                 want.size(), " outputs, the optimized model ", got.size());
      if (report.task.empty()) report.task = task_of(want[0]);
      for (size_t i = 0; i < want.size(); ++i) {
        KILN_CHECK(want[i].shape() == got[i].shape(), ErrorCode::kShapeMismatch, "accuracy check: output '",
                   names[i], "': the original gives ", want[i].shape(), ", the optimized model ",
                   got[i].shape());
        const std::vector<float> a = want[i].cast(DType::kFloat32).contiguous().to_vector<float>();
        const std::vector<float> b = got[i].cast(DType::kFloat32).contiguous().to_vector<float>();
        for (size_t k = 0; k < a.size(); ++k) {
          const double d = std::abs(static_cast<double>(a[k]) - b[k]);
          report.errors[i].max_abs = std::max(report.errors[i].max_abs, d);
          error_sums[i] += d;
        }
        error_counts[i] += static_cast<int64_t>(a.size());
      }
      if (report.task == "classifier") {
        const std::vector<int64_t> a = top1(want[0]), b = top1(got[0]);
        reference_top1.insert(reference_top1.end(), a.begin(), a.end());
        candidate_top1.insert(candidate_top1.end(), b.begin(), b.end());
        report.samples += static_cast<int64_t>(a.size());
      } else if (report.task == "detector") {
        const auto a = decode_yolo(want[0]), b = decode_yolo(got[0]);
        reference_boxes.insert(reference_boxes.end(), a.begin(), a.end());
        candidate_boxes.insert(candidate_boxes.end(), b.begin(), b.end());
        report.samples += static_cast<int64_t>(a.size());
      } else {
        report.samples += want[0].ndim() > 0 ? want[0].shape()[0] : 1;
      }
    }
    ++done;
    if (progress) progress(done);
  }
  KILN_CHECK(done > 0, ErrorCode::kInvalidArgument, "accuracy check: the validation set is empty");
  for (size_t i = 0; i < names.size(); ++i)
    report.errors[i].mean_abs = error_counts[i] ? error_sums[i] / static_cast<double>(error_counts[i]) : 0;
  if (report.task == "classifier") {
    report.top1_agreement = agreement(reference_top1, candidate_top1);
    if (!labels.classes.empty()) {
      KILN_CHECK(labels.classes.size() == reference_top1.size(), ErrorCode::kShapeMismatch,
                 "accuracy check: ", labels.classes.size(), " labels for ", reference_top1.size(),
                 " validation samples");
      report.reference_accuracy = agreement(reference_top1, labels.classes);
      report.candidate_accuracy = agreement(candidate_top1, labels.classes);
    }
  } else if (report.task == "detector") {
    report.map50 = mean_average_precision(candidate_boxes, reference_boxes, 0.5f);
    if (!labels.boxes.empty()) {
      KILN_CHECK(labels.boxes.size() <= reference_boxes.size(), ErrorCode::kShapeMismatch,
                 "accuracy check: labelled boxes for image ", labels.boxes.size() - 1, " of ",
                 reference_boxes.size(), " validation images");
      std::vector<std::vector<Detection>> truth = labels.boxes;
      truth.resize(reference_boxes.size());
      report.reference_map50 = mean_average_precision(reference_boxes, truth, 0.5f);
      report.candidate_map50 = mean_average_precision(candidate_boxes, truth, 0.5f);
    }
  }
  KILN_CHECK(labels.empty() || report.reference_accuracy >= 0 || report.reference_map50 >= 0,
             ErrorCode::kInvalidArgument, "accuracy check: labels of ",
             labels.classes.empty() ? "boxes" : "classes", " given for a model whose first output (",
             report.task, ") they do not fit");
  return report;
}

std::string check_degradation(const AccuracyReport& report, double max_points, double warn_points) {
  const double lost = report.degradation_points();
  std::ostringstream what;
  what << std::fixed << std::setprecision(2) << "accuracy dropped by " << lost << " points ("
       << report.summary() << ")";
  if (max_points >= 0 && lost > max_points) {
    std::ostringstream limit;
    limit << std::fixed << std::setprecision(2) << max_points;
    throw Error(ErrorCode::kRuntime, what.str() + ", more than the " + limit.str() + " allowed");
  }
  if (lost > warn_points) {
    std::ostringstream limit;
    limit << std::fixed << std::setprecision(2) << warn_points;
    return "warning: " + what.str() + ", more than " + limit.str();
  }
  return "";
}

}  // namespace kiln::accuracy
