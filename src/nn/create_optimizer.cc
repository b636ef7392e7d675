// create_optimizer: an optimizer by name with MXNet-named options given as an AttrMap. Every
// option is checked: unknown names and values of the wrong type are errors, not ignored.
#include <algorithm>
#include <cctype>
#include <functional>
#include <set>

#include "kiln/nn/optimizer.hpp"

namespace kiln::nn {

namespace {

// Reads options by name, remembering which were read so that the rest can be reported.
class OptionReader {
 public:
  OptionReader(std::string optimizer, const AttrMap& options)
      : optimizer_(std::move(optimizer)), options_(options) {}

  void read(const char* key, double& out) {
    if (const AttrValue* v = find(key))
      out = std::get<double>(v->coerced_to(AttrType::kFloat, what(key)).variant());
  }
  void read(const char* key, bool& out) {
    if (const AttrValue* v = find(key))
      out = std::get<int64_t>(v->coerced_to(AttrType::kInt, what(key)).variant()) != 0;
  }
  void read(const char* key, int64_t& out) {
    if (const AttrValue* v = find(key))
      out = std::get<int64_t>(v->coerced_to(AttrType::kInt, what(key)).variant());
  }
  bool has(const char* key) const { return options_.count(key) != 0; }

  void read_common(OptimizerOptions& o, std::shared_ptr<const LRScheduler> schedule) {
    KILN_CHECK(!schedule || !has("learning_rate"), ErrorCode::kInvalidArgument, optimizer_,
               " optimizer: give either learning_rate or a schedule (whose base_lr is the rate), not both");
    read("learning_rate", o.learning_rate);
    read("wd", o.wd);
    read("rescale_grad", o.rescale_grad);
    read("clip_gradient", o.clip_gradient);
    read("multi_precision", o.multi_precision);
    read("begin_num_update", o.begin_num_update);
    o.lr_scheduler = std::move(schedule);
  }

  // Throws when an option was given that this optimizer does not read.
  void check_all_read() const {
    for (const auto& [key, value] : options_) {
      if (read_.count(key)) continue;
      std::string known;
      for (const auto& k : read_attempts_) known += (known.empty() ? "" : ", ") + k;
      raise(ErrorCode::kInvalidArgument, optimizer_, " optimizer: unknown option '", key, "' (known: ", known,
            ")");
    }
  }

 private:
  const AttrValue* find(const char* key) {
    read_attempts_.insert(key);
    const auto it = options_.find(key);
    if (it == options_.end()) return nullptr;
    read_.insert(key);
    return &it->second;
  }
  std::string what(const char* key) const { return optimizer_ + " optimizer option '" + key + "'"; }

  std::string optimizer_;
  const AttrMap& options_;
  std::set<std::string> read_, read_attempts_;
};

using Factory = std::function<std::unique_ptr<Optimizer>(OptionReader&, std::shared_ptr<const LRScheduler>)>;

const std::map<std::string, Factory>& factories() {
  static const std::map<std::string, Factory> table = {
      {"sgd",
       [](OptionReader& r, std::shared_ptr<const LRScheduler> schedule) {
         SGDOptions o;
         r.read_common(o, std::move(schedule));
         r.read("momentum", o.momentum);
         r.check_all_read();
         return std::unique_ptr<Optimizer>(new SGD(o));
       }},
      {"nag",
       [](OptionReader& r, std::shared_ptr<const LRScheduler> schedule) {
         SGDOptions o;
         r.read_common(o, std::move(schedule));
         r.read("momentum", o.momentum);
         r.check_all_read();
         return std::unique_ptr<Optimizer>(new NAG(o));
       }},
      {"adam",
       [](OptionReader& r, std::shared_ptr<const LRScheduler> schedule) {
         AdamOptions o;
         r.read_common(o, std::move(schedule));
         r.read("beta1", o.beta1);
         r.read("beta2", o.beta2);
         r.read("epsilon", o.epsilon);
         r.check_all_read();
         return std::unique_ptr<Optimizer>(new Adam(o));
       }},
      {"adamw",
       [](OptionReader& r, std::shared_ptr<const LRScheduler> schedule) {
         AdamWOptions o;
         r.read_common(o, std::move(schedule));
         r.read("beta1", o.beta1);
         r.read("beta2", o.beta2);
         r.read("epsilon", o.epsilon);
         r.read("correct_bias", o.correct_bias);
         r.check_all_read();
         return std::unique_ptr<Optimizer>(new AdamW(o));
       }},
      {"rmsprop",
       [](OptionReader& r, std::shared_ptr<const LRScheduler> schedule) {
         RMSPropOptions o;
         r.read_common(o, std::move(schedule));
         r.read("gamma1", o.gamma1);
         r.read("gamma2", o.gamma2);
         r.read("epsilon", o.epsilon);
         r.read("centered", o.centered);
         r.read("clip_weights", o.clip_weights);
         r.check_all_read();
         return std::unique_ptr<Optimizer>(new RMSProp(o));
       }},
      {"adagrad",
       [](OptionReader& r, std::shared_ptr<const LRScheduler> schedule) {
         AdaGradOptions o;
         r.read_common(o, std::move(schedule));
         KILN_CHECK(!(r.has("eps") && r.has("epsilon")), ErrorCode::kInvalidArgument,
                    "adagrad optimizer: give eps or epsilon, not both");
         r.read("epsilon", o.epsilon);
         r.read("eps", o.epsilon);  // MXNet's name for it
         r.check_all_read();
         return std::unique_ptr<Optimizer>(new AdaGrad(o));
       }},
  };
  return table;
}

}  // namespace

std::unique_ptr<Optimizer> create_optimizer(const std::string& name, const AttrMap& options,
                                            std::shared_ptr<const LRScheduler> lr_scheduler) {
  std::string key = name;
  std::transform(key.begin(), key.end(), key.begin(), [](unsigned char c) { return std::tolower(c); });
  const auto& table = factories();
  const auto it = table.find(key);
  if (it == table.end()) {
    std::string known;
    for (const auto& [k, f] : table) known += (known.empty() ? "" : ", ") + k;
    raise(ErrorCode::kNotFound, "create_optimizer: unknown optimizer '", name, "' (known: ", known, ")");
  }
  OptionReader reader(key, options);
  return it->second(reader, std::move(lr_scheduler));
}

}  // namespace kiln::nn
