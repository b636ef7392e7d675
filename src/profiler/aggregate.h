// Aggregate statistics of duration events (count, total, min, max per name), the data behind
// profiler::dumps().
#pragma once

#include <cstdint>
#include <limits>
#include <map>
#include <set>
#include <string>
#include <string_view>

namespace kiln::profiler {

struct DurationStat {
  int64_t count = 0;
  int64_t total_ns = 0;
  int64_t min_ns = std::numeric_limits<int64_t>::max();
  int64_t max_ns = 0;

  void add(int64_t dur_ns);
  void merge(const DurationStat& other);
};

class Aggregate {
 public:
  // `op_type` names the op's type when `name` is a node's name; empty when they are the same.
  void add(std::string_view category, std::string_view name, std::string_view op_type, int64_t dur_ns);
  void merge(const Aggregate& other);
  bool empty() const { return by_name_.empty(); }

  // Per category, a table of rows sorted by total time; a category whose events named nodes
  // gets a table per op type and one per node name.
  std::string table() const;

 private:
  // category -> name -> stat. std::less<> lets string_views look up without a copy.
  using Table = std::map<std::string, std::map<std::string, DurationStat, std::less<>>, std::less<>>;
  static void add_to(Table& table, std::string_view category, std::string_view name, int64_t dur_ns);

  Table by_name_, by_type_;
  std::set<std::string, std::less<>> categories_with_nodes_;
};

}  // namespace kiln::profiler
