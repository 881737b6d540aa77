// The top-level exception boundary: an exception escaping the session ends the run
// as a failed turn, with well-formed events, never through std::terminate.
#include <gtest/gtest.h>

#include <cstdio>
#include <stdexcept>

#include "outputs/jsonl_sink.h"
#include "runner/run_exec.h"

namespace ae {
namespace {

struct Recorder : EventSink {
  void Emit(const Event& e) override {
    std::string line = EventToJson(e);
    if (!line.empty()) lines.push_back(line);
  }
  std::vector<std::string> lines;
};

struct ThrowsOnThreadStarted : EventSink {
  void Emit(const Event& e) override {
    if (std::holds_alternative<ThreadStarted>(e)) throw std::runtime_error("boom");
  }
};

TEST(RunExecTest, AnEscapedExceptionBecomesTurnFailed) {
  SessionConfig config;
  config.cwd = "/tmp";
  config.ephemeral = true;
  config.sandbox.mode = sandbox::Mode::kDangerFullAccess;
  // A client that can be made, so the run gets as far as thread.started, where the sink throws.
  const std::string script = ::testing::TempDir() + "/run_exec_test_turns.json";
  {
    std::FILE* f = std::fopen(script.c_str(), "w");
    ASSERT_NE(f, nullptr);
    std::fputs(R"({"turns":[{"items":[{"type":"message","text":"hi"}]}]})", f);
    std::fclose(f);
  }
  config.provider.id = "scripted";
  config.provider.wire_api = "scripted";
  config.provider.script = script;
  Recorder recorder;
  ThrowsOnThreadStarted thrower;
  CancelToken cancel;
  SessionResult r = RunSessionGuarded(config, "hi", {&recorder, &thrower}, cancel);
  EXPECT_EQ(r.outcome(), SessionOutcome::kFailed);
  EXPECT_EQ(r.error, "internal error: boom");
  ASSERT_EQ(recorder.lines.size(), 3u);
  EXPECT_EQ(recorder.lines[0].rfind(R"({"type":"thread.started")", 0), 0u);
  EXPECT_EQ(recorder.lines[1], R"({"type":"error","message":"internal error: boom"})");
  EXPECT_EQ(
      recorder.lines[2].rfind(
          R"({"type":"turn.failed","error":{"message":"internal error: boom","code":"model_error"},)",
          0),
      0u)
      << recorder.lines[2];
  std::remove(script.c_str());
}

}  // namespace
}  // namespace ae
