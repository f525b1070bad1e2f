// Every worked example of docs/spec/examples: its listed facts, a valid report, idempotence.
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "gtest/gtest.h"
#include "planner/plan_test_util.h"

namespace vdev::testing {
namespace {

using nlohmann::json;

std::string ReadFile(const std::filesystem::path& path) {
  std::ifstream in(path, std::ios::binary);
  std::ostringstream buffer;
  buffer << in.rdbuf();
  return buffer.str();
}

std::vector<std::string> ExampleNames() {
  std::vector<std::string> names;
  std::filesystem::path dir = std::filesystem::path(VDEV_SPEC_DIR) / "examples";
  if (!std::filesystem::exists(dir)) return names;
  for (const auto& entry : std::filesystem::directory_iterator(dir)) {
    if (entry.path().extension() == ".vdev") names.push_back(entry.path().stem().string());
  }
  std::sort(names.begin(), names.end());
  return names;
}

class SpecExampleTest : public ::testing::TestWithParam<std::string> {};

TEST_P(SpecExampleTest, MatchesItsFactsAndReplansUnchanged) {
  std::filesystem::path dir = std::filesystem::path(VDEV_SPEC_DIR) / "examples";
  std::string program = ReadFile(dir / (GetParam() + ".vdev"));
  json expected = json::parse(ReadFile(dir / (GetParam() + ".expected.json")));
  PlanOutcome outcome = PlanText(program);
  int exit = outcome.status.ok() ? 0 : 1;
  ASSERT_EQ(exit, expected.value("exit", 0)) << outcome.status;
  if (exit != 0) return;
  EXPECT_EQ(ValidateReport(outcome.report), "");
  EXPECT_EQ(CompareFacts(expected, outcome.report, /*exact=*/false), "") << outcome.text;
  EXPECT_EQ(CheckIdempotent(outcome.text), "");
}

GTEST_ALLOW_UNINSTANTIATED_PARAMETERIZED_TEST(SpecExampleTest);
INSTANTIATE_TEST_SUITE_P(Examples, SpecExampleTest, ::testing::ValuesIn(ExampleNames()),
                         [](const auto& info) { return info.param; });

TEST(SpecExamplesTest, ExamplesArePresent) { EXPECT_GE(ExampleNames().size(), 5u) << VDEV_SPEC_DIR; }

}  // namespace
}  // namespace vdev::testing
