// Profiles a few NDArray ops: writes profile.json (open it in https://ui.perfetto.dev or
// chrome://tracing) and prints the time spent per op.
#include <iostream>

#include <kiln/kiln.hpp>
#include <kiln/profiler.hpp>

int main() {
  namespace profiler = kiln::profiler;
  profiler::set_config({.filename = "profile.json", .aggregate_stats = true, .profile_memory = true});
  profiler::set_state(profiler::State::kRun);
  {
    profiler::Scope step("step");  // a user span around the whole loop
    auto x = kiln::nd::ones({256, 256});
    for (int i = 0; i < 5; ++i) {
      auto y = kiln::nd::dot(x, x);           // MatMul
      x = kiln::nd::relu(y - 255.0) / 256.0;  // Sub, Relu, Div
    }
    profiler::mark("loop pushed");  // an instant marker: every op above is queued, not yet run
    x.wait_to_read();
  }
  profiler::set_state(profiler::State::kStop);
  profiler::dump();
  std::cout << "wrote profile.json\n" << profiler::dumps();
  return 0;
}
