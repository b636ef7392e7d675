#include <iostream>

#include <kiln/kiln.hpp>

int main() {
  auto s = kiln::nd::ones({3, 1}) + kiln::nd::ones({1, 4});
  const auto v = s.to_vector<float>();
  if (s.shape() != kiln::Shape({3, 4}) || v.size() != 12 || v[0] != 2.0f) {
    std::cerr << "unexpected result: " << s << "\n";
    return 1;
  }
  std::cout << "consumer ok: " << s.shape() << " " << kiln::kVersion << "\n";
  return 0;
}
