// Deterministic mutations of the examples (a small, always-on cousin of fuzz/): whatever parses
// prints to text that parses, verifies the same way and prints identically; errors are located.
#include <fstream>
#include <random>
#include <sstream>
#include <string>

#include "gtest/gtest.h"
#include "vdev/ir/ir_text.h"

namespace vdev::ir {
namespace {

std::string ReadFile(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::ostringstream s;
  s << in.rdbuf();
  return s.str();
}

TEST(IrMutation, RoundTripSurvivesMutations) {
  const std::string seed = ReadFile(VDEV_EXAMPLES_DIR "/ir/all_constructs.vdev");
  ASSERT_FALSE(seed.empty());
  const std::string alphabet = "%@(){}[],=:.?*/-># \n0123456789abcfnoirt\"";
  std::mt19937 rng(20261122);
  int parsed = 0;
  for (int round = 0; round < 3000; ++round) {
    std::string text = seed;
    int edits = 1 + static_cast<int>(rng() % 4);
    for (int e = 0; e < edits && !text.empty(); ++e) {
      size_t at = rng() % text.size();
      switch (rng() % 3) {
        case 0: text.erase(at, 1 + rng() % 8); break;
        case 1: text.insert(at, 1, alphabet[rng() % alphabet.size()]); break;
        default: text.insert(at, text.substr(rng() % text.size(), 1 + rng() % 16)); break;
      }
    }
    Diagnostic diag;
    absl::StatusOr<Module> m = ParseModule(text, &diag);
    if (!m.ok()) {
      ASSERT_TRUE(diag.loc.valid()) << text;
      continue;
    }
    ++parsed;
    Diagnostic verify_diag;
    bool verified = VerifyModule(*m, &verify_diag).ok();
    if (!verified) ASSERT_TRUE(verify_diag.loc.valid()) << verify_diag.message << "\n" << text;
    std::string printed = PrintModule(*m);
    absl::StatusOr<Module> again = ParseModule(printed, &diag);
    ASSERT_TRUE(again.ok()) << diag.message << "\nprinted:\n" << printed << "\nfrom:\n" << text;
    ASSERT_EQ(VerifyModule(*again).ok(), verified) << printed;
    ASSERT_EQ(PrintModule(*again), printed);
  }
  EXPECT_GT(parsed, 100);  // the mutations must not all be rejected
}

}  // namespace
}  // namespace vdev::ir
