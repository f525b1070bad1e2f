// The module's interning tables: symbols, types, devices.
#include <string>

#include "absl/strings/ascii.h"
#include "absl/strings/str_cat.h"
#include "gtest/gtest.h"
#include "ir/ir_test_util.h"
#include "vdev/ir/builtin_ops.h"
#include "vdev/ir/ir.h"

namespace vdev::ir {
namespace {

TEST(SymbolTable, InternsEachSpellingOnce) {
  SymbolTable t;
  // Numeric suffixes share hash blocks; leading zeros and long names must stay distinct.
  const char* names[] = {"b1",
                         "b01",
                         "b001",
                         "b10",
                         "1",
                         "01",
                         "x",
                         "",
                         "a_very_long_name_17",
                         "a_very_long_name_18",
                         "nn.conv2d",
                         "b999999999999999999999"};
  std::vector<Symbol> ids;
  for (const char* n : names) ids.push_back(t.Intern(n));
  for (size_t i = 0; i < std::size(names); ++i) {
    EXPECT_EQ(t.Name(ids[i]), names[i]);
    EXPECT_EQ(t.Intern(names[i]), ids[i]);
    EXPECT_EQ(t.Find(names[i]), ids[i]);
    for (size_t j = 0; j < i; ++j) EXPECT_NE(ids[i], ids[j]) << names[i] << " " << names[j];
  }
  EXPECT_EQ(t.Find("b2"), kNoSymbol);
  EXPECT_EQ(t.size(), std::size(names));
  // Spellings of 255 bytes and more carry a 4-byte size; around the switch, sizes must survive.
  for (size_t n : {254, 255, 256, 70000}) {
    std::string long_name(n, 'z');
    Symbol s = t.Intern(long_name);
    EXPECT_EQ(t.Name(s), long_name);
    EXPECT_EQ(t.Find(long_name), s);
  }
}

TEST(SymbolTable, ManyNamesThroughTheCache) {
  SymbolTable t;
  constexpr int kNames = 200'000;
  for (int i = 0; i < kNames; ++i) ASSERT_EQ(t.Intern("v" + std::to_string(i)), static_cast<Symbol>(i));
  for (int i = kNames - 1; i >= 0; i -= 7) ASSERT_EQ(t.Find("v" + std::to_string(i)), static_cast<Symbol>(i));
  // Spellings stay valid after the table moves.
  SymbolTable moved = std::move(t);
  EXPECT_EQ(moved.Name(123), "v123");
  EXPECT_EQ(moved.Intern("v123"), 123u);
}

// Numbered names take a dense per-prefix path; a number far beyond its prefix's count is hashed
// instead, and must still be found (and not duplicated) once the dense range grows past it.
TEST(SymbolTable, SparseNumbersAndManyPrefixesStayUnique) {
  SymbolTable t;
  Symbol far = t.Intern("b5000");
  Symbol huge = t.Intern("b999999999");
  std::vector<Symbol> ids;
  for (int i = 0; i < 6000; ++i) ids.push_back(t.Intern("b" + std::to_string(i)));
  EXPECT_EQ(ids[5000], far);
  EXPECT_EQ(t.Find("b5000"), far);
  EXPECT_EQ(t.Find("b999999999"), huge);
  EXPECT_EQ(t.Find("b6000"), kNoSymbol);
  // More prefixes than families: the rest are hashed, consistently.
  std::vector<Symbol> prefixed;
  for (int p = 0; p < 40; ++p) prefixed.push_back(t.Intern("p" + std::to_string(p) + "x7"));
  for (int p = 0; p < 40; ++p) {
    EXPECT_EQ(t.Intern("p" + std::to_string(p) + "x7"), prefixed[p]);
    EXPECT_EQ(t.Find("p" + std::to_string(p) + "x7"), prefixed[p]);
    EXPECT_EQ(t.Name(prefixed[p]), "p" + std::to_string(p) + "x7");
  }
  EXPECT_EQ(t.size(), 2 + 6000 - 1 + 40u);
}

TEST(TypeTable, HashConsesStructurallyEqualTypes) {
  TypeTable t;
  TypeId a = t.Tensor(DType::kF32, std::vector<int64_t>{5, kDynamicDim});
  EXPECT_EQ(t.Tensor(DType::kF32, std::vector<int64_t>{5, kDynamicDim}), a);
  EXPECT_NE(t.Tensor(DType::kF16, std::vector<int64_t>{5, kDynamicDim}), a);
  TypeId tup = t.Tuple(std::vector<TypeId>{a, t.Storage()});
  TypeId fn = t.Func(std::vector<TypeId>{tup}, a);
  EXPECT_EQ(t.Func(std::vector<TypeId>{t.Tuple(std::vector<TypeId>{a, t.Storage()})}, a), fn);
  EXPECT_EQ(t.ToString(fn), "fn((f32[5,?], storage)) -> f32[5,?]");
  EXPECT_EQ(t.ToString(t.Tuple({})), "()");
  EXPECT_EQ(t.ToString(t.Func({}, t.Tensor(DType::kBool, {}))), "fn() -> bool[]");
  EXPECT_EQ(t.func_result(fn), a);
  EXPECT_EQ(t.func_params(fn).size(), 1u);
}

TEST(DeviceTable, InternsEqualDevicesOnce) {
  DeviceTable t;
  DeviceId a = t.Intern(*ParseVirtualDevice("cuda:0/global"));
  EXPECT_EQ(t.Intern(VirtualDevice::Make(DeviceType::kCUDA, 0, std::nullopt, "global").value()), a);
  EXPECT_NE(t.Intern(*ParseVirtualDevice("cuda:1/global")), a);
  EXPECT_EQ(t.Get(a).ToString(), "cuda:0/global");
}

// The parser reuses the device of a literal it has just read when the same bytes, and the one after
// them, come again; a literal that only starts like an earlier one is a device of its own.
TEST(DeviceTable, ParsedLiteralsThatStartAlikeStayDistinct) {
  const char* literals[] = {"cuda:0",  "cuda:0",  "cuda:0[cuda]", "cuda:0/global",
                            "cuda:01", "cuda:0 ", "cuda",         "cuda:0"};
  std::string text = "def @main(%a: f32[2]) {\n  %b0 = add(%a, %a)\n";
  for (size_t i = 0; i < std::size(literals); ++i)
    absl::StrAppend(&text, "  %b", i + 1, " = on_device(%b", i, ", ", literals[i], ")\n");
  absl::StrAppend(&text, "  return %b", std::size(literals), "\n}\n");
  std::optional<Module> m = testing::ParseAndVerify(text);
  ASSERT_TRUE(m.has_value());
  for (size_t i = 0; i < std::size(literals); ++i) {
    const Operand& device = m->Args(m->bindings[i + 1].expr)[1];
    EXPECT_EQ(m->Device(device.index), *ParseVirtualDevice(absl::StripTrailingAsciiWhitespace(literals[i])))
        << literals[i];
  }
  EXPECT_EQ(m->devices.size(), 5u);  // cuda:0, cuda:0[cuda], cuda:0/global, cuda:01 (cuda:1), cuda
}

TEST(Module, CloneIsDeepAndKeepsIds) {
  std::optional<Module> m = testing::ParseAndVerify(testing::kSpecExample);
  ASSERT_TRUE(m.has_value());
  Module copy = m->Clone();
  EXPECT_EQ(PrintModule(copy), PrintModule(*m));
  EXPECT_EQ(copy.symbols.size(), m->symbols.size());
  EXPECT_EQ(copy.FindGlobal("main"), m->FindGlobal("main"));
  // Editing the copy leaves the original alone.
  Binding& annotated = copy.bindings[1];
  annotated.expr =
      MakeDeviceCopy(copy, copy.Args(annotated.expr)[0], *ParseVirtualDevice("cpu:0"), *ParseVirtualDevice("cuda:0"));
  copy.symbols.Intern("only_in_the_copy");
  EXPECT_EQ(m->OpName(m->bindings[1].expr), "on_device");
  EXPECT_EQ(copy.OpName(copy.bindings[1].expr), "device_copy");
  EXPECT_EQ(m->symbols.Find("only_in_the_copy"), kNoSymbol);
  EXPECT_TRUE(VerifyModule(copy).ok());
}

}  // namespace
}  // namespace vdev::ir
