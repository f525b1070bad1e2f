// The JSON report of `vdev lower --json`; see vdev/lower_memory.h.
#include <map>
#include <string>

#include "nlohmann/json.hpp"
#include "vdev/lower_memory.h"

namespace vdev {
namespace {

using Json = nlohmann::ordered_json;

std::string Local(const ir::Module& m, ir::BindingId b) { return std::string(m.Name(m.bindings[b].name)); }

Json FunctionReport(const ir::Module& m, const FunctionMemory& fm) {
  Json pools = Json::object();
  for (const PoolSize& p : fm.plan.pools) {
    pools[p.pool.ToString()] = {{"bytes", p.bytes}, {"storages", p.storages}};
  }
  Json storages = Json::object();
  for (size_t s = 0; s < fm.plan.storages.size(); ++s) {
    const Storage& storage = fm.plan.storages[s];
    const ir::BindingId b = fm.storage_bindings[s];
    storages[Local(m, b)] = {{"pool", storage.pool.ToString()},
                             {"allocator", std::string(m.OpName(m.bindings[b].expr))},
                             {"bytes", storage.bytes},
                             {"pool_offset", storage.pool_offset}};
  }
  Json tensors = Json::object();
  for (size_t k = 0; k < fm.tensors.size(); ++k) {
    const PlannedTensor& t = fm.tensors[k];
    const TensorLifetime& life = fm.lifetimes[k];
    tensors[Local(m, t.binding)] = {{"storage", Local(m, fm.storage_bindings[t.storage])},
                                    {"offset", t.offset},
                                    {"bytes", t.bytes},
                                    {"live", {life.first_def, life.last_use}}};
  }
  Json allreduces = Json::array();
  for (const AllReduceInfo& a : fm.allreduces) {
    Json entry = {{"binding", Local(m, a.binding)},
                  {"op", a.op},
                  {"strategy", std::string(AllReduceStrategyName(a.strategy))}};
    if (a.ipc) {
      entry["input"] = Local(m, a.input_producer);
    } else {
      entry["reason"] = a.reason;
    }
    allreduces.push_back(std::move(entry));
  }
  Json unplanned = Json::array();
  for (const UnplannedValue& u : fm.unplanned) unplanned.push_back({{"binding", Local(m, u.binding)}, {"reason", u.reason}});
  return {{"pools", pools},           {"storages", storages},     {"tensors", tensors},
          {"allreduces", allreduces}, {"unplanned", unplanned},   {"tensor_bytes", fm.plan.tensor_bytes},
          {"pool_bytes", fm.plan.pool_bytes}};
}

}  // namespace

std::string MemoryReportJson(const ir::Module& module, const MemoryPlan& plan) {
  Json functions = Json::object();
  std::map<PoolKey, int64_t> totals;
  for (const FunctionMemory& fm : plan.functions) {
    functions[std::string(module.Name(module.functions[fm.func].name))] = FunctionReport(module, fm);
    for (const PoolSize& p : fm.plan.pools) totals[p.pool] += p.bytes;
  }
  Json pools = Json::object();
  for (const auto& [pool, bytes] : totals) pools[pool.ToString()] = bytes;
  Json report = {{"functions", functions},
                 {"pools", pools},
                 {"tensor_bytes", plan.tensor_bytes},
                 {"pool_bytes", plan.pool_bytes}};
  return report.dump(2) + "\n";
}

}  // namespace vdev
