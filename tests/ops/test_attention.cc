// Bad input to the transformer ops (Attention, RotaryEmbedding): each must throw a kiln::Error
// with the right code whose message names the op, the input or attribute, and the expected and
// actual values. Plus inference with unknown dimensions, which the case files cannot express.
#include <optional>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "op_test_util.h"

namespace kiln::ops {
namespace {

Tensor ints64(const Shape& shape) {
  return Tensor::zeros(shape, DType::kInt64);
}

TEST(AttentionErrors, WrongRank) {
  expect_error("Attention", {}, {floats({4, 8}), floats({4, 8}), floats({4, 8})}, ErrorCode::kShapeMismatch,
               {"Attention", "input 0 (Q)", "expected 3-D", "or 4-D", "got shape (4, 8)"});
  expect_error("Attention", {}, {floats({1, 2, 4, 8}), floats({1, 6, 16}), floats({1, 2, 6, 8})},
               ErrorCode::kShapeMismatch,
               {"input 1 (K)", "expected 4-D like input 0 (Q)", "got shape (1, 6, 16)"});
}

TEST(AttentionErrors, WrongDType) {
  const Tensor q = floats({1, 2, 4, 8}, DType::kInt32);
  expect_error("Attention", {}, {q, floats({1, 2, 6, 8}), floats({1, 2, 6, 8})}, ErrorCode::kTypeMismatch,
               {"Attention", "input 0 (Q)", "float32", "got int32"});
  expect_error("Attention", {},
               {floats({1, 2, 4, 8}), floats({1, 2, 6, 8}, DType::kFloat16), floats({1, 2, 6, 8})},
               ErrorCode::kTypeMismatch, {"input 1 (K)", "float32", "float16"});
  expect_error("Attention", {},
               {floats({1, 2, 4, 8}), floats({1, 2, 6, 8}), floats({1, 2, 6, 8}), Tensor(),
                ints64({1, 2, 3, 8}), floats({1, 2, 3, 8})},
               ErrorCode::kTypeMismatch, {"input 4 (past_key)", "float32", "int64"});
  expect_error("Attention", {},
               {floats({2, 2, 4, 8}), floats({2, 2, 6, 8}), floats({2, 2, 6, 8}), Tensor(), Tensor(),
                Tensor(), floats({2})},
               ErrorCode::kTypeMismatch, {"input 6 (nonpad_kv_seqlen)", "int64", "got float32"});
}

TEST(AttentionErrors, ThreeDimensionalNeedsHeadCounts) {
  expect_error("Attention", {}, {floats({1, 4, 16}), floats({1, 6, 16}), floats({1, 6, 16})},
               ErrorCode::kInvalidArgument,
               {"Attention", "'q_num_heads' and 'kv_num_heads' are required with 3-D inputs", "(1, 4, 16)"});
  expect_error("Attention", {{"q_num_heads", 3}, {"kv_num_heads", 1}},
               {floats({1, 4, 16}), floats({1, 6, 16}), floats({1, 6, 16})}, ErrorCode::kShapeMismatch,
               {"input 0 (Q)", "divisible by q_num_heads = 3", "got shape (1, 4, 16)"});
  expect_error("Attention", {{"q_num_heads", 4}, {"kv_num_heads", 3}},
               {floats({1, 4, 16}), floats({1, 6, 12}), floats({1, 6, 12})}, ErrorCode::kShapeMismatch,
               {"input 1 (K)", "divides the 4 query heads", "got 3 heads"});
  expect_error("Attention", {{"q_num_heads", 2}, {"kv_num_heads", 2}},
               {floats({1, 4, 16}), floats({1, 6, 12}), floats({1, 6, 12})}, ErrorCode::kShapeMismatch,
               {"input 1 (K)", "expected head size 8 like input 0 (Q)", "got 6"});
}

TEST(AttentionErrors, HeadAttributesMustMatchFourDimensionalShapes) {
  expect_error("Attention", {{"q_num_heads", 4}},
               {floats({1, 2, 4, 8}), floats({1, 2, 6, 8}), floats({1, 2, 6, 8})}, ErrorCode::kShapeMismatch,
               {"attribute 'q_num_heads' = 4", "does not match the 2 heads of input 0 (Q)", "(1, 2, 4, 8)"});
}

TEST(AttentionErrors, MismatchedShapes) {
  expect_error("Attention", {}, {floats({2, 2, 4, 8}), floats({1, 2, 6, 8}), floats({2, 2, 6, 8})},
               ErrorCode::kShapeMismatch, {"input 1 (K)", "expected batch size 2", "got shape (1, 2, 6, 8)"});
  expect_error("Attention", {}, {floats({1, 2, 4, 8}), floats({1, 2, 6, 8}), floats({1, 2, 5, 8})},
               ErrorCode::kShapeMismatch,
               {"input 2 (V)", "expected sequence length 6", "got shape (1, 2, 5, 8)"});
  expect_error("Attention", {}, {floats({1, 2, 4, 8}), floats({1, 2, 6, 8}), floats({1, 1, 6, 8})},
               ErrorCode::kShapeMismatch,
               {"input 2 (V)", "expected 2 heads like input 1 (K)", "(1, 1, 6, 8)"});
  expect_error("Attention", {}, {floats({1, 3, 4, 8}), floats({1, 2, 6, 8}), floats({1, 2, 6, 8})},
               ErrorCode::kShapeMismatch, {"input 1 (K)", "divides the 3 query heads", "got 2 heads"});
  expect_error("Attention", {}, {floats({1, 2, 4, 8}), floats({1, 2, 6, 4}), floats({1, 2, 6, 8})},
               ErrorCode::kShapeMismatch, {"input 1 (K)", "expected head size 8", "got 4"});
}

TEST(AttentionErrors, Cache) {
  const Tensor q = floats({1, 2, 4, 8}), k = floats({1, 2, 6, 8}), v = floats({1, 2, 6, 5});
  expect_error("Attention", {}, {q, k, v, Tensor(), floats({1, 2, 3, 8})}, ErrorCode::kInvalidArgument,
               {"input 4 (past_key) and input 5 (past_value) must be given together", "got only input 4"});
  expect_error("Attention", {}, {q, k, v, Tensor(), floats({1, 2, 3, 8}), floats({1, 2, 3, 8})},
               ErrorCode::kShapeMismatch, {"input 5 (past_value)", "= (1, 2, 3, 5)", "got (1, 2, 3, 8)"});
  expect_error("Attention", {}, {q, k, v, Tensor(), floats({1, 1, 3, 8}), floats({1, 2, 3, 5})},
               ErrorCode::kShapeMismatch, {"input 4 (past_key)", "= (1, 2, 3, 8)", "got (1, 1, 3, 8)"});
  expect_error("Attention", {}, {q, k, v, Tensor(), floats({1, 2, 3, 8}), floats({1, 2, 3, 5}), ints64({1})},
               ErrorCode::kInvalidArgument, {"input 6 (nonpad_kv_seqlen) cannot be combined with input 4"});
  expect_error("Attention", {}, {q, k, v, Tensor(), Tensor(), Tensor(), ints64({2})},
               ErrorCode::kShapeMismatch,
               {"input 6 (nonpad_kv_seqlen)", "expected shape (batch_size,) = (1,)", "got (2,)"});
}

TEST(AttentionErrors, MaskShape) {
  const Tensor q = floats({2, 3, 4, 8}), k = floats({2, 3, 6, 8}), v = floats({2, 3, 6, 8});
  expect_error("Attention", {}, {q, k, v, floats({4, 7})}, ErrorCode::kShapeMismatch,
               {"input 3 (attn_mask)", "= (2, 3, 4, 6)", "last axis of at most 6", "got (4, 7)"});
  expect_error("Attention", {}, {q, k, v, floats({2, 4, 6})}, ErrorCode::kShapeMismatch,
               {"input 3 (attn_mask)", "broadcasts to", "got (2, 4, 6)"});
  expect_error("Attention", {}, {q, k, v, floats({1, 2, 3, 4, 6})}, ErrorCode::kShapeMismatch,
               {"input 3 (attn_mask)", "rank 1 to 4", "got (1, 2, 3, 4, 6)"});
  expect_error("Attention", {}, {q, k, v, Tensor::scalar(0, DType::kFloat32)}, ErrorCode::kShapeMismatch,
               {"input 3 (attn_mask)", "got ()"});
}

TEST(AttentionErrors, InvalidAttributes) {
  expect_bad_attr("Attention", {{"qk_matmul_output_mode", 4}},
                  {"Attention attribute 'qk_matmul_output_mode'", "expected 0 (raw)", "got 4"});
  expect_bad_attr(
      "Attention", {{"softmax_precision", 7}},
      {"attribute 'softmax_precision'", "1 (FLOAT), 10 (FLOAT16), 11 (DOUBLE) or 16 (BFLOAT16)", "got 7"});
  expect_bad_attr("Attention", {{"left_window_size", -2}},
                  {"attribute 'left_window_size'", "-1 (unbounded)", "got -2"});
  expect_bad_attr("Attention", {{"scale", -0.5}}, {"attribute 'scale'", "expected a value >= 0", "got -0.5"});
  expect_bad_attr("Attention", {{"softcap", -1.0}}, {"attribute 'softcap'", "got -1"});
  expect_bad_attr("Attention", {{"is_causal", 2}}, {"attribute 'is_causal'", "expected 0 or 1", "got 2"});
  expect_bad_attr("Attention", {{"kv_num_heads", 0}},
                  {"attribute 'kv_num_heads'", "expected a value >= 1", "got 0"});
}

TEST(AttentionErrors, TooManyOutputs) {
  expect_error("Attention", {}, {floats({1, 2, 4, 8}), floats({1, 2, 6, 8}), floats({1, 2, 6, 8})},
               ErrorCode::kInvalidArgument, {"Attention", "expected 1 to 4 outputs, got 5"}, 5);
}

TEST(AttentionInference, UnknownDimensionsPropagate) {
  const OpSchema& schema = OpRegistry::global().get("Attention");
  const Attrs attrs = schema.bind({{"q_num_heads", 4}, {"kv_num_heads", 2}});
  const std::vector<std::optional<TensorInfo>> inputs = {
      TensorInfo{DType::kFloat16, Shape{-1, 3, 32}},   TensorInfo{DType::kFloat16, Shape{-1, -1, 16}},
      TensorInfo{DType::kFloat16, Shape{-1, -1, 12}},  std::nullopt,
      TensorInfo{DType::kFloat16, Shape{-1, 2, 5, 8}}, TensorInfo{DType::kFloat16, Shape{-1, 2, 5, 6}}};
  const auto out = schema.infer_types(attrs, inputs, {}, 4);
  ASSERT_EQ(out.size(), 4u);
  EXPECT_EQ(out[0].shape, (Shape{-1, 3, 24}));
  EXPECT_EQ(out[1].shape, (Shape{-1, 2, -1, 8}));
  EXPECT_EQ(out[2].shape, (Shape{-1, 2, -1, 6}));
  EXPECT_EQ(out[3].shape, (Shape{-1, 4, 3, -1}));
  EXPECT_EQ(out[3].dtype, DType::kFloat16);
}

TEST(RotaryEmbeddingErrors, WrongRankAndDType) {
  expect_error("RotaryEmbedding", {}, {floats({3, 8}), floats({5, 4}), floats({5, 4})},
               ErrorCode::kShapeMismatch,
               {"RotaryEmbedding", "input 0 (X)", "expected 4-D", "got shape (3, 8)"});
  expect_error("RotaryEmbedding", {},
               {floats({1, 2, 3, 8}, DType::kFloat64), floats({1, 3, 4}, DType::kFloat64),
                floats({1, 3, 4}, DType::kFloat64)},
               ErrorCode::kTypeMismatch, {"input 0 (X)", "float32, float16, bfloat16", "got float64"});
  expect_error("RotaryEmbedding", {},
               {floats({1, 2, 3, 8}), floats({1, 3, 4}, DType::kFloat16), floats({1, 3, 4})},
               ErrorCode::kTypeMismatch, {"input 1 (cos_cache)", "float16"});
  expect_error("RotaryEmbedding", {},
               {floats({1, 2, 3, 8}), floats({5, 4}), floats({5, 4}), floats({1, 3}, DType::kInt32)},
               ErrorCode::kTypeMismatch, {"input 3 (position_ids)", "int64", "got int32"});
}

TEST(RotaryEmbeddingErrors, Heads) {
  expect_error("RotaryEmbedding", {}, {floats({1, 3, 16}), floats({1, 3, 4}), floats({1, 3, 4})},
               ErrorCode::kInvalidArgument,
               {"attribute 'num_heads' is required with a 3-D input 0 (X)", "(1, 3, 16)"});
  expect_error("RotaryEmbedding", {{"num_heads", 3}},
               {floats({1, 3, 16}), floats({1, 3, 4}), floats({1, 3, 4})}, ErrorCode::kShapeMismatch,
               {"input 0 (X)", "divisible by num_heads = 3", "got shape (1, 3, 16)"});
  expect_error("RotaryEmbedding", {{"num_heads", 4}},
               {floats({1, 2, 3, 8}), floats({1, 3, 4}), floats({1, 3, 4})}, ErrorCode::kShapeMismatch,
               {"'num_heads' = 4", "does not match the 2 heads of input 0 (X)"});
}

TEST(RotaryEmbeddingErrors, RotarySpan) {
  expect_error("RotaryEmbedding", {{"rotary_embedding_dim", 10}},
               {floats({1, 2, 3, 8}), floats({1, 3, 5}), floats({1, 3, 5})}, ErrorCode::kInvalidArgument,
               {"attribute 'rotary_embedding_dim'", "at most the head size 8", "got 10"});
  expect_error("RotaryEmbedding", {{"rotary_embedding_dim", 3}},
               {floats({1, 2, 3, 8}), floats({1, 3, 1}), floats({1, 3, 1})}, ErrorCode::kShapeMismatch,
               {"rotated span must be even", "is 3"});
  expect_error("RotaryEmbedding", {}, {floats({1, 2, 3, 7}), floats({1, 3, 3}), floats({1, 3, 3})},
               ErrorCode::kShapeMismatch, {"rotated span must be even", "(1, 2, 3, 7)", "is 7"});
}

TEST(RotaryEmbeddingErrors, CacheShapes) {
  expect_error("RotaryEmbedding", {}, {floats({2, 2, 3, 8}), floats({2, 3, 3}), floats({2, 3, 3})},
               ErrorCode::kShapeMismatch,
               {"input 1 (cos_cache)", "(batch_size, sequence_length, rotary_embedding_dim / 2) = (2, 3, 4)",
                "got (2, 3, 3)"});
  expect_error("RotaryEmbedding", {}, {floats({2, 2, 3, 8}), floats({9, 4}), floats({9, 4}), ints64({2, 4})},
               ErrorCode::kShapeMismatch,
               {"input 3 (position_ids)", "(batch_size, sequence_length) = (2, 3)", "got (2, 4)"});
  expect_error("RotaryEmbedding", {}, {floats({2, 2, 3, 8}), floats({9, 4}), floats({8, 4}), ints64({2, 3})},
               ErrorCode::kShapeMismatch, {"input 2 (sin_cache)", "(9, 4)", "got (8, 4)"});
}

TEST(RotaryEmbeddingErrors, PositionOutOfRange) {
  std::vector<int64_t> ids = {0, 1, 9, 2, 3, 4};
  expect_error(
      "RotaryEmbedding", {},
      {floats({2, 2, 3, 8}), floats({9, 4}), floats({9, 4}), Tensor::from_vector<int64_t>(ids, Shape{2, 3})},
      ErrorCode::kOutOfRange, {"RotaryEmbedding", "input 3 (position_ids)", "value 9 at index 2", "[0, 9)"});
}

TEST(RotaryEmbeddingErrors, InvalidAttributes) {
  expect_bad_attr("RotaryEmbedding", {{"interleaved", 2}},
                  {"attribute 'interleaved'", "expected 0 or 1", "got 2"});
  expect_bad_attr("RotaryEmbedding", {{"num_heads", 0}}, {"attribute 'num_heads'", "got 0"});
  expect_bad_attr("RotaryEmbedding", {{"rotary_embedding_dim", -2}},
                  {"attribute 'rotary_embedding_dim'", "expected a value >= 0", "got -2"});
}

}  // namespace
}  // namespace kiln::ops
