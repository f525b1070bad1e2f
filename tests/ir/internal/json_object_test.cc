// JsonObject: the members in insertion order, a repeated key replaced in its place (as
// ordered_json's operator[] does), many members without a quadratic search.
#include "json_object/json_object.h"

#include <string>

#include "gtest/gtest.h"
#include "nlohmann/json.hpp"

namespace vdev::ir_internal {
namespace {

using Json = nlohmann::ordered_json;

TEST(JsonObjectTest, KeepsInsertionOrderAndReplacesARepeatedKeyInPlace) {
  JsonObject<Json> object;
  object.Set("b", 1);
  object.Set("a", 2);
  object.Set("b", 3);
  EXPECT_EQ(object.size(), 2u);
  Json reference = Json::object();
  reference["b"] = 1;
  reference["a"] = 2;
  reference["b"] = 3;
  Json built = std::move(object).Take();
  EXPECT_EQ(built.dump(), reference.dump());
  EXPECT_EQ(built.dump(), R"({"b":3,"a":2})");
}

TEST(JsonObjectTest, FindsKeysAfterTheMembersMoved) {
  // Short keys live inside their strings: the index must survive the vector growing (no Reserve).
  JsonObject<Json> object;
  constexpr int kN = 100'000;
  for (int i = 0; i < kN; ++i) object.Set(std::to_string(i), i);
  for (int i = 0; i < kN; i += 7) object.Set(std::to_string(i), -i);
  Json built = std::move(object).Take();
  ASSERT_EQ(built.size(), static_cast<size_t>(kN));
  auto it = built.begin();
  for (int i = 0; i < kN; ++i, ++it) {
    ASSERT_EQ(it.key(), std::to_string(i));
    ASSERT_EQ(it.value().get<int>(), i % 7 == 0 ? -i : i);
  }
}

TEST(JsonObjectTest, AppendKeepsTheOrderGiven) {
  JsonObject<Json> object;
  object.Append("z", "cuda:0");
  object.Append("y", "cpu:0");
  EXPECT_EQ(std::move(object).Take().dump(), R"({"z":"cuda:0","y":"cpu:0"})");
}

}  // namespace
}  // namespace vdev::ir_internal
