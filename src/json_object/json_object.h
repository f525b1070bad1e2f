// Builds the objects of vdev's JSON reports in linear time.
//
// nlohmann::ordered_json keeps insertion order (the reports' key order is part of their format) in a
// vector and finds a key by scanning it, so `object[key] = value` is linear per insertion and an
// object of n members costs O(n²): 100,000 bindings in `vdev lower --json` took 6.9 s. JsonObject
// indexes the keys in a hash set of positions and hands the members over in one move; a repeated
// key replaces the earlier value in its place, as `object[key] = value` does. Not copyable (the
// index points at the members). Header-only: the libraries that
// write reports (planner, memory) link nlohmann_json themselves.
//
// Example:
//   JsonObject<nlohmann::ordered_json> tensors;
//   tensors.Set("x", 16);
//   tensors.Set("y", 32);
//   nlohmann::ordered_json j = std::move(tensors).Take();   // {"x": 16, "y": 32}
#ifndef VDEV_SRC_JSON_OBJECT_JSON_OBJECT_H_
#define VDEV_SRC_JSON_OBJECT_JSON_OBJECT_H_

#include <cassert>
#include <string>
#include <utility>
#include <vector>

#include "absl/container/flat_hash_set.h"
#include "absl/hash/hash.h"
#include "absl/strings/string_view.h"

namespace vdev::ir_internal {

template <typename Json>
class JsonObject {
 public:
  JsonObject() = default;
  JsonObject(const JsonObject&) = delete;
  JsonObject& operator=(const JsonObject&) = delete;

  void Reserve(size_t n) {
    Members().reserve(n);
    index_.reserve(n);
  }
  void Set(std::string key, Json value) {
    assert(index_.size() == Members().size());
    auto it = index_.find(absl::string_view(key));
    if (it != index_.end()) {
      Members()[*it].second = std::move(value);
      return;
    }
    Members().emplace_back(std::move(key), std::move(value));
    index_.insert(Members().size() - 1);
  }
  // For an object whose keys the caller knows are distinct (the bindings of a function: the parser
  // refuses a duplicate name): no index at all. An object takes Append or Set, not both.
  void Append(std::string key, Json value) {
    assert(index_.empty());
    Members().emplace_back(std::move(key), std::move(value));
  }
  size_t size() const { return Members().size(); }
  Json Take() && { return Json(std::move(object_)); }

 private:
  using Object = typename Json::object_t;
  using Members_ = std::vector<typename Object::value_type>;
  // ordered_json's object is a std::vector of (key, value) pairs underneath; its own emplace
  // searches the keys first, the vector's does not.
  Members_& Members() { return static_cast<Members_&>(object_); }
  const Members_& Members() const { return static_cast<const Members_&>(object_); }

  // The index holds positions and hashes the keys where they are stored, so keys are not copied.
  struct KeyHash {
    using is_transparent = void;
    const Members_* members;
    size_t operator()(size_t i) const { return (*this)(absl::string_view((*members)[i].first)); }
    size_t operator()(absl::string_view key) const { return absl::Hash<absl::string_view>()(key); }
  };
  struct KeyEq {
    using is_transparent = void;
    const Members_* members;
    absl::string_view Key(size_t i) const { return (*members)[i].first; }
    absl::string_view Key(absl::string_view key) const { return key; }
    template <typename A, typename B>
    bool operator()(const A& a, const B& b) const {
      return Key(a) == Key(b);
    }
  };

  Object object_;
  absl::flat_hash_set<size_t, KeyHash, KeyEq> index_{0, KeyHash{&Members()}, KeyEq{&Members()}};
};

// A report as text: indented by 2, one final newline. The IR text can carry bytes that are not UTF-8
// (inside a target string or a string attribute, which reports echo in devices and messages);
// nlohmann's dump throws on them, so they print as U+FFFD instead.
template <typename Json>
std::string ReportText(const Json& report) {
  return report.dump(2, ' ', false, Json::error_handler_t::replace) + "\n";
}

}  // namespace vdev::ir_internal

#endif  // VDEV_SRC_JSON_OBJECT_JSON_OBJECT_H_
