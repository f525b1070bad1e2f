// `vdev plan`: exit statuses 0/1/2, stdout text or a JSON report valid against plan-json.md.
#include <array>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <string>

#include <sys/wait.h>
#include <unistd.h>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "planner/plan_test_util.h"

namespace vdev::testing {
namespace {

using ::testing::HasSubstr;

struct CliRun {
  int status;
  std::string out;
  std::string err;
};

// Runs `vdev plan ARGS` on `program` given as standard input.
CliRun Plan(const std::string& args, const std::string& program) {
  std::string base = (std::filesystem::temp_directory_path() / ("vdev_plan_" + std::to_string(::getpid()))).string();
  std::ofstream(base + ".in") << program;
  std::string command =
      std::string(VDEV_CLI) + " plan - " + args + " < " + base + ".in > " + base + ".out 2> " + base + ".err";
  int status = std::system(command.c_str());
  auto slurp = [](const std::string& path) {
    std::ifstream in(path);
    return std::string(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
  };
  CliRun run{WEXITSTATUS(status), slurp(base + ".out"), slurp(base + ".err")};
  for (const char* ext : {".in", ".out", ".err"}) std::filesystem::remove(base + ext);
  return run;
}

constexpr char kProgram[] = R"(def @main(%a: f32[2], %b: f32[2]) {
  %0 = add(%a, %b)
  %1 = on_device(%0, cpu:0)
  %2 = on_device(%0, cuda:0)
  %3 = add(%1, %2)
  return %3
}
)";

TEST(PlanCliTest, JsonReportIsValidAndCarriesTheWarning) {
  CliRun run = Plan("--json", kProgram);
  ASSERT_EQ(run.status, 0) << run.err;
  nlohmann::json report = nlohmann::json::parse(run.out);
  EXPECT_EQ(ValidateReport(report), "");
  ASSERT_EQ(report["warnings"].size(), 1u);
  EXPECT_EQ(report["warnings"][0]["line"], 4);
  EXPECT_THAT(run.err, HasSubstr("<stdin>:4:"));
  EXPECT_THAT(run.err, HasSubstr("warning: %0 is needed on cpu:0"));
}

TEST(PlanCliTest, StrictConflictExitsOneWithTheAnnotations) {
  CliRun run = Plan("--strict --json", kProgram);
  ASSERT_EQ(run.status, 1);
  nlohmann::json report = nlohmann::json::parse(run.out);
  EXPECT_EQ(ValidateErrorReport(report), "");
  ASSERT_EQ(report["error"]["conflicts"].size(), 2u);
  EXPECT_EQ(report["error"]["conflicts"][0]["line"], 3);
  EXPECT_EQ(report["error"]["conflicts"][1]["line"], 4);
  EXPECT_THAT(run.err, HasSubstr("<stdin>:4:"));
  EXPECT_THAT(run.err, HasSubstr("note: on_device(%0, cpu:0)"));
}

TEST(PlanCliTest, TextOutputReplansUnchanged) {
  CliRun first = Plan("", kProgram);
  ASSERT_EQ(first.status, 0);
  CliRun second = Plan("", first.out);
  EXPECT_EQ(second.status, 0);
  EXPECT_EQ(second.out, first.out);
  EXPECT_EQ(second.err, "");
}

TEST(PlanCliTest, DefaultAndHostOptions) {
  CliRun run = Plan("--json --default cuda:1 --host cpu:2",
                    "def @main(%x: f32[2]) -> i64[1] {\n  %0 = negative(%x)\n  %s = vm.shape_of(%0)\n  return %s\n}\n");
  ASSERT_EQ(run.status, 0) << run.err;
  nlohmann::json report = nlohmann::json::parse(run.out);
  EXPECT_EQ(report["functions"]["main"]["bindings"]["s"], "cpu:2");
  EXPECT_EQ(report["functions"]["main"]["bindings"]["0"], "cpu:2");  // consumed by shape_of on the host
}

TEST(PlanCliTest, BytesThatAreNotUtf8PrintAsReplacementCharacters) {
  // A target string may hold any byte; the error report echoes the device (the plan fuzzer's
  // finding: nlohmann's dump threw on the 0xFF, and the command aborted).
  CliRun run = Plan("--json", "kernel @k(%a: f32[1]) -> f32[1] on cuda:0[cuda -arch=sm_9\xff]\n");
  ASSERT_EQ(run.status, 1) << run.err;
  nlohmann::json report = nlohmann::json::parse(run.out);
  EXPECT_EQ(ValidateErrorReport(report), "");
  EXPECT_THAT(std::string(report["error"]["message"]), HasSubstr("sm_9\xef\xbf\xbd]"));  // U+FFFD
}

TEST(PlanCliTest, CopyOfAConstantIsReportedAsACopyOfItsBinding) {
  // The plan fuzzer's finding: the report named the copied value of `on_device(51, cpu:0)`, a
  // number, through an invalid reference.
  CliRun run =
      Plan("--json", "def @main(%a: f32[2]) {\n  %1 = on_device(51, cpu:0)\n  %2 = add(%a, %1)\n  return %2\n}\n");
  ASSERT_EQ(run.status, 0) << run.err;
  nlohmann::json report = nlohmann::json::parse(run.out);
  EXPECT_EQ(ValidateReport(report), "");
  EXPECT_EQ(report["functions"]["main"]["copies"],
            nlohmann::json::parse(R"([{"of": "1", "src": "cpu:0", "dst": "cuda:0", "into": "2"}])"));
}

TEST(PlanCliTest, AnnotatedConstantThatMovesNothingBecomesAnAlias) {
  // No copy with src == dst is left, and the binding stays defined for its reader.
  PlanOutcome outcome = PlanText(
      "def @main(%a: f32[2]) {\n  %1 = on_device(51, cpu:0)\n  %2 = add(%a, %1)\n  %3 = on_device(%2, cpu:0)\n"
      "  return %3\n}\n");
  ASSERT_TRUE(outcome.status.ok()) << outcome.status;
  EXPECT_THAT(outcome.text, HasSubstr("  %1 = 51\n  %2 = add(%a, %1)\n"));
  EXPECT_TRUE(outcome.report["functions"]["main"]["copies"].empty()) << outcome.report;
  EXPECT_EQ(outcome.report["functions"]["main"]["bindings"]["1"], "cpu:0");
  EXPECT_EQ(CheckIdempotent(outcome.text), "");
}

TEST(PlanCliTest, ParseErrorsAndBadOptionsExitTwo) {
  EXPECT_EQ(Plan("", "def @main(%a: f32[2]) {\n  %0 = on_device(%a, gpu:0)\n  return %0\n}\n").status, 2);
  EXPECT_EQ(Plan("--default cuda:x", kProgram).status, 2);
  EXPECT_EQ(Plan("--no-such-flag", kProgram).status, 2);
}

TEST(PlanCliTest, OptimizeReportsCostsAndRejectsAnUnsupportedAnnotation) {
  const std::string machine =
      (std::filesystem::temp_directory_path() / ("vdev_machine_" + std::to_string(::getpid()) + ".json")).string();
  std::ofstream(machine) << R"({"devices": [
      {"device": "cpu:0", "memory_gb": 64, "bandwidth_gbs": 100, "default_tflops": 1},
      {"device": "cuda:0", "memory_gb": 80, "bandwidth_gbs": 3000, "default_tflops": 60}],
    "links": [{"between": ["cpu:0", "cuda:0"], "bandwidth_gbs": 50, "latency_us": 10}],
    "ops": {"topk": ["cpu"]}})";
  CliRun ok = Plan("--optimize --json --machine " + machine, R"(def @main(%x: f32[256,256]) -> f32[256,256] {
  %0 = matmul(%x, %x)
  %1 = on_device(%0, ?, constrain_body=false, constrain_result=false)
  %2 = topk(%1)
  return %2
}
)");
  EXPECT_EQ(ok.status, 0) << ok.err;
  nlohmann::json report = nlohmann::json::parse(ok.out);
  EXPECT_EQ(ValidateReport(report), "");
  EXPECT_EQ(report["optimal"], true);
  EXPECT_EQ(report["gap"], 0);
  EXPECT_EQ(report["lower_bound"], report["model_cost"]);
  EXPECT_GT(report["cost"]["total"].get<double>(), 0);
  EXPECT_EQ(ok.err.find("not proven optimal"), std::string::npos) << ok.err;
  EXPECT_EQ(report["default_cost"]["unsupported_ops"], 1);  // topk on cuda:0
  EXPECT_EQ(report["functions"]["main"]["bindings"]["2"], "cpu:0");
  CliRun bad = Plan("--optimize --machine " + machine, R"(def @main(%x: f32[4]) -> f32[4] {
  %0 = topk(%x)
  %1 = on_device(%0, cuda:0)
  return %1
}
)");
  EXPECT_EQ(bad.status, 1);
  EXPECT_THAT(bad.err, HasSubstr("topk at 2:8"));
  EXPECT_EQ(Plan("--machine " + machine, "def @main() {\n  return 1\n}\n").status, 2);  // needs --optimize
  std::filesystem::remove(machine);
}

TEST(PlanCliTest, OptimizeReportsPeaksAndAProgramThatFitsNowhere) {
  const std::string machine =
      (std::filesystem::temp_directory_path() / ("vdev_small_" + std::to_string(::getpid()) + ".json")).string();
  std::ofstream(machine) << R"({"devices": [
      {"device": "cpu:0", "memory_gb": 0.001, "bandwidth_gbs": 100, "default_tflops": 1},
      {"device": "cuda:0", "memory_gb": 0.001, "bandwidth_gbs": 3000, "default_tflops": 60}],
    "links": [{"between": ["cpu:0", "cuda:0"], "bandwidth_gbs": 50, "latency_us": 10}]})";
  CliRun ok = Plan("--optimize --json --machine " + machine, R"(def @main(%x: f32[256,256]) -> f32[256,256] {
  %0 = negative(%x)
  return %0
}
)");
  ASSERT_EQ(ok.status, 0) << ok.err;
  nlohmann::json report = nlohmann::json::parse(ok.out);
  EXPECT_EQ(report["peak_bytes"]["cuda:0"], 2 * 256 * 256 * 4);  // %x and %0 while negative runs
  EXPECT_EQ(report["peak_bytes"]["cpu:0"], 0);
  CliRun too_big = Plan("--optimize --machine " + machine, R"(def @main(%x: f32[1024,1024]) -> f32[1024,1024] {
  %0 = negative(%x)
  return %0
}
)");
  EXPECT_EQ(too_big.status, 1);
  EXPECT_THAT(too_big.err, HasSubstr("<stdin>:"));
  EXPECT_THAT(too_big.err, HasSubstr("4194304 bytes"));
  EXPECT_EQ(too_big.out, "");
  std::filesystem::remove(machine);
}

}  // namespace
}  // namespace vdev::testing
