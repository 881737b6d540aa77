// schema/events.schema.json against engine/events/events.h: every event and item type the engine
// can emit, rendered by the real JSONL sink, validates; every type in events.h has its schema entry
// (and the schema has no entry events.h lacks); the error codes and schema_version agree.
#include <gtest/gtest.h>
#include <rapidjson/document.h>

#include <fstream>
#include <set>
#include <sstream>
#include <utility>
#include <variant>

#include "outputs/jsonl_sink.h"
#include "schema/events_schema.h"
#include "tests/support/event_schema_check.h"

namespace ae {
namespace {

using test::ValidateEvent;

rapidjson::Document SchemaDoc() {
  rapidjson::Document d;
  std::string_view text = EventsSchemaJson();
  d.Parse(text.data(), text.size());
  return d;
}

// The `type` values the schema allows at `definitions/<list>` (a oneOf of $refs).
std::set<std::string> SchemaTypes(const rapidjson::Document& schema, const char* list) {
  const rapidjson::Value& one_of =
      std::string(list) == "" ? schema["oneOf"] : schema["definitions"][list]["oneOf"];
  std::set<std::string> types;
  for (const auto& ref : one_of.GetArray()) {
    std::string name = ref["$ref"].GetString();
    name = name.substr(std::string("#/definitions/").size());
    types.insert(schema["definitions"][name.c_str()]["properties"]["type"]["enum"][0].GetString());
  }
  return types;
}

std::string TypeOf(const std::string& json, bool item) {
  rapidjson::Document d;
  d.Parse(json.c_str());
  return item ? d["item"]["type"].GetString() : d["type"].GetString();
}

// One default-constructed value of every alternative of a variant.
template <class V, size_t... I>
std::vector<V> EachAlternative(std::index_sequence<I...>) {
  return {V(std::in_place_index<I>)...};
}
template <class V>
std::vector<V> EachAlternative() {
  return EachAlternative<V>(std::make_index_sequence<std::variant_size_v<V>>());
}

// Every item shape, with the optional parts both present and absent.
std::vector<ItemDetails> EveryItemShape() {
  std::vector<ItemDetails> all = EachAlternative<ItemDetails>();
  all.push_back(CommandExecutionItem{"/bin/bash -lc 'false'", "no\n", 1, ItemStatus::kFailed});
  all.push_back(FileChangeItem{{{"/r/a", FileChangeKind::kAdd, "diff"},
                                {"/r/b", FileChangeKind::kDelete, ""},
                                {"/r/c", FileChangeKind::kUpdate, ""}},
                               ItemStatus::kCompleted});
  all.push_back(McpToolCallItem{"docs", "search", R"({"q":1})", R"([{"type":"text"}])",
                                R"({"n":1})", std::nullopt, ItemStatus::kCompleted});
  all.push_back(McpToolCallItem{"docs", "search", "not json", R"([])", std::nullopt, std::nullopt,
                                ItemStatus::kCompleted});
  all.push_back(McpToolCallItem{"docs", "search", "{}", std::nullopt, std::nullopt, "exited",
                                ItemStatus::kFailed});
  all.push_back(TodoListItem{{{"read", true}, {"write", false}}});
  all.push_back(ContextCompactionItem{200000, 12000});
  all.push_back(NetworkRequestItem{"item_3", "https", "registry.npmjs.org", 443, "", "104.16.1.34",
                                   true, "@npm: registry.npmjs.org", "", 1200, 880000});
  all.push_back(NetworkRequestItem{"item_3", "http", "evil.test", 80, "GET", "", false, "",
                                   "not in network.allow", 0, 0});
  return all;
}

TEST(EventSchemaTest, EveryEventTypeInEventsHValidatesAndHasASchemaEntry) {
  rapidjson::Document schema = SchemaDoc();
  ASSERT_FALSE(schema.HasParseError());
  std::set<std::string> rendered;
  for (const Event& e : EachAlternative<Event>()) {
    if (std::holds_alternative<AgentMessageDelta>(e)) {
      EXPECT_EQ(EventToJson(e), "");  // human-only by design: never a JSONL line
      continue;
    }
    std::vector<Event> variants{e};
    if (std::holds_alternative<ThreadStarted>(e)) {
      variants = {ThreadStarted{"0199a213-81c0-7800-8aa1-bbab2a035a53", {}}};
    }
    const Item item{"item_0", AgentMessageItem{"hi"}};
    if (std::holds_alternative<ItemStarted>(e)) variants = {ItemStarted{item}};
    if (std::holds_alternative<ItemUpdated>(e)) variants = {ItemUpdated{item}};
    if (std::holds_alternative<ItemCompleted>(e)) variants = {ItemCompleted{item}};
    for (const Event& v : variants) {
      std::string line = EventToJson(v);
      ASSERT_FALSE(line.empty()) << "event alternative " << e.index() << " renders nothing";
      EXPECT_EQ(ValidateEvent(line), "");
      rendered.insert(TypeOf(line, false));
    }
  }
  // One entry per JSONL event type, in both directions.
  EXPECT_EQ(rendered, SchemaTypes(schema, ""));
}

TEST(EventSchemaTest, EveryItemTypeInEventsHValidatesInEveryLifecycleEvent) {
  rapidjson::Document schema = SchemaDoc();
  std::set<std::string> rendered;
  for (const ItemDetails& d : EveryItemShape()) {
    Item item{"item_12", d};
    for (const Event& e :
         {Event(ItemStarted{item}), Event(ItemUpdated{item}), Event(ItemCompleted{item})}) {
      std::string line = EventToJson(e);
      EXPECT_EQ(ValidateEvent(line), "");
      rendered.insert(TypeOf(line, true));
    }
  }
  EXPECT_EQ(rendered.size(), std::variant_size_v<ItemDetails>);
  EXPECT_EQ(rendered, SchemaTypes(schema, "item"));
  EXPECT_TRUE(rendered.contains("context_compaction"));
}

TEST(EventSchemaTest, EveryErrorCodeIsInTheSchemaAndNoOther) {
  rapidjson::Document schema = SchemaDoc();
  std::set<std::string> in_schema;
  for (const auto& v : schema["definitions"]["error_code"]["enum"].GetArray()) {
    in_schema.insert(v.GetString());
  }
  std::set<std::string> in_code;
  for (ErrorCode code : kAllErrorCodes) {
    in_code.insert(ErrorCodeName(code));
    std::string line = EventToJson(TurnFailed{"why", code, Usage{1, 0, 0, 2, 0}, TurnStats{}});
    EXPECT_EQ(ValidateEvent(line), "") << ErrorCodeName(code);
  }
  EXPECT_EQ(in_code, in_schema);
}

TEST(EventSchemaTest, SchemaVersionMatchesEventsH) {
  rapidjson::Document schema = SchemaDoc();
  EXPECT_EQ(schema["schema_version"].GetInt(), kSchemaVersion);
  EXPECT_EQ(schema["definitions"]["event.thread.started"]["properties"]["schema_version"]["enum"][0]
                .GetInt(),
            kSchemaVersion);
  EXPECT_STREQ(schema["$schema"].GetString(), "http://json-schema.org/draft-04/schema#");
}

TEST(EventSchemaTest, TheValidatorRejectsWhatTheSchemaDoesNotDescribe) {
  EXPECT_EQ(ValidateEvent(R"({"type":"turn.started"})"), "");
  EXPECT_NE(ValidateEvent(R"({"type":"turn.started","extra":1})"), "");
  EXPECT_NE(ValidateEvent(R"({"type":"turn.begun"})"), "");
  EXPECT_NE(ValidateEvent(R"({"type":"item.completed","item":{"id":"item_0","type":"novel"}})"),
            "");
  EXPECT_NE(ValidateEvent(R"({"type":"item.completed","item":{"id":"x","type":"agent_message",)"
                          R"("text":"hi"}})"),
            "");
  EXPECT_NE(ValidateEvent(R"({"type":"turn.failed","error":{"message":"m","code":"oops"},)"
                          R"("usage":{"input_tokens":0,"cached_input_tokens":0,)"
                          R"("cache_write_input_tokens":0,"output_tokens":0,)"
                          R"("reasoning_output_tokens":0},"last_usage":{"input_tokens":0,)"
                          R"("cached_input_tokens":0,"cache_write_input_tokens":0,)"
                          R"("output_tokens":0,"reasoning_output_tokens":0},"requests":0,)"
                          R"("duration_ms":0})"),
            "");
  EXPECT_EQ(test::ValidateEventStream("{\"type\":\"turn.started\"}\n{\"type\":\"x\"}\n")
                .rfind("line 2 does not match", 0),
            0u);
}

TEST(EventSchemaTest, TheEmbeddedSchemaIsThePublishedFile) {
  std::ifstream in(AE_SOURCE_DIR "/schema/events.schema.json", std::ios::binary);
  std::stringstream ss;
  ss << in.rdbuf();
  EXPECT_EQ(ss.str(), std::string(EventsSchemaJson()));
}

}  // namespace
}  // namespace ae
