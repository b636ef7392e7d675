// SubgraphProgram: a subgraph compiled per input signature.
#include "runtime/subgraph_program.h"

#include "graph/pass_manager.h"
#include "runtime/plan.h"

namespace kiln::runtime {

SubgraphProgram::SubgraphProgram(const graph::Graph& subgraph, const ProgramOptions& options,
                                 std::string where)
    : graph_(subgraph.clone()),
      options_(options),
      where_(std::move(where)),
      programs_(options.max_cached_plans) {
  // A body's declared input shapes are often those of the first iteration only; each call's own
  // shapes are what the program is bound to. Element types stay checked.
  // A sequence or optional input keeps its declaration: it says what the value may be.
  for (graph::Value* v : graph_.inputs()) {
    declared_.push_back(v->info);
    if (!v->is_constant() && v->info && v->info->is_plain()) v->info.reset();
  }
}

std::vector<Tensor> SubgraphProgram::run(const std::vector<Tensor>& inputs) const {
  const std::vector<graph::Value*>& declared = graph_.inputs();
  KILN_CHECK(inputs.size() == declared.size(), ErrorCode::kInternal, where_, ": given ", inputs.size(),
             " inputs, it takes ", declared.size());
  std::string key;
  for (size_t k = 0; k < inputs.size(); ++k) {
    const Tensor& t = inputs[k];
    const std::optional<ops::TensorInfo>& expected = declared_[k];
    KILN_CHECK(t.defined() || (expected && expected->optional), ErrorCode::kInvalidArgument, where_,
               ": input '", declared[k]->name, "' is not given a value");
    KILN_CHECK(!t.defined() || !expected || expected->dtype == t.dtype(), ErrorCode::kTypeMismatch, where_,
               ": input '", declared[k]->name, "': expected ", ops::describe_info(*expected), ", got ",
               ops::describe_info(ops::info_of(t)));
    append_signature(key, t, /*with_dtype=*/true);
    key += ';';
  }
  const auto compile = [&]() -> std::shared_ptr<const Program> {
    InputBinding binding;
    for (size_t k = 0; k < inputs.size(); ++k)
      if (!declared[k]->is_constant()) bind_given(binding, declared[k]->name, inputs[k], /*with_dtype=*/true);
    binding.allow_unknown = true;
    graph::Graph bound = bind_inputs(graph_, binding);
    graph::PassManager::for_level(options_.level).run(bound);
    return make_program(std::move(bound), options_, /*sized_by_values=*/true);
  };
  try {
    return programs_.run(key, compile, inputs);
  } catch (const Error& e) {
    const std::string message = e.what();
    if (message.rfind(where_, 0) == 0) throw;
    throw Error(e.code(), where_ + ": " + message);
  }
}

}  // namespace kiln::runtime
