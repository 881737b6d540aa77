// Context management (engine/compaction.h): the token count, the compacted history's exact
// shape, trimming that never splits a call from its output, and the session file's record.
#include "engine/compaction.h"

#include <gtest/gtest.h>

#include <filesystem>

#include "engine/history.h"
#include "engine/rollout.h"

namespace ae {
namespace {

const std::string kDeveloper = MessageInputItem("developer", "be good");
const std::string kEnv =
    MessageInputItem("user", "<environment_context>\n  <cwd>/w</cwd>\n</environment_context>");
const std::string kAgents = MessageInputItem(
    "user", "# AGENTS.md instructions for /w\n\n<INSTRUCTIONS>\nx\n</INSTRUCTIONS>");

std::string Call(const std::string& id) {
  return R"({"type":"function_call","name":"exec_command","arguments":"{}","call_id":")" + id +
         R"("})";
}

TEST(Compaction, TokensAreFourBytesEachRoundedUp) {
  EXPECT_EQ(EstimateTokens(std::string_view("")), 0);
  EXPECT_EQ(EstimateTokens(std::string_view("abcd")), 1);
  EXPECT_EQ(EstimateTokens(std::string_view("abcde")), 2);
  EXPECT_EQ(EstimateTokens(std::vector<std::string>{"abcde", "abc"}), 3);
}

TEST(Compaction, InitialContextIsDeveloperAgentsAndEnvironment) {
  EXPECT_TRUE(IsInitialContextItem(kDeveloper));
  EXPECT_TRUE(IsInitialContextItem(kEnv));
  EXPECT_TRUE(IsInitialContextItem(kAgents));
  EXPECT_FALSE(IsInitialContextItem(MessageInputItem("user", "fix the build")));
  EXPECT_FALSE(IsInitialContextItem(Call("c1")));
  EXPECT_FALSE(IsInitialContextItem("not json"));
}

TEST(Compaction, TrackerCountsUsageAndEstimatesWhatCameAfter) {
  std::vector<std::string> history = {kDeveloper, MessageInputItem("user", "go"), Call("c1")};
  ContextTracker t;
  EXPECT_EQ(t.Tokens(history), EstimateTokens(history));  // nothing counted yet
  t.OnResponse(Usage{1000, 0, 0, 50, 0}, history.size());
  EXPECT_EQ(t.Tokens(history), 1050);
  history.push_back(ToolOutputItem("c1", std::string(400, 'x'), false));
  EXPECT_EQ(t.Tokens(history), 1050 + EstimateTokens(history.back()));
  t.Reset();
  EXPECT_EQ(t.Tokens(history), EstimateTokens(history));
  // A response without usage (a provider that reports none) falls back to the estimate.
  t.OnResponse(Usage{}, history.size());
  EXPECT_EQ(t.Tokens(history), EstimateTokens(history));
}

TEST(Compaction, TheToolSpecsCountOnlyInTheEstimate) {
  std::vector<std::string> history = {kDeveloper, MessageInputItem("user", "go")};
  ContextTracker t(300);
  EXPECT_EQ(t.Tokens(history), 300 + EstimateTokens(history));
  t.OnResponse(Usage{1000, 0, 0, 50, 0}, history.size());
  EXPECT_EQ(t.Tokens(history), 1050);  // the service's count holds the specs already
  t.Reset();
  EXPECT_EQ(t.Tokens(history), 300 + EstimateTokens(history));
}

TEST(Compaction, CompactedHistoryIsContextRecentUserMessagesAndTheSummary) {
  std::vector<std::string> history = {
      kDeveloper,
      kAgents,
      kEnv,
      UserInputItem("fix the build", {"data:image/png;base64,AAAA"}),
      Call("c1"),
      ToolOutputItem("c1", "ok", false),
      MessageInputItem("user", std::string(kSummaryPrefix) + "\nan older summary"),
      R"({"type":"message","role":"assistant","content":[{"type":"output_text","text":"done"}]})",
      MessageInputItem("user", "now the tests"),
  };
  std::vector<std::string> out = BuildCompactedHistory(history, "SUMMARY", 1000);
  EXPECT_EQ(out, (std::vector<std::string>{
                     kDeveloper,
                     kAgents,
                     kEnv,
                     // The image is not resent: user messages are kept as text.
                     MessageInputItem("user", "fix the build"),
                     MessageInputItem("user", "now the tests"),
                     MessageInputItem("user", std::string(kSummaryPrefix) + "\nSUMMARY"),
                 }));
  EXPECT_EQ(BuildCompactedHistory({}, "", 10).back(),
            MessageInputItem("user", std::string(kSummaryPrefix) + "\n(no summary available)"));
}

TEST(Compaction, UserMessagesBeyondTheBudgetAreDroppedOldestFirstAndOneIsTruncated) {
  std::vector<std::string> history = {
      MessageInputItem("user", std::string(400, 'a')),  // 100 tokens
      MessageInputItem("user", std::string(400, 'b')),
      MessageInputItem("user", std::string(40, 'c')),  // 10 tokens
  };
  std::vector<std::string> out = BuildCompactedHistory(history, "S", 60);
  ASSERT_EQ(out.size(), 3u);
  EXPECT_EQ(out[0],
            MessageInputItem("user", std::string(200, 'b') + "\n[... 50 tokens truncated]"));
  EXPECT_EQ(out[1], MessageInputItem("user", std::string(40, 'c')));
}

TEST(Compaction, RemoteOutputKeepsUserAssistantAndCompactionItemsAfterOurContext) {
  std::vector<std::string> history = {kDeveloper, kEnv, MessageInputItem("user", "go"), Call("c1"),
                                      ToolOutputItem("c1", "ok", false)};
  const std::string compaction = R"({"type":"compaction","id":"cmp_1","encrypted_content":"E"})";
  std::vector<std::string> output = {MessageInputItem("developer", "stale instructions"),
                                     kEnv,
                                     MessageInputItem("user", "go"),
                                     R"({"type":"reasoning","summary":[],"encrypted_content":"R"})",
                                     Call("c9"),
                                     compaction};
  EXPECT_EQ(
      AdoptRemoteCompaction(history, output),
      (std::vector<std::string>{kDeveloper, kEnv, MessageInputItem("user", "go"), compaction}));
}

TEST(Compaction, TrimmingDropsTheOldestItemsAndNeverSplitsACallFromItsOutput) {
  const std::string big(800, 'x');  // 200 tokens
  std::vector<std::string> history = {
      kDeveloper, MessageInputItem("user", "go"),       Call("c1"),
      Call("c2"), ToolOutputItem("c1", big, false),     ToolOutputItem("c2", big, false),
      Call("c3"), ToolOutputItem("c3", "short", false),
  };
  EXPECT_EQ(TrimForCompaction(history, 0), history);
  EXPECT_EQ(TrimForCompaction(history, 1000000), history);
  std::vector<std::string> trimmed = TrimForCompaction(history, 300);
  // Oldest first: "go", c1, c2 and c1's output fit the budget once dropped; c2's output goes
  // with its call although it was not needed to fit.
  EXPECT_EQ(trimmed, (std::vector<std::string>{kDeveloper, Call("c3"),
                                               ToolOutputItem("c3", "short", false)}));
  // Every output in what is sent has its call, whatever the budget.
  for (int64_t budget = 1; budget < 700; budget += 7) {
    std::vector<std::string> t = TrimForCompaction(history, budget);
    for (size_t i = 0; i < t.size(); ++i) {
      for (const char* id : {"c1", "c2", "c3"}) {
        if (t[i].find("function_call_output") != std::string::npos &&
            t[i].find(std::string("\"") + id + "\"") != std::string::npos) {
          bool has_call = false;
          for (size_t j = 0; j < i; ++j) has_call = has_call || t[j] == Call(id);
          EXPECT_TRUE(has_call) << "budget " << budget << ": output of " << id << " alone";
        }
      }
    }
    EXPECT_EQ(t.front(), kDeveloper);  // the initial context is never trimmed
  }
}

TEST(Compaction, TheSessionFileResumesFromTheCompactedHistory) {
  char tmpl[] = "/tmp/ae-compaction-XXXXXX";
  std::string home = ::mkdtemp(tmpl);
  SessionMeta meta{"0190-cccc", "/w", "2026-11-22T00:00:00Z", "gpt-5", "openai", "read-only"};
  std::string path;
  {
    auto w = RolloutWriter::Create(home, meta);
    ASSERT_TRUE(w.ok()) << w.message();
    path = (*w)->path();
    (*w)->AddItem(kDeveloper);
    (*w)->AddItem(Call("c1"));
    (*w)->AddItem(ToolOutputItem("c1", "ok", false));
    (*w)->AddUsage(Usage{100, 0, 0, 10, 0});
    (*w)->AddCompaction({kDeveloper, MessageInputItem("user", "S")}, 900, 40);
    (*w)->AddUsage(Usage{50, 0, 0, 5, 0});
    (*w)->AddItem(Call("c2"));
  }
  auto loaded = LoadRollout(path);
  ASSERT_TRUE(loaded.ok()) << loaded.message();
  EXPECT_EQ(loaded->items,
            (std::vector<std::string>{kDeveloper, MessageInputItem("user", "S"), Call("c2")}));
  EXPECT_EQ(loaded->compactions, 1);
  EXPECT_EQ(loaded->usage, (Usage{150, 0, 0, 15, 0}));
  std::filesystem::remove_all(home);
}

TEST(Compaction, ACompactedLineWithoutItsHistoryIsCorruption) {
  char tmpl[] = "/tmp/ae-compaction-XXXXXX";
  std::string home = ::mkdtemp(tmpl);
  std::string path = home + "/rollout-x.jsonl";
  {
    std::FILE* f = std::fopen(path.c_str(), "w");
    ASSERT_NE(f, nullptr);
    std::fputs(R"({"type":"session_meta","payload":{"thread_id":"t","cwd":"/w"}})"
               "\n"
               R"({"type":"compacted","payload":{"tokens_before":1}})"
               "\n"
               R"({"type":"usage","payload":{}})"
               "\n",
               f);
    std::fclose(f);
  }
  auto loaded = LoadRollout(path);
  ASSERT_FALSE(loaded.ok());
  EXPECT_EQ(loaded.message(), path + ":2: compacted line without a replacement_history array");
  std::filesystem::remove_all(home);
}

// A client whose summarisation streams text and a retry notice, and which may have a remote
// compaction endpoint.
class SummarisingClient : public ModelClient {
 public:
  std::optional<CompactedOutput> remote;
  std::vector<Prompt> streamed;
  std::vector<Prompt> compacted;
  Result<ModelResponse> Stream(const Prompt& prompt, StreamObserver& observer,
                               CancelToken&) override {
    streamed.push_back(prompt);
    observer.OnRetry(1, 5, "idle timeout");
    observer.OnTextDelta("NOTE");
    OutputItem note;
    note.kind = OutputItem::Kind::kMessage;
    note.text = "NOTE";
    return ModelResponse{"r", {note}, Usage{7, 0, 0, 3, 0}};
  }
  Result<std::optional<CompactedOutput>> Compact(const Prompt& prompt, StreamObserver&,
                                                 CancelToken&) override {
    compacted.push_back(prompt);
    return remote;
  }
};

class RecordingObserver : public StreamObserver {
 public:
  void OnTextDelta(const std::string& d) override { seen.push_back("delta " + d); }
  void OnRetry(int, int, const std::string& reason) override { seen.push_back("retry " + reason); }
  std::vector<std::string> seen;
};

TEST(Compaction, ASummaryIsNotStreamedAsTheAgentsTextButRetriesAreAnnounced) {
  SummarisingClient client;
  RecordingObserver observer;
  CancelToken cancel;
  std::vector<std::string> history = {kDeveloper, MessageInputItem("user", "go"), Call("c1"),
                                      ToolOutputItem("c1", "ok", false)};
  Result<CompactionResult> r = CompactHistory(
      client, history, 1234, CompactionSettings{0, 1000, "thread"}, observer, cancel);
  ASSERT_TRUE(r.ok()) << r.message();
  EXPECT_EQ(observer.seen, std::vector<std::string>{"retry idle timeout"});
  ASSERT_EQ(client.compacted.size(), 1u);  // the remote endpoint was asked first
  ASSERT_EQ(client.streamed.size(), 1u);
  EXPECT_EQ(client.streamed[0].tools_json, "[]");
  EXPECT_EQ(client.streamed[0].prompt_cache_key, "thread");
  EXPECT_FALSE(r->remote);
  EXPECT_EQ(r->tokens_before, 1234);
  EXPECT_EQ(r->history, (std::vector<std::string>{
                            kDeveloper, MessageInputItem("user", "go"),
                            MessageInputItem("user", std::string(kSummaryPrefix) + "\nNOTE")}));
  EXPECT_EQ(r->tokens_after, EstimateTokens(r->history));
  EXPECT_EQ(r->usage, (Usage{7, 0, 0, 3, 0}));
}

TEST(Compaction, TheProvidersEndpointIsUsedWhenItHasOne) {
  SummarisingClient client;
  const std::string compaction = R"({"type":"compaction","id":"cmp_1","encrypted_content":"E"})";
  client.remote =
      CompactedOutput{{MessageInputItem("user", "go"), compaction}, Usage{9, 0, 0, 1, 0}};
  RecordingObserver observer;
  CancelToken cancel;
  std::vector<std::string> history = {kDeveloper, MessageInputItem("user", "go"), Call("c1"),
                                      ToolOutputItem("c1", "ok", false)};
  Result<CompactionResult> r =
      CompactHistory(client, history, 99, CompactionSettings{}, observer, cancel);
  ASSERT_TRUE(r.ok()) << r.message();
  EXPECT_TRUE(client.streamed.empty());
  EXPECT_EQ(client.compacted[0].input, history);  // the compaction prompt is not added
  EXPECT_TRUE(r->remote);
  EXPECT_EQ(r->history,
            (std::vector<std::string>{kDeveloper, MessageInputItem("user", "go"), compaction}));
  EXPECT_EQ(r->usage, (Usage{9, 0, 0, 1, 0}));
}

}  // namespace
}  // namespace ae
