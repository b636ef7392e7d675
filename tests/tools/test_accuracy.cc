// The accuracy check (src/tools/accuracy): classification and detection metrics against values
// worked out by hand (IoU, NMS, YOLO decoding, average precision), labels files, two models
// compared over batches (with a fixed batch dimension the batches are sliced), and the gate.
#include <gtest/gtest.h>

#include <fstream>

#include "graph/graph.h"
#include "kiln/accuracy.hpp"
#include "kiln/error.hpp"
#include "kiln/npy.hpp"
#include "kiln/predictor.hpp"
#include "test_support.h"

namespace kiln::accuracy {
namespace {

TEST(Accuracy, Top1AndAgreement) {
  const Tensor scores = Tensor::from_vector<float>({0, 2, 1, 5, 5, 1, -1, -2, -0.5f}, Shape{3, 3});
  EXPECT_EQ(top1(scores), (std::vector<int64_t>{1, 0, 2}));  // a tie goes to the first
  EXPECT_DOUBLE_EQ(agreement({1, 0, 2, 3}, {1, 1, 2, 0}), 0.5);
  EXPECT_DOUBLE_EQ(agreement({}, {}), 1.0);
  EXPECT_THROW(agreement({1}, {1, 2}), Error);
}

TEST(Accuracy, ReadsLabelsFromNpyAndText) {
  testing::TempDir dir;
  npy::save(dir / "ints.npy", Tensor::from_vector<int64_t>({3, 1, 4}, Shape{3}));
  npy::save(dir / "floats.npy", Tensor::from_vector<float>({2, 0}, Shape{2}));
  npy::save(dir / "fractions.npy", Tensor::from_vector<float>({2.5f}, Shape{1}));
  std::ofstream(dir / "labels.txt") << "7\n8, 9\n 10\n";
  std::ofstream(dir / "bad.txt") << "1 cat 3\n";
  EXPECT_EQ(read_labels(dir / "ints.npy").classes, (std::vector<int64_t>{3, 1, 4}));
  EXPECT_EQ(read_labels(dir / "floats.npy").classes, (std::vector<int64_t>{2, 0}));
  EXPECT_EQ(read_labels(dir / "labels.txt").classes, (std::vector<int64_t>{7, 8, 9, 10}));
  // Boxes: (image, label, x1, y1, x2, y2) rows, grouped by image; image 1 has none.
  npy::save(dir / "boxes.npy",
            Tensor::from_vector<float>({2, 1, 0, 0, 4, 4, 0, 3, 1, 2, 3, 4, 2, 0, 5, 5, 6, 6}, Shape{3, 6}));
  const Labels boxes = read_labels(dir / "boxes.npy");
  EXPECT_TRUE(boxes.classes.empty());
  ASSERT_EQ(boxes.boxes.size(), 3u);
  EXPECT_EQ(boxes.boxes[0].size(), 1u);
  EXPECT_EQ(boxes.boxes[1].size(), 0u);
  ASSERT_EQ(boxes.boxes[2].size(), 2u);
  EXPECT_EQ(boxes.boxes[2][0].label, 1);
  EXPECT_FLOAT_EQ(boxes.boxes[2][0].x2, 4);
  EXPECT_EQ(boxes.boxes[0][0].label, 3);
  EXPECT_FLOAT_EQ(boxes.boxes[0][0].y1, 2);
  npy::save(dir / "bad_boxes.npy", Tensor::zeros({2, 5}, DType::kFloat32));
  EXPECT_THROW(read_labels(dir / "bad_boxes.npy"), Error);
  EXPECT_THROW(read_labels(dir / "fractions.npy"), Error);
  EXPECT_THROW(read_labels(dir / "bad.txt"), Error);
  EXPECT_THROW(read_labels(dir / "missing.txt"), Error);
}

TEST(Accuracy, IouAndNms) {
  // Overlap 1x1 of two 2x2 boxes: 1 / (4 + 4 - 1).
  EXPECT_FLOAT_EQ(iou({0, 0, 2, 2, 1, 0}, {1, 1, 3, 3, 1, 0}), 1.0f / 7);
  EXPECT_FLOAT_EQ(iou({0, 0, 2, 2, 1, 0}, {2, 2, 3, 3, 1, 0}), 0.0f);
  // b overlaps a by 81 / 119 = 0.68 and goes; c, the same box as b with another label, stays.
  const Detection a{0, 0, 10, 10, 0.9f, 0}, b{1, 1, 11, 11, 0.8f, 0}, c{1, 1, 11, 11, 0.7f, 1};
  const std::vector<Detection> kept = nms({c, b, a}, 0.5f);
  ASSERT_EQ(kept.size(), 2u);
  EXPECT_FLOAT_EQ(kept[0].score, 0.9f);
  EXPECT_FLOAT_EQ(kept[1].score, 0.7f);
  EXPECT_EQ(nms({a, b}, 0.7f).size(), 2u);  // below the threshold both stay
}

TEST(Accuracy, DecodesYoloRows) {
  // One image, three rows of (cx, cy, w, h, objectness, class 0, class 1).
  const Tensor out = Tensor::from_vector<float>({5,    5,  4, 2, 0.9f, 0.5f, 0.9f,   // 0.81, class 1
                                                 50,   50, 4, 4, 0.3f, 0.5f, 0.2f,   // 0.15: below 0.25
                                                 5.2f, 5,  4, 2, 0.8f, 0.1f, 0.9f},  // 0.72, NMS drops it
                                                Shape{1, 3, 7});
  const std::vector<std::vector<Detection>> boxes = decode_yolo(out);
  ASSERT_EQ(boxes.size(), 1u);
  ASSERT_EQ(boxes[0].size(), 1u);
  const Detection& d = boxes[0][0];
  EXPECT_FLOAT_EQ(d.x1, 3);
  EXPECT_FLOAT_EQ(d.y1, 4);
  EXPECT_FLOAT_EQ(d.x2, 7);
  EXPECT_FLOAT_EQ(d.y2, 6);
  EXPECT_FLOAT_EQ(d.score, 0.81f);
  EXPECT_EQ(d.label, 1);
  EXPECT_THROW(decode_yolo(Tensor::zeros({1, 3, 5}, DType::kFloat32)), Error);
}

TEST(Accuracy, MeanAveragePrecisionOfHandMadeBoxes) {
  const Detection t1{0, 0, 10, 10, 1, 0}, t2{20, 20, 30, 30, 1, 0}, t3{50, 50, 60, 60, 1, 1};
  // Label 0, by falling score: a hit on t1, a miss, a hit on t2. Precision 1, 1/2, 2/3 at recall
  // 1/2, 1/2, 1; made non-increasing: 1, 2/3, 2/3; AP = 1/2 * 1 + 1/2 * 2/3 = 5/6.
  const std::vector<std::vector<Detection>> predictions = {
      {{0, 0, 10, 9, 0.9f, 0}, {40, 40, 45, 45, 0.8f, 0}}, {{21, 20, 30, 30, 0.7f, 0}}};
  EXPECT_NEAR(mean_average_precision(predictions, {{t1}, {t2}}), 5.0 / 6, 1e-9);
  // Label 1 (t3) is never found: its AP is 0 and the mean halves.
  EXPECT_NEAR(mean_average_precision(predictions, {{t1, t3}, {t2}}), 5.0 / 12, 1e-9);
  // A second hit on a matched box is a false positive: precision 1 then 1/2, recall 1/2 both.
  EXPECT_NEAR(mean_average_precision({{{0, 0, 10, 10, 0.9f, 0}, {0, 0, 10, 10, 0.8f, 0}}, {}}, {{t1}, {t2}}),
              0.5, 1e-9);
  // Below IoU 0.5 a box does not count.
  EXPECT_NEAR(mean_average_precision({{{5, 5, 15, 15, 0.9f, 0}}}, {{t1}}), 0.0, 1e-9);
  EXPECT_DOUBLE_EQ(mean_average_precision({{t1}}, {{t1}}), 1.0);
  EXPECT_DOUBLE_EQ(mean_average_precision({{}}, {{}}), 1.0);
  EXPECT_DOUBLE_EQ(mean_average_precision({{t1}}, {{}}), 0.0);
}

// y = x + shift, for an input of `shape` (by default rows of 3 scores, a fixed batch of 1).
Predictor shifted(const std::vector<float>& shift, const Shape& shape = Shape{1, 3}) {
  graph::Graph g;
  graph::Value* x = g.add_input("x", ops::TensorInfo{DType::kFloat32, shape});
  graph::Value* s = g.add_initializer(
      "shift", Tensor::from_vector<float>(shift, Shape{static_cast<int64_t>(shift.size())}));
  graph::Node* add = g.add_node("Add", {x, s}, {}, "add");
  g.set_outputs({add->outputs[0]});
  g.infer_shapes();
  return Predictor(std::move(g));
}

TEST(Accuracy, ComparesTwoModelsOverSlicedBatches) {
  // Rows 1 and 3 change their top-1 under the shift of 0.5 on class 0; labels 1, 0, 0, 2: both
  // models get 3 of 4.
  const std::vector<float> rows = {0, 1, 0.2f, 0, 0.3f, 0.1f, 1, 0, 0, 0, 0, 0.4f};
  const Tensor x = Tensor::from_vector<float>(rows, Shape{4, 3});
  auto next = std::make_shared<int>(0);
  const quantization::CalibrationBatches batches = [x, next](std::map<std::string, Tensor>& batch) {
    if (*next == 2) return false;
    batch = {{"", x.slice(0, *next * 2, *next * 2 + 2).contiguous()}};  // 2 rows for a batch-1 model
    ++*next;
    return true;
  };
  int64_t progress_calls = 0;
  const AccuracyReport report =
      compare(shifted({0, 0, 0}), shifted({0.5f, 0, 0}), batches, {.classes = {1, 0, 0, 2}},
              [&](int64_t done) { progress_calls = done; });
  EXPECT_EQ(progress_calls, 2);
  EXPECT_EQ(report.task, "classifier");
  EXPECT_EQ(report.samples, 4);
  EXPECT_DOUBLE_EQ(report.top1_agreement, 0.5);
  EXPECT_DOUBLE_EQ(report.reference_accuracy, 0.75);
  EXPECT_DOUBLE_EQ(report.candidate_accuracy, 0.75);
  ASSERT_EQ(report.errors.size(), 1u);
  EXPECT_DOUBLE_EQ(report.errors[0].max_abs, 0.5);
  EXPECT_NEAR(report.errors[0].mean_abs, 0.5 / 3, 1e-9);
  EXPECT_DOUBLE_EQ(report.degradation_points(), 0.0);  // with labels, accuracy decides
}

// A detector's output (1, 2, 7): two boxes of different labels; the candidate moves every x
// coordinate by 3, so the 4-wide box of label 1 overlaps its original by 1/7 (a miss) and the
// 20-wide box of label 0 by 17/23 (a hit): mAP = (1 + 0) / 2.
TEST(Accuracy, ComparesDetectorsByTheirBoxes) {
  const Tensor x = Tensor::from_vector<float>({50, 50, 20, 20, 0.9f, 0.9f, 0.1f,  //
                                               10, 10, 4, 4, 0.9f, 0.1f, 0.9f},
                                              Shape{1, 2, 7});
  const auto batches = [x] {
    auto given = std::make_shared<bool>(false);
    return quantization::CalibrationBatches([x, given](std::map<std::string, Tensor>& batch) {
      if (*given) return false;
      batch = {{"x", x}};
      return *given = true;
    });
  };
  const Predictor original = shifted(std::vector<float>(7, 0), Shape{1, 2, 7});
  const Predictor moved = shifted({3, 0, 0, 0, 0, 0, 0}, Shape{1, 2, 7});
  const AccuracyReport report = compare(original, moved, batches());
  EXPECT_EQ(report.task, "detector");
  EXPECT_EQ(report.samples, 1);
  EXPECT_DOUBLE_EQ(report.map50, 0.5);
  EXPECT_DOUBLE_EQ(report.top1_agreement, -1);
  EXPECT_DOUBLE_EQ(report.errors[0].max_abs, 3);
  EXPECT_NEAR(report.degradation_points(), 50, 1e-9);

  // Labelled boxes: the original's label-0 box (40, 40, 60, 60) and a label-1 box at (8, 8, 12, 12),
  // which the original finds and the moved model misses: mAP 1 -> 1/2.
  const Labels labels{.boxes = {{{40, 40, 60, 60, 1, 0}, {8, 8, 12, 12, 1, 1}}}};
  const AccuracyReport labelled = compare(original, moved, batches(), labels);
  EXPECT_DOUBLE_EQ(labelled.reference_map50, 1.0);
  EXPECT_DOUBLE_EQ(labelled.candidate_map50, 0.5);
  EXPECT_NEAR(labelled.degradation_points(), 50, 1e-9);
  // Labels of classes do not fit a detector.
  EXPECT_THROW(compare(original, moved, batches(), {.classes = {1}}), Error);
}

TEST(Accuracy, GateWarnsAndFails) {
  AccuracyReport report;
  report.task = "classifier";
  report.top1_agreement = 0.96;
  report.reference_accuracy = 0.98;
  report.candidate_accuracy = 0.95;
  EXPECT_NEAR(report.degradation_points(), 3.0, 1e-9);
  EXPECT_NE(check_degradation(report).find("warning: accuracy dropped by 3.00 points"), std::string::npos);
  EXPECT_NE(check_degradation(report, 5).find("warning"), std::string::npos);
  EXPECT_EQ(check_degradation(report, 5, 4), "");
  try {
    check_degradation(report, 1);
    ADD_FAILURE() << "no error for 3 points lost with 1 allowed";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("3.00 points"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("1.00 allowed"), std::string::npos) << e.what();
  }
  // Without labels the disagreement counts; a detector counts 1 - mAP.
  report.reference_accuracy = report.candidate_accuracy = -1;
  EXPECT_NEAR(report.degradation_points(), 4.0, 1e-9);
  AccuracyReport detector;
  detector.task = "detector";
  detector.map50 = 0.9;
  EXPECT_NEAR(detector.degradation_points(), 10.0, 1e-9);
  EXPECT_THROW(check_degradation(detector, 9.5), Error);
}

}  // namespace
}  // namespace kiln::accuracy
