// The accuracy check of an optimized model against its original, over a validation set.
//
//   kiln::accuracy::AccuracyReport report = kiln::accuracy::compare(
//       original, optimized, kiln::quantization::npy_folder_batches("val/"),
//       kiln::accuracy::read_labels("val_labels.npy"));
//   std::cout << report.to_string();
//   kiln::accuracy::check_degradation(report, /*max_points=*/1.0);   // throws when it drops more
//
// Both Predictors run every batch. Per output: the largest and the mean absolute difference. For
// a classifier (first output (N, C)): top-1 agreement, and with labels both models' accuracy.
// For a YOLO-style detector (first output (N, boxes, 5 + classes): cx, cy, w, h, objectness,
// class scores): mAP@0.5 of the optimized model's boxes against the original's (after NMS), the
// original taken as the truth, and with labelled boxes both models' mAP@0.5 against them. The
// degradation in points is what the gate checks.
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "kiln/quantize.hpp"
#include "kiln/tensor.hpp"

namespace kiln {
class Predictor;

namespace accuracy {

// ---- Classification ----

// The index of the largest score in each row of `scores` (..., C), rows in memory order; ties
// go to the first.
std::vector<int64_t> top1(const Tensor& scores);
// The share of positions where `a` and `b` agree (sizes must match; 1 for none).
double agreement(const std::vector<int64_t>& a, const std::vector<int64_t>& b);
// ---- Detection ----

struct Detection {
  float x1 = 0, y1 = 0, x2 = 0, y2 = 0;  // corners
  float score = 0;
  int64_t label = 0;
};

// Intersection over union of two boxes (0 when both are empty).
float iou(const Detection& a, const Detection& b);
// Greedy non-maximum suppression per label: by falling score, drops a box whose IoU with a kept
// box of the same label exceeds `iou_threshold`.
std::vector<Detection> nms(std::vector<Detection> boxes, float iou_threshold);
// YOLO-style output (N, boxes, 5 + classes) to each image's detections: score = objectness *
// the best class score, kept when >= `score_threshold`, then NMS.
std::vector<std::vector<Detection>> decode_yolo(const Tensor& output, float score_threshold = 0.25f,
                                                float iou_threshold = 0.45f);
// Mean over the labels present in `truth` of the average precision: predictions of that label over
// all images by falling score, each a true positive when it overlaps (IoU >= `iou_threshold`) a
// truth box of its image not matched yet; AP is the area under the precision-recall curve with
// precision made non-increasing (every point, as VOC 2010 and later count it). 1 when there is
// no truth and no prediction, 0 when only one of them is empty.
double mean_average_precision(const std::vector<std::vector<Detection>>& predictions,
                              const std::vector<std::vector<Detection>>& truth, float iou_threshold = 0.5f);

// ---- Labels ----

struct Labels {
  std::vector<int64_t> classes;               // classifiers: one per sample
  std::vector<std::vector<Detection>> boxes;  // detectors: per image (images past the last: none)
  bool empty() const { return classes.empty() && boxes.empty(); }
};

// Labels from a file: a .npy of integers (or of integral floats) or text with one integer per line
// (or separated by spaces or commas) gives classes; a .npy of shape (K, 6) gives K boxes, each row
// (image index, label, x1, y1, x2, y2).
Labels read_labels(const std::string& path);

// ---- Comparing two models ----

struct OutputError {
  std::string name;
  double max_abs = 0, mean_abs = 0;
};

struct AccuracyReport {
  std::string task;  // "classifier", "detector" or "other" (from the first output's shape)
  int64_t samples = 0;
  double top1_agreement = -1;                               // classifiers; -1: not measured
  double reference_accuracy = -1, candidate_accuracy = -1;  // classifiers with labels
  double map50 = -1;                                        // detectors, against the original's boxes
  double reference_map50 = -1, candidate_map50 = -1;        // detectors with labelled boxes
  std::vector<OutputError> errors;                          // per output

  // Percentage points lost: accuracy (or mAP@0.5) against the labels when there are labels, else
  // 100 times the disagreement (classifiers) or 1 - mAP@0.5 against the original (detectors); 0
  // for other models.
  double degradation_points() const;
  // "top-1 agreement 99.7%, accuracy 98.6% -> 98.3%, max |diff| 0.09, mean |diff| 0.004"
  std::string summary() const;
};

// Called after each validation batch with the number done so far.
using Progress = std::function<void(int64_t batches_done)>;

// Runs `reference` and `candidate` on every batch of `batches` (input name -> tensor; "" names the
// only input). A batch of more rows than a model's fixed batch dimension is run in slices of that
// size. `labels`, when given, holds one class per sample of the first output or the boxes of each
// image, in batch order.
AccuracyReport compare(const Predictor& reference, const Predictor& candidate,
                       const quantization::CalibrationBatches& batches, const Labels& labels = {},
                       const Progress& progress = {});

// `batches` as `model` takes them: "" renamed to its only input, and a batch of more rows than its
// fixed batch dimension (a multiple of it) given as slices of that size, one per call.
quantization::CalibrationBatches model_sized(const Predictor& model,
                                             quantization::CalibrationBatches batches);

// The gate: a kiln::Error(kRuntime) naming both values when the report's degradation exceeds
// `max_points` (when >= 0); otherwise a warning text when it exceeds `warn_points`, else "".
std::string check_degradation(const AccuracyReport& report, double max_points = -1, double warn_points = 2.0);

}  // namespace accuracy
}  // namespace kiln
