// The NDArray basics: async matrix product, broadcasting, and an in-place update.
#include <iostream>

#include <kiln/kiln.hpp>

int main() {
  auto dev = kiln::num_gpus() > 0 ? kiln::gpu(0) : kiln::cpu();
  auto a = kiln::nd::ones({512, 512}, dev), b = kiln::nd::ones({512, 512}, dev);
  auto r = kiln::nd::dot(a, b);                              // async
  std::vector<float> v = r.to_vector<float>();               // syncs; every element is 512
  auto s = kiln::nd::ones({3, 1}) + kiln::nd::ones({1, 4});  // shape (3, 4)
  auto d = kiln::nd::ones({50, 50});
  const auto before = kiln::allocator_stats(kiln::cpu()).num_allocations;
  d += 2;  // in place, no new allocation
  d.wait_to_read();
  const auto allocated = kiln::allocator_stats(kiln::cpu()).num_allocations - before;

  std::cout << "device: " << dev << "\n";
  std::cout << "dot: shape " << r.shape() << ", r[0] = " << v.front() << ", r[last] = " << v.back() << "\n";
  std::cout << "broadcast sum: shape " << s.shape() << "\n" << s << "\n";
  std::cout << "d += 2: shape " << d.shape() << ", d[0] = " << d.to_vector<float>().front()
            << ", allocations during +=: " << allocated << "\n";
  return 0;
}
