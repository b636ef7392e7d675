// Learning-rate schedules (MXNet's mx.lr_scheduler): the learning rate as a function of the
// number of updates done so far. Every schedule takes an optional warm-up (MXNet's
// warmup_steps, warmup_begin_lr, warmup_mode) that runs before it: for num_update < steps the
// rate goes from begin_lr linearly (or stays at begin_lr, mode kConstant) towards base_lr.
//
// MXNet's schedules are stateful and expect num_update never to decrease; these compute the same
// values from num_update alone, so they are immutable, thread-safe and may be asked in any order.
#pragma once

#include <cstdint>
#include <vector>

namespace kiln::nn {

enum class WarmupMode { kLinear, kConstant };

struct Warmup {
  int64_t steps = 0;
  double begin_lr = 0;
  WarmupMode mode = WarmupMode::kLinear;
};

class LRScheduler {
 public:
  virtual ~LRScheduler() = default;
  // The learning rate for update number `num_update` (the first update is number 1).
  double operator()(int64_t num_update) const;
  double base_lr() const { return base_lr_; }
  const Warmup& warmup() const { return warmup_; }

 protected:
  // Throws kiln::Error naming `what` unless base_lr >= begin_lr >= 0 and steps >= 0.
  LRScheduler(const char* what, double base_lr, Warmup warmup);
  // The rate after the warm-up.
  virtual double scheduled(int64_t num_update) const = 0;

 private:
  double base_lr_;
  Warmup warmup_;
};

// base_lr * factor^k after k = floor((num_update - 1) / step) completed steps, never below
// stop_factor_lr.
class FactorScheduler : public LRScheduler {
 public:
  explicit FactorScheduler(int64_t step, double factor = 1, double stop_factor_lr = 1e-8,
                           double base_lr = 0.01, Warmup warmup = {});

 protected:
  double scheduled(int64_t num_update) const override;

 private:
  int64_t step_;
  double factor_, stop_factor_lr_;
};

// base_lr * factor^k where k is the number of steps s (increasing) with num_update > s.
class MultiFactorScheduler : public LRScheduler {
 public:
  explicit MultiFactorScheduler(std::vector<int64_t> steps, double factor = 1, double base_lr = 0.01,
                                Warmup warmup = {});

 protected:
  double scheduled(int64_t num_update) const override;

 private:
  std::vector<int64_t> steps_;
  double factor_;
};

// final_lr + (base_lr - final_lr) * (1 + cos(pi * (num_update - warmup) / (max_update - warmup))) / 2
// up to max_update, final_lr after it.
class CosineScheduler : public LRScheduler {
 public:
  explicit CosineScheduler(int64_t max_update, double base_lr = 0.01, double final_lr = 0,
                           Warmup warmup = {});

 protected:
  double scheduled(int64_t num_update) const override;

 private:
  int64_t max_update_;
  double final_lr_;
};

// final_lr + (base_lr - final_lr) * (1 - (num_update - warmup) / (max_update - warmup))^power up to
// max_update, final_lr after it.
class PolyScheduler : public LRScheduler {
 public:
  explicit PolyScheduler(int64_t max_update, double base_lr = 0.01, double power = 2, double final_lr = 0,
                         Warmup warmup = {});

 protected:
  double scheduled(int64_t num_update) const override;

 private:
  int64_t max_update_;
  double power_, final_lr_;
};

}  // namespace kiln::nn
