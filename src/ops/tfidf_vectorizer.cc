// TfIdfVectorizer: counts, per row of integer tokens, the n-grams of a fixed pool (with skips
// between their items) and weighs the counts (TF, IDF or TF-IDF) into one column per n-gram.
//
// The pool (pool_int64s) holds the n-grams of each size one after another; ngram_counts[k] is
// where those of size k + 1 start. The n-grams are numbered in pool order across all sizes, and
// ngram_indexes maps that number to an output column. Only sizes within [min_gram_length,
// max_gram_length] are counted. A skip distance d in [1, max_skip_count + 1] takes items d apart;
// unigrams are counted once, not once per skip distance.
#include <algorithm>
#include <map>
#include <vector>

#include "attr_validators.h"
#include "infer_util.h"

namespace kiln::ops {
namespace {

inline constexpr DType kTokenDTypes[] = {DType::kInt32, DType::kInt64};

// The pool's counted n-grams, each with its output column.
struct NgramPool {
  std::map<std::vector<int64_t>, int64_t> columns;
  int64_t output_size = 0;
};

NgramPool ngram_pool(const Attrs& attrs) {
  KILN_CHECK(!attrs.has("pool_strings"), ErrorCode::kUnsupported,
             "attribute 'pool_strings': string tokens are not supported; pool_int64s is");
  KILN_CHECK(attrs.has("pool_int64s"), ErrorCode::kInvalidArgument, "attribute 'pool_int64s' is required");
  const std::vector<int64_t>& pool = attrs.get_ints("pool_int64s");
  const std::vector<int64_t>& counts = attrs.get_ints("ngram_counts");
  const std::vector<int64_t>& indexes = attrs.get_ints("ngram_indexes");
  const int64_t min_gram = attrs.get_int("min_gram_length"), max_gram = attrs.get_int("max_gram_length");
  KILN_CHECK(min_gram >= 1 && min_gram <= max_gram, ErrorCode::kInvalidArgument,
             "attributes 'min_gram_length' and 'max_gram_length': expected 1 <= ", min_gram,
             " <= ", max_gram);
  KILN_CHECK(attrs.get_int("max_skip_count") >= 0, ErrorCode::kInvalidArgument,
             "attribute 'max_skip_count': expected a count >= 0, got ", attrs.get_int("max_skip_count"));
  KILN_CHECK(!indexes.empty(), ErrorCode::kInvalidArgument, "attribute 'ngram_indexes' is empty");
  NgramPool p;
  p.output_size = *std::max_element(indexes.begin(), indexes.end()) + 1;
  size_t number = 0;  // the n-gram's position in the pool, across sizes
  for (size_t k = 0; k < counts.size(); ++k) {
    const auto size = static_cast<int64_t>(k + 1);
    const int64_t begin = counts[k];
    const int64_t end = k + 1 < counts.size() ? counts[k + 1] : static_cast<int64_t>(pool.size());
    KILN_CHECK(begin >= 0 && begin <= end && end <= static_cast<int64_t>(pool.size()),
               ErrorCode::kInvalidArgument, "attribute 'ngram_counts': entry ", k, " = ", begin,
               " does not start a run of pool_int64s (", pool.size(), " items)");
    for (int64_t at = begin; at + size <= end; at += size, ++number) {
      KILN_CHECK(number < indexes.size(), ErrorCode::kInvalidArgument,
                 "attribute 'ngram_indexes': ", indexes.size(), " entries for more n-grams than that");
      const int64_t column = indexes[number];
      KILN_CHECK(column >= 0, ErrorCode::kInvalidArgument, "attribute 'ngram_indexes': negative column ",
                 column);
      if (size >= min_gram && size <= max_gram)
        p.columns[std::vector<int64_t>(pool.begin() + at, pool.begin() + at + size)] = column;
    }
  }
  return p;
}

std::vector<TensorInfo> infer_tfidf(InferContext& ctx) {
  require_dtype(ctx, 0, kTokenDTypes);
  require_rank(ctx, 0, 1, 2);
  const NgramPool pool = ngram_pool(ctx.attrs());
  const Shape& x = ctx.shape(0);
  return {
      TensorInfo{DType::kFloat32, x.ndim() == 1 ? Shape{pool.output_size} : Shape{x[0], pool.output_size}}};
}

// The n-gram counts of one row of tokens, one per output column.
std::vector<int64_t> count_row(const NgramPool& pool, const std::vector<int64_t>& row, const Attrs& attrs) {
  const int64_t max_gram = attrs.get_int("max_gram_length");
  const int64_t max_skip = attrs.get_int("max_skip_count");
  int64_t smallest = attrs.get_int("min_gram_length");
  std::vector<int64_t> counts(static_cast<size_t>(pool.output_size), 0);
  const auto n = static_cast<int64_t>(row.size());
  for (int64_t distance = 1; distance <= max_skip + 1; ++distance) {
    for (int64_t start = 0; start + distance * (smallest - 1) < n; ++start) {
      std::vector<int64_t> gram;
      for (int64_t at = start; at < n && static_cast<int64_t>(gram.size()) < max_gram; at += distance) {
        gram.push_back(row[static_cast<size_t>(at)]);
        if (static_cast<int64_t>(gram.size()) < smallest) continue;
        if (auto it = pool.columns.find(gram); it != pool.columns.end())
          ++counts[static_cast<size_t>(it->second)];
      }
    }
    if (smallest == 1) {  // unigrams do not depend on the skip distance
      smallest = 2;
      if (smallest > max_gram) break;
    }
  }
  return counts;
}

void tfidf_kernel(KernelContext& ctx) {
  const NgramPool pool = ngram_pool(ctx.attrs);
  const Tensor& x = ctx.input(0);
  const std::vector<int64_t> tokens = x.cast(DType::kInt64).to_vector<int64_t>();
  const int64_t rows = x.ndim() == 2 ? x.shape()[0] : 1;
  const int64_t width = rows == 0 ? 0 : static_cast<int64_t>(tokens.size()) / rows;
  const std::string& mode = ctx.attrs.get_string("mode");
  const std::vector<double> weights =
      ctx.attrs.has("weights") ? ctx.attrs.get_floats("weights") : std::vector<double>{};
  KILN_CHECK(weights.empty() || static_cast<int64_t>(weights.size()) >= pool.output_size,
             ErrorCode::kInvalidArgument, "attribute 'weights': ", weights.size(), " entries for ",
             pool.output_size, " columns");
  float* y = ctx.output(0).data<float>();
  for (int64_t r = 0; r < rows; ++r) {
    const std::vector<int64_t> row(tokens.begin() + r * width, tokens.begin() + (r + 1) * width);
    const std::vector<int64_t> counts = count_row(pool, row, ctx.attrs);
    for (int64_t c = 0; c < pool.output_size; ++c) {
      const auto count = static_cast<double>(counts[static_cast<size_t>(c)]);
      const double weight = weights.empty() ? 1.0 : weights[static_cast<size_t>(c)];
      double value = count;  // TF
      if (mode == "IDF") value = count > 0 ? weight : 0.0;
      if (mode == "TFIDF") value = weight * count;
      y[r * pool.output_size + c] = static_cast<float>(value);
    }
  }
}

KILN_REGISTER_OP(TfIdfVectorizer)
    .doc(
        "Counts the pool's n-grams (sizes min_gram_length to max_gram_length, items up to max_skip_count "
        "apart) "
        "in each row of integer tokens, [C] or [B, C], into float columns (ngram_indexes): the count (TF), "
        "the "
        "weight where the count is nonzero (IDF), or weight times count (TFIDF).")
    .input("X")
    .output("Y")
    .required_attr("max_gram_length", AttrType::kInt)
    .required_attr("max_skip_count", AttrType::kInt)
    .required_attr("min_gram_length", AttrType::kInt)
    .required_attr("mode", AttrType::kString, one_of({"TF", "IDF", "TFIDF"}))
    .required_attr("ngram_counts", AttrType::kInts)
    .required_attr("ngram_indexes", AttrType::kInts)
    .optional_attr("pool_int64s", AttrType::kInts)
    .optional_attr("pool_strings", AttrType::kStrings)
    .optional_attr("weights", AttrType::kFloats)
    .infer(infer_tfidf)
    .kernel(tfidf_kernel);

}  // namespace
}  // namespace kiln::ops
