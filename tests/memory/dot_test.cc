// Tests of the Graphviz writer (vdev/memory/dot.h).
#include "vdev/memory/dot.h"

#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace vdev {
namespace {

using ::testing::HasSubstr;
using ::testing::Not;

DotGraph TwoDevices() {
  DotGraph g;
  g.nodes = {{"x", "%x", "cuda:0"}, {"0", "%0 = add", "cpu:0"}, {"1", "%1 = exp", "cuda:0"}};
  g.edges = {{"x", "0", "cuda:0 -> cpu:0", true}, {"x", "1", "", false}};
  return g;
}

TEST(DotTest, NodesOnOneDeviceShareAColourAndDevicesDiffer) {
  std::string dot = WriteDot(TwoDevices());
  EXPECT_THAT(dot, HasSubstr("\"x\" [label=\"%x\", fillcolor=\"#a6cee3\""));
  EXPECT_THAT(dot, HasSubstr("\"1\" [label=\"%1 = exp\", fillcolor=\"#a6cee3\""));
  EXPECT_THAT(dot, HasSubstr("\"0\" [label=\"%0 = add\", fillcolor=\"#b2df8a\""));
}

TEST(DotTest, CopiesAreRedEdgesAndUsesAreNot) {
  std::string dot = WriteDot(TwoDevices());
  EXPECT_THAT(dot, HasSubstr("\"x\" -> \"0\" [label=\"cuda:0 -> cpu:0\", color=red"));
  EXPECT_THAT(dot, HasSubstr("\"x\" -> \"1\";\n"));
}

TEST(DotTest, LegendListsEachDeviceOnce) {
  std::string dot = WriteDot(TwoDevices());
  EXPECT_THAT(dot, HasSubstr("\"legend:0\" [label=\"cuda:0\""));
  EXPECT_THAT(dot, HasSubstr("\"legend:1\" [label=\"cpu:0\""));
  EXPECT_THAT(dot, Not(HasSubstr("legend:2")));
}

TEST(DotTest, QuotesAreEscaped) {
  DotGraph g;
  g.nodes = {{"a", "say \"hi\"\\", ""}};
  EXPECT_THAT(WriteDot(g), HasSubstr("[label=\"say \\\"hi\\\"\\\\\"]"));
}

}  // namespace
}  // namespace vdev
