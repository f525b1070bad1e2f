// Scoping of local names, shared by the parser and the verifier.
//
// A name is visible from its definition to the end of its block (a function's parameters: to the
// end of the function). It is unique within its function, `if` arms included (so a function's
// bindings have distinct names, as plan-json.md reports them by name), and may not shadow a name
// still visible from an enclosing function. Sibling functions may reuse names.
#ifndef VDEV_SRC_PLANNER_SCOPE_H_
#define VDEV_SRC_PLANNER_SCOPE_H_

#include <vector>

#include "vdev/ir/ir.h"
#include "vdev/support/huge_pages.h"

namespace vdev::ir::internal {

class Scopes {
 public:
  void OpenFunction(FuncId f) { funcs_.push_back({f, visible_log_.size(), defined_log_.size()}); }
  void CloseFunction() {
    FuncScope scope = funcs_.back();
    funcs_.pop_back();
    CloseBlock(scope.visible_mark);
    for (size_t i = defined_log_.size(); i > scope.defined_mark; --i) {
      const DefinedUndo& u = defined_log_[i - 1];
      names_[u.symbol].func = u.func;
      names_[u.symbol].last = u.last;
    }
    defined_log_.resize(scope.defined_mark);
  }
  // A block opens at Mark() and closes with CloseBlock(mark).
  size_t Mark() const { return visible_log_.size(); }
  void CloseBlock(size_t mark) {
    for (size_t i = mark; i < visible_log_.size(); ++i) names_[visible_log_[i]].visible = kNoValue;
    visible_log_.resize(mark);
  }
  // Defines `s` in the innermost function. On a clash returns the earlier definition (valid).
  ValueRef Define(Symbol s, ValueRef v) {
    NameState& st = State(s);
    FuncId cur = funcs_.back().func;
    if (st.visible != kNoValue) return Unpack(st.visible);
    if (st.func == cur) return Unpack(st.last);
    // A name never defined before needs no undo: FuncIds are never reused, so leaving `func` at a
    // closed function is as good as kNoFunc, and a million fresh names then log nothing.
    if (st.func != kNoFunc) defined_log_.push_back({s, st.func, st.last});
    st.visible = Pack(v);
    st.func = cur;
    st.last = st.visible;
    visible_log_.push_back(s);
    return ValueRef();
  }
  // What `s` names here; invalid when nothing.
  ValueRef Lookup(Symbol s) const { return s < names_.size() ? Unpack(names_[s].visible) : ValueRef(); }
  // Sizes the per-symbol table (and the log of visible names) for about `n` symbols up front.
  void Reserve(size_t n) {
    if (names_.size() < n) {
      names_.reserve(n);
      AdviseHugePages(names_);
      names_.resize(n);
    }
    visible_log_.reserve(n);
    AdviseHugePages(visible_log_);
  }

 private:
  struct FuncScope {
    FuncId func;
    size_t visible_mark;
    size_t defined_mark;
  };
  // Values packed in 32 bits (bit 31: binding, else parameter) keep the per-symbol table small:
  // it has an entry per symbol, a million for a million-binding program.
  static constexpr uint32_t kNoValue = UINT32_MAX;
  static uint32_t Pack(ValueRef v) { return v.valid() ? (v.is_binding() ? v.index | 0x80000000u : v.index) : kNoValue; }
  static ValueRef Unpack(uint32_t p) {
    if (p == kNoValue) return ValueRef();
    return p & 0x80000000u ? ValueRef::Binding(p & 0x7FFFFFFFu) : ValueRef::Param(p);
  }
  struct NameState {
    uint32_t visible = kNoValue;
    FuncId func = kNoFunc;
    uint32_t last = kNoValue;
  };
  struct DefinedUndo {
    Symbol symbol;
    FuncId func;
    uint32_t last;
  };
  NameState& State(Symbol s) {
    if (s >= names_.size()) names_.resize(std::max<size_t>(s + 1, names_.size() * 2));
    return names_[s];
  }

  std::vector<FuncScope> funcs_;
  std::vector<NameState> names_;
  std::vector<Symbol> visible_log_;
  std::vector<DefinedUndo> defined_log_;
};

}  // namespace vdev::ir::internal

#endif  // VDEV_SRC_PLANNER_SCOPE_H_
