// Learning-rate schedules: MXNet's FactorScheduler, MultiFactorScheduler, CosineScheduler and
// PolyScheduler with their warm-up, computed in closed form from num_update.
#include "kiln/nn/lr_scheduler.hpp"

#include <algorithm>
#include <cmath>
#include <numbers>

#include "kiln/error.hpp"

namespace kiln::nn {

LRScheduler::LRScheduler(const char* what, double base_lr, Warmup warmup)
    : base_lr_(base_lr), warmup_(warmup) {
  KILN_CHECK(std::isfinite(base_lr) && base_lr >= 0, ErrorCode::kInvalidArgument, what,
             ": base_lr must be finite and >= 0, got ", base_lr);
  KILN_CHECK(warmup.steps >= 0, ErrorCode::kInvalidArgument, what, ": warmup steps must be >= 0, got ",
             warmup.steps);
  KILN_CHECK(warmup.begin_lr >= 0 && warmup.begin_lr <= base_lr, ErrorCode::kInvalidArgument, what,
             ": the warm-up's begin_lr must be in [0, base_lr = ", base_lr, "], got ", warmup.begin_lr);
}

double LRScheduler::operator()(int64_t num_update) const {
  if (num_update >= warmup_.steps) return scheduled(num_update);
  if (warmup_.mode == WarmupMode::kConstant) return warmup_.begin_lr;
  return warmup_.begin_lr +
         (base_lr_ - warmup_.begin_lr) * static_cast<double>(num_update) / static_cast<double>(warmup_.steps);
}

FactorScheduler::FactorScheduler(int64_t step, double factor, double stop_factor_lr, double base_lr,
                                 Warmup warmup)
    : LRScheduler("FactorScheduler", base_lr, warmup),
      step_(step),
      factor_(factor),
      stop_factor_lr_(stop_factor_lr) {
  KILN_CHECK(step >= 1, ErrorCode::kInvalidArgument, "FactorScheduler: step must be >= 1, got ", step);
  KILN_CHECK(factor > 0 && factor <= 1, ErrorCode::kInvalidArgument,
             "FactorScheduler: factor must be in (0, 1] so that the rate decreases, got ", factor);
}

double FactorScheduler::scheduled(int64_t num_update) const {
  // MXNet multiplies by factor each time num_update passes another multiple of step, and once
  // below stop_factor_lr holds it there.
  const int64_t decays = num_update > 0 ? (num_update - 1) / step_ : 0;
  if (decays == 0) return base_lr();
  return std::max(base_lr() * std::pow(factor_, static_cast<double>(decays)), stop_factor_lr_);
}

MultiFactorScheduler::MultiFactorScheduler(std::vector<int64_t> steps, double factor, double base_lr,
                                           Warmup warmup)
    : LRScheduler("MultiFactorScheduler", base_lr, warmup), steps_(std::move(steps)), factor_(factor) {
  KILN_CHECK(!steps_.empty(), ErrorCode::kInvalidArgument,
             "MultiFactorScheduler: expected at least one step");
  for (size_t i = 0; i < steps_.size(); ++i) {
    KILN_CHECK(steps_[i] >= 1, ErrorCode::kInvalidArgument, "MultiFactorScheduler: step ", i,
               " must be >= 1, got ", steps_[i]);
    KILN_CHECK(i == 0 || steps_[i] > steps_[i - 1], ErrorCode::kInvalidArgument,
               "MultiFactorScheduler: steps must increase, step ", i, " is ", steps_[i], " after ",
               steps_[i - 1]);
  }
  KILN_CHECK(factor > 0 && factor <= 1, ErrorCode::kInvalidArgument,
             "MultiFactorScheduler: factor must be in (0, 1] so that the rate decreases, got ", factor);
}

double MultiFactorScheduler::scheduled(int64_t num_update) const {
  const auto passed = std::lower_bound(steps_.begin(), steps_.end(), num_update) - steps_.begin();
  return base_lr() * std::pow(factor_, static_cast<double>(passed));
}

namespace {

// max_update must leave at least one update after the warm-up (the decay divides by the rest).
void check_max_update(const char* what, int64_t max_update, const Warmup& warmup) {
  KILN_CHECK(max_update >= 1, ErrorCode::kInvalidArgument, what, ": max_update must be >= 1, got ",
             max_update);
  KILN_CHECK(max_update > warmup.steps, ErrorCode::kInvalidArgument, what, ": max_update (", max_update,
             ") must be larger than the warm-up steps (", warmup.steps, ")");
}

}  // namespace

CosineScheduler::CosineScheduler(int64_t max_update, double base_lr, double final_lr, Warmup warmup)
    : LRScheduler("CosineScheduler", base_lr, warmup), max_update_(max_update), final_lr_(final_lr) {
  check_max_update("CosineScheduler", max_update, warmup);
  KILN_CHECK(std::isfinite(final_lr) && final_lr >= 0, ErrorCode::kInvalidArgument,
             "CosineScheduler: final_lr must be finite and >= 0, got ", final_lr);
}

double CosineScheduler::scheduled(int64_t num_update) const {
  if (num_update > max_update_) return final_lr_;
  const double progress =
      static_cast<double>(num_update - warmup().steps) / static_cast<double>(max_update_ - warmup().steps);
  return final_lr_ + (base_lr() - final_lr_) * (1 + std::cos(std::numbers::pi * progress)) / 2;
}

PolyScheduler::PolyScheduler(int64_t max_update, double base_lr, double power, double final_lr, Warmup warmup)
    : LRScheduler("PolyScheduler", base_lr, warmup),
      max_update_(max_update),
      power_(power),
      final_lr_(final_lr) {
  check_max_update("PolyScheduler", max_update, warmup);
  KILN_CHECK(std::isfinite(power) && power > 0, ErrorCode::kInvalidArgument,
             "PolyScheduler: power must be finite and > 0, got ", power);
  KILN_CHECK(std::isfinite(final_lr) && final_lr >= 0, ErrorCode::kInvalidArgument,
             "PolyScheduler: final_lr must be finite and >= 0, got ", final_lr);
}

double PolyScheduler::scheduled(int64_t num_update) const {
  if (num_update > max_update_) return final_lr_;
  const double progress =
      static_cast<double>(num_update - warmup().steps) / static_cast<double>(max_update_ - warmup().steps);
  return final_lr_ + (base_lr() - final_lr_) * std::pow(1 - progress, power_);
}

}  // namespace kiln::nn
