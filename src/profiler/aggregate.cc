// Aggregate statistics and their table, laid out like MXNet's profiler.dumps().
#include "profiler/aggregate.h"

#include <algorithm>
#include <cstdio>
#include <utility>
#include <vector>

namespace kiln::profiler {

void DurationStat::add(int64_t dur_ns) {
  ++count;
  total_ns += dur_ns;
  min_ns = std::min(min_ns, dur_ns);
  max_ns = std::max(max_ns, dur_ns);
}

void DurationStat::merge(const DurationStat& other) {
  count += other.count;
  total_ns += other.total_ns;
  min_ns = std::min(min_ns, other.min_ns);
  max_ns = std::max(max_ns, other.max_ns);
}

void Aggregate::add_to(Table& table, std::string_view category, std::string_view name, int64_t dur_ns) {
  auto cat = table.find(category);
  if (cat == table.end()) cat = table.emplace(std::string(category), Table::mapped_type{}).first;
  auto stat = cat->second.find(name);
  if (stat == cat->second.end()) stat = cat->second.emplace(std::string(name), DurationStat{}).first;
  stat->second.add(dur_ns);
}

void Aggregate::add(std::string_view category, std::string_view name, std::string_view op_type,
                    int64_t dur_ns) {
  add_to(by_name_, category, name, dur_ns);
  const bool node = !op_type.empty() && op_type != name;
  add_to(by_type_, category, node ? op_type : name, dur_ns);
  if (node && !categories_with_nodes_.contains(category)) categories_with_nodes_.emplace(category);
}

void Aggregate::merge(const Aggregate& other) {
  const std::pair<Table*, const Table*> pairs[] = {{&by_name_, &other.by_name_},
                                                   {&by_type_, &other.by_type_}};
  for (auto [mine, theirs] : pairs)
    for (const auto& [category, stats] : *theirs)
      for (const auto& [name, stat] : stats) (*mine)[category][name].merge(stat);
  categories_with_nodes_.insert(other.categories_with_nodes_.begin(), other.categories_with_nodes_.end());
}

namespace {

double ms(int64_t ns) {
  return static_cast<double>(ns) / 1e6;
}

void append_table(std::string& out, const std::string& title,
                  const std::map<std::string, DurationStat, std::less<>>& stats) {
  std::vector<std::pair<std::string, DurationStat>> rows(stats.begin(), stats.end());
  std::stable_sort(rows.begin(), rows.end(),
                   [](const auto& a, const auto& b) { return a.second.total_ns > b.second.total_ns; });
  int64_t category_ns = 0;
  size_t name_width = 4;
  for (const auto& [name, stat] : rows) {
    category_ns += stat.total_ns;
    name_width = std::max(name_width, name.size());
  }
  const int width = static_cast<int>(name_width);
  char line[512];
  out += title + "\n" + std::string(title.size(), '=') + "\n";
  std::snprintf(line, sizeof line, "%-*s %10s %14s %14s %14s %14s %10s\n", width, "Name", "Count",
                "Total (ms)", "Mean (ms)", "Min (ms)", "Max (ms)", "Share (%)");
  out += line;
  std::snprintf(line, sizeof line, "%-*s %10s %14s %14s %14s %14s %10s\n", width, "----", "-----",
                "----------", "---------", "--------", "--------", "---------");
  out += line;
  for (const auto& [name, stat] : rows) {
    const double share =
        category_ns > 0 ? 100.0 * static_cast<double>(stat.total_ns) / static_cast<double>(category_ns) : 0;
    out += name;  // names may be longer than the buffer; they go in whole
    std::snprintf(line, sizeof line, "%*s %10lld %14.4f %14.4f %14.4f %14.4f %10.2f\n",
                  static_cast<int>(name_width - name.size()), "", static_cast<long long>(stat.count),
                  ms(stat.total_ns), ms(stat.total_ns) / static_cast<double>(stat.count), ms(stat.min_ns),
                  ms(stat.max_ns), share);
    out += line;
  }
  out += "\n";
}

}  // namespace

std::string Aggregate::table() const {
  std::string out = "Profile Statistics (times in ms; share of the category's total)\n\n";
  if (by_name_.empty())
    out += "No events recorded (statistics are kept when Config::aggregate_stats is set).\n";
  for (const auto& [category, stats] : by_name_) {
    if (categories_with_nodes_.contains(category)) {
      append_table(out, category + " (by op type)", by_type_.find(category)->second);
      append_table(out, category + " (by name)", stats);
    } else {
      append_table(out, category, stats);
    }
  }
  return out;
}

}  // namespace kiln::profiler
