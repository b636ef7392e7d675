// The C++ NDArray API: the README example, views, in-place updates, async errors.
#include <numeric>
#include <thread>

#include <gtest/gtest.h>

#include "kiln/kiln.hpp"

namespace kiln {
namespace {

TEST(NDArray, ReadmeExample) {
  auto dev = num_gpus() > 0 ? gpu(0) : cpu();
  auto a = nd::ones({512, 512}, dev), b = nd::ones({512, 512}, dev);
  auto r = nd::dot(a, b);
  std::vector<float> v = r.to_vector<float>();
  ASSERT_EQ(v.size(), 512u * 512u);
  for (float x : v) ASSERT_EQ(x, 512.0f);

  auto s = nd::ones({3, 1}) + nd::ones({1, 4});
  EXPECT_EQ(s.shape(), Shape({3, 4}));
  EXPECT_EQ(s.shape().to_string(), "(3, 4)");
  for (float x : s.to_vector<float>()) EXPECT_EQ(x, 2.0f);

  auto d = nd::ones({50, 50});
  d.wait_to_read();
  const AllocatorStats before = allocator_stats();
  d += 2;
  d.wait_to_read();
  const AllocatorStats after = allocator_stats();
  EXPECT_EQ(after.num_allocations, before.num_allocations) << "d += 2 must not allocate";
  for (float x : d.to_vector<float>()) ASSERT_EQ(x, 3.0f);
}

TEST(NDArray, InPlaceWithArrayBroadcastsIntoTheLeftShape) {
  auto d = nd::zeros({2, 3});
  auto row = nd::array<float>({1, 2, 3}, {3});
  d += row;
  d *= 2.0;
  EXPECT_EQ(d.to_vector<float>(), (std::vector<float>{2, 4, 6, 2, 4, 6}));
  auto small = nd::zeros({3});
  EXPECT_THROW(small += nd::zeros({2, 3}), Error);  // the result would not fit in `small`
}

TEST(NDArray, ViewsShareStorage) {
  auto x = nd::array<float>({0, 1, 2, 3, 4, 5}, {2, 3});
  auto t = x.T();
  EXPECT_EQ(t.shape(), Shape({3, 2}));
  EXPECT_EQ(t.to_vector<float>(), (std::vector<float>{0, 3, 1, 4, 2, 5}));
  auto col = x.slice(1, 1, 3);
  EXPECT_EQ(col.to_vector<float>(), (std::vector<float>{1, 2, 4, 5}));
  col += 10;  // writes through the view into x
  EXPECT_EQ(x.to_vector<float>(), (std::vector<float>{0, 11, 12, 3, 14, 15}));
  auto flat = x.reshape({-1});
  EXPECT_EQ(flat.shape(), Shape({6}));
  EXPECT_EQ(x.at(1).to_vector<float>(), (std::vector<float>{3, 14, 15}));
  // A transposed view is not contiguous: reshaping it copies.
  EXPECT_EQ(t.reshape({6}).to_vector<float>(), (std::vector<float>{0, 3, 11, 14, 12, 15}));
}

TEST(NDArray, FlattenKeepsTheFirstAxis) {
  auto x = nd::array<float>({0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11}, {2, 3, 2});
  auto flat = x.flatten();
  EXPECT_EQ(flat.shape(), Shape({2, 6}));
  EXPECT_EQ(flat.view().storage(), x.view().storage());  // a view
  // A transposed (strided) array flattens in its logical order, as numpy's reshape does.
  EXPECT_EQ(x.transpose({1, 0, 2}).flatten().to_vector<float>(),
            (std::vector<float>{0, 1, 6, 7, 2, 3, 8, 9, 4, 5, 10, 11}));
  EXPECT_EQ(nd::ones({4}).flatten().shape(), Shape({4, 1}));
  EXPECT_EQ(nd::scalar(3.0).flatten().shape(), Shape({1, 1}));
  EXPECT_EQ(nd::zeros({0, 3}).reshape({0, 3, 1}).flatten().shape(), Shape({0, 3}));
}

TEST(NDArray, ShapeErrorsAreThrownAtTheCallAndNameTheOp) {
  auto a = nd::ones({2, 3}), b = nd::ones({4, 3});
  try {
    auto c = a + b;
    FAIL() << "expected a broadcast error";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::kShapeMismatch);
    const std::string msg = e.what();
    EXPECT_NE(msg.find("Add"), std::string::npos) << msg;
    EXPECT_NE(msg.find("(2, 3)"), std::string::npos) << msg;
    EXPECT_NE(msg.find("(4, 3)"), std::string::npos) << msg;
  }
  EXPECT_THROW(nd::dot(nd::ones({2, 3}), nd::ones({2, 3})), Error);
  EXPECT_THROW(nd::invoke1("Relu2", {a}), Error);
}

TEST(NDArray, ErrorsInsideAsyncOpsSurfaceAtTheWrittenArray) {
  auto a = nd::array<int32_t>({1, 2, 3}, {3});
  auto zero = nd::array<int32_t>({1, 0, 1}, {3});
  auto q = nd::divide(a, zero);  // integer division by zero fails while running
  auto r = q + q;                // depends on the failed result: does not run
  try {
    q.wait_to_read();
    FAIL() << "expected the division error";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("Div"), std::string::npos) << e.what();
  }
  EXPECT_THROW(r.to_vector<int32_t>(), Error);
  EXPECT_THROW(nd::waitall(), Error);
  // The engine keeps working.
  auto ok = nd::ones({2}) + 1;
  EXPECT_EQ(ok.to_vector<float>(), (std::vector<float>{2, 2}));
  EXPECT_NO_THROW(nd::waitall());
}

TEST(NDArray, ConcurrentCallersGetSequentialResults) {
  auto acc = nd::zeros({16});
  std::vector<std::thread> threads;
  std::vector<NDArray> results(8);
  for (int t = 0; t < 8; ++t) {
    threads.emplace_back([&, t] {
      NDArray x = nd::full({16}, t);
      for (int k = 0; k < 50; ++k) x = x + 1;
      results[static_cast<size_t>(t)] = x;
    });
  }
  for (auto& th : threads) th.join();
  for (int t = 0; t < 8; ++t)
    for (float v : results[static_cast<size_t>(t)].to_vector<float>()) ASSERT_EQ(v, t + 50);
}

TEST(NDArray, DtypesAndCasting) {
  auto x = nd::array<float>({1.5f, -2.5f, 3.0f}, {3});
  EXPECT_EQ(x.astype(DType::kInt32).to_vector<int32_t>(), (std::vector<int32_t>{1, -2, 3}));
  auto h = x.astype(DType::kFloat16);
  EXPECT_EQ(h.dtype(), DType::kFloat16);
  EXPECT_EQ(h.astype(DType::kFloat32).to_vector<float>(), x.to_vector<float>());
  EXPECT_THROW(x.to_vector<double>(), Error);
  EXPECT_EQ(nd::arange(0, 5).to_vector<float>(), (std::vector<float>{0, 1, 2, 3, 4}));
}

}  // namespace
}  // namespace kiln
