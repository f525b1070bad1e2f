// Round trips: every example of docs/spec and examples/ prints canonically, and the canonical
// text is a fixed point of parse + print.
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "ir/ir_test_util.h"

namespace vdev::ir {
namespace {

using testing::ParseAndVerify;

std::string ReadFile(const std::filesystem::path& path) {
  std::ifstream in(path, std::ios::binary);
  std::ostringstream s;
  s << in.rdbuf();
  return s.str();
}

std::vector<std::filesystem::path> VdevFiles(const std::filesystem::path& root) {
  std::vector<std::filesystem::path> files;
  if (!std::filesystem::exists(root)) return files;
  for (const auto& entry : std::filesystem::recursive_directory_iterator(root)) {
    if (entry.is_regular_file() && entry.path().extension() == ".vdev") files.push_back(entry.path());
  }
  std::sort(files.begin(), files.end());
  return files;
}

// Drops comment-only lines: what the canonical printer leaves out of a hand-written file.
std::string WithoutCommentLines(const std::string& text) {
  std::istringstream in(text);
  std::string line, out;
  while (std::getline(in, line)) {
    if (line.rfind("#", 0) != 0) out += line + "\n";
  }
  return out;
}

void ExpectFixedPoint(const std::filesystem::path& path) {
  SCOPED_TRACE(path.string());
  std::string error;
  std::optional<Module> first = ParseAndVerify(ReadFile(path), &error);
  ASSERT_TRUE(first.has_value()) << error;
  std::string printed = PrintModule(*first);
  std::optional<Module> second = ParseAndVerify(printed, &error);
  ASSERT_TRUE(second.has_value()) << error << "\nprinted:\n" << printed;
  EXPECT_EQ(PrintModule(*second), printed);
  EXPECT_EQ(second->bindings.size(), first->bindings.size());
  EXPECT_EQ(second->functions.size(), first->functions.size());
}

TEST(IrRoundTrip, SpecExamplesAreFixedPoints) {
  std::vector<std::filesystem::path> files = VdevFiles(VDEV_SPEC_DIR "/examples");
  ASSERT_GE(files.size(), 5u) << VDEV_SPEC_DIR "/examples has fewer than 5 examples";
  for (const auto& f : files) ExpectFixedPoint(f);
}

TEST(IrRoundTrip, RepositoryExamplesAreFixedPoints) {
  std::vector<std::filesystem::path> files = VdevFiles(VDEV_EXAMPLES_DIR);
  ASSERT_GE(files.size(), 1u);
  for (const auto& f : files) ExpectFixedPoint(f);
}

// Hand-written examples already in canonical form print back unchanged, comments aside.
TEST(IrRoundTrip, SpecExamplesPrintAsWritten) {
  std::vector<std::filesystem::path> files = VdevFiles(VDEV_SPEC_DIR "/examples");
  ASSERT_GE(files.size(), 5u);
  for (const auto& f : files) {
    std::string text = ReadFile(f);
    std::optional<Module> m = ParseAndVerify(text);
    ASSERT_TRUE(m.has_value()) << f;
    EXPECT_EQ(PrintModule(*m), WithoutCommentLines(text)) << f;
  }
}

TEST(IrRoundTrip, AllConstructsExamplePrintsAsWritten) {
  std::string text = ReadFile(VDEV_EXAMPLES_DIR "/ir/all_constructs.vdev");
  std::string error;
  std::optional<Module> m = ParseAndVerify(text, &error);
  ASSERT_TRUE(m.has_value()) << error;
  EXPECT_EQ(PrintModule(*m), WithoutCommentLines(text));
}

// The planned program of ir-text.md's example prints exactly as the spec shows it.
TEST(IrRoundTrip, PlannedSpecExamplePrintsExactly) {
  std::optional<Module> m = ParseAndVerify(testing::kPlannedSpecExample);
  ASSERT_TRUE(m.has_value());
  EXPECT_EQ(PrintModule(*m), testing::kPlannedSpecExample);
}

// The edit the planner makes: on_device becomes device_copy, parameters and result get devices.
TEST(IrRoundTrip, PlannerStyleEditPrintsTheSpecOutput) {
  std::optional<Module> m = ParseAndVerify(testing::kSpecExample);
  ASSERT_TRUE(m.has_value());
  VirtualDevice cpu = VirtualDevice::ForDevice(DeviceType::kCPU, 0);
  VirtualDevice gpu = VirtualDevice::ForDevice(DeviceType::kCUDA, 0);
  FuncId main = m->FindGlobal("main");
  ASSERT_NE(main, kNoFunc);
  Function& f = m->functions[main];
  for (ParamId p = f.params.begin; p < f.params.begin + f.params.count; ++p)
    m->params[p].device = m->devices.Intern(p - f.params.begin < 2 ? cpu : gpu);
  f.result_device = m->devices.Intern(gpu);
  Binding& annotated = m->bindings[m->blocks[f.body].bindings[1]];
  ASSERT_EQ(m->OpName(annotated.expr), "on_device");
  Operand value = m->Args(annotated.expr)[0];
  annotated.expr =
      m->MakeOpCall("device_copy", {&value, 1},
                    {m->MakeAttr("src", m->DeviceOperand(cpu)), m->MakeAttr("dst", m->DeviceOperand(gpu))});
  m->config.present = false;
  ASSERT_TRUE(VerifyModule(*m).ok());
  EXPECT_EQ(PrintModule(*m), testing::kPlannedSpecExample);
}

// The memory pass's edit: insert alloc bindings before a use, with fresh names.
TEST(IrRoundTrip, InsertedBindingsPrintInPlace) {
  std::optional<Module> m = ParseAndVerify("def @main(%a: f32[4]) {\n  %0 = add(%a, %a)\n  return %0\n}\n");
  ASSERT_TRUE(m.has_value());
  Function& f = m->functions[m->FindGlobal("main")];
  Symbol name = m->FreshName("storage");
  Operand size = m->NumberOperand("16"), align = m->NumberOperand("64");
  Operand args[] = {size, align};
  Expr alloc = m->MakeOpCall("memory.alloc_storage", args,
                             {m->MakeAttr("device", m->DeviceOperand(VirtualDevice::ForDevice(DeviceType::kCUDA, 0)))});
  BindingId b = m->AddBinding(f.body, name, alloc);
  std::vector<BindingId>& list = m->blocks[f.body].bindings;
  list.insert(list.begin(), b);
  ASSERT_TRUE(VerifyModule(*m).ok());
  EXPECT_EQ(m->types.ToString(m->bindings[b].type), "storage");
  EXPECT_EQ(PrintModule(*m),
            "def @main(%a: f32[4]) {\n"
            "  %storage = memory.alloc_storage(16, 64, device=cuda:0)\n"
            "  %0 = add(%a, %a)\n"
            "  return %0\n"
            "}\n");
  EXPECT_EQ(m->Name(m->FreshName("storage")), "storage_1");
}

TEST(IrRoundTrip, CanonicalisesSpacingArgumentOrderAndDevices) {
  std::optional<Module> m = ParseAndVerify(
      "config{host=cpu:0,targets=[llvm]}\n"
      "def   @main ( %a :f32[ 2 , ? ] on cuda , %b:(f32[1],storage) )->  f32[2,?]   {\n"
      "  %0   =   on_device ( %a , constrain_result = true , cuda:0[cuda] )   # trailing comment\n"
      "  %t = %b . 1\n"
      "  return   %0\n"
      "}\n");
  ASSERT_TRUE(m.has_value());
  EXPECT_EQ(PrintModule(*m),
            "config { targets = [llvm], host = cpu:0 }\n"
            "def @main(%a: f32[2,?] on cuda, %b: (f32[1], storage)) -> f32[2,?] {\n"
            "  %0 = on_device(%a, cuda:0[cuda], constrain_result=true)\n"
            "  %t = %b.1\n"
            "  return %0\n"
            "}\n");
}

TEST(IrRoundTrip, WalkerVisitsInProgramOrder) {
  std::optional<Module> m = ParseAndVerify(
      "def @main(%c: bool[], %x: f32[2]) {\n"
      "  %a = negative(%x)\n"
      "  %r = if %c {\n"
      "    %f = fn(%y: f32[2]) {\n"
      "      %in = add(%y, %a)\n"
      "      return %in\n"
      "    }\n"
      "    %z = %f(%x)\n"
      "    return %z\n"
      "  } else {\n"
      "    return %x\n"
      "  }\n"
      "  return %r\n"
      "}\n");
  ASSERT_TRUE(m.has_value());
  struct Recorder : Visitor {
    const Module* m;
    std::string log;
    void EnterFunction(FuncId f) override { log += "F(" + std::string(m->Name(m->functions[f].name)) + ") "; }
    void ExitFunction(FuncId) override { log += "/F "; }
    void EnterBlock(BlockId) override { log += "{ "; }
    void ExitBlock(BlockId) override { log += "} "; }
    void Binding(BindingId b) override { log += std::string(m->Name(m->bindings[b].name)) + " "; }
    void BindingDone(BindingId b) override { log += "." + std::string(m->Name(m->bindings[b].name)) + " "; }
  } recorder;
  recorder.m = &*m;
  WalkModule(*m, recorder);
  EXPECT_EQ(recorder.log, "F(main) { a .a r { f F(f) { in .in } /F .f z .z } { } .r } /F ");
  EXPECT_EQ(FunctionPath(*m, m->FindGlobal("main")), "main");
  EXPECT_EQ(FunctionPath(*m, m->functions.size() - 1), "main/f");
}

TEST(IrRoundTrip, PrintingToAStreamWritesTheSameText) {
  // Enough bindings (and a nested block and a kernel) for the stream to get several pieces.
  std::string text =
      "kernel @k(%v: f32[2]) -> f32[2]\ndef @main(%c: bool[], %x: f32[2]) -> f32[2] {\n  %0 = negative(%x)\n";
  for (int i = 1; i < 10000; ++i) absl::StrAppend(&text, "  %", i, " = add(%", i - 1, ", %x)\n");
  text += "  %r = if %c {\n    return %9999\n  } else {\n    return %x\n  }\n  return %r\n}\n";
  std::optional<Module> m = ParseAndVerify(text);
  ASSERT_TRUE(m.has_value());
  std::ostringstream streamed;
  PrintModule(*m, streamed);
  EXPECT_GT(streamed.str().size(), size_t{1} << 17);
  EXPECT_EQ(streamed.str(), PrintModule(*m));
}

}  // namespace
}  // namespace vdev::ir
