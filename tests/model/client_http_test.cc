// The HTTP wires end to end: real libcurl against tests/support/model_server.py on loopback.
#include <arpa/inet.h>
#include <netinet/in.h>
#include <stdlib.h>
#include <sys/socket.h>
#include <unistd.h>

#include <chrono>
#include <thread>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <rapidjson/document.h>
#include <rapidjson/stringbuffer.h>
#include <rapidjson/writer.h>
#include <functional>

#include "engine/model/client.h"
#include "engine/model/http.h"
#include "engine/model/request.h"
#include "tests/model/test_util.h"
#include "tests/support/test_model_server.h"

namespace ae {
namespace {

using ::testing::HasSubstr;
using ::testing::StartsWith;

constexpr char kKeyVar[] = "AE_TEST_MODEL_KEY";
constexpr char kHighDemand[] =
    "We\xE2\x80\x99re currently experiencing high demand, which may cause temporary errors.";
constexpr char kClosed[] =
    "stream disconnected before completion: stream closed before response.completed";

// Turns every wire can express identically: reasoning with one summary part, one message
// without a phase, function calls.
const char kPortableTurns[] = R"({"turns":[
  {"items":[
     {"type":"reasoning","summary":["Plan: list the files"]},
     {"type":"message","text":"Listing the files."},
     {"type":"function_call","name":"exec_command","arguments":{"cmd":"ls -la"}},
     {"type":"function_call","name":"exec_command","arguments":{"cmd":"pwd"},"call_id":"call_x"}],
   "usage":{"input_tokens":1000,"cached_input_tokens":200,"output_tokens":50,"reasoning_output_tokens":7}},
  {"items":[{"type":"message","text":"All done \u2713 \"quoted\"\n"}],
   "usage":{"input_tokens":1001,"cached_input_tokens":200,"output_tokens":51,"reasoning_output_tokens":0}}
]})";

const char kOneTurn[] = R"({"turns":[
  {"items":[{"type":"message","text":"hello","phase":"final_answer"},
            {"type":"function_call","name":"exec_command","arguments":{"cmd":"true"}}],
   "usage":{"input_tokens":10,"cached_input_tokens":2,"output_tokens":3,"reasoning_output_tokens":1}}
]})";

// The real service refuses an empty model (the strict server too).
ModelOptions TestOptions() {
  ModelOptions options;
  options.model = "test-model";
  return options;
}

// An item without the fields only the service adds (its id, the encrypted reasoning content),
// so items from the scripted wire and the responses wire compare equal.
std::string WithoutServiceFields(const std::string& json) {
  rapidjson::Document doc;
  doc.Parse(json.c_str(), json.size());
  if (doc.HasParseError() || !doc.IsObject()) return json;
  doc.EraseMember("id");  // keeps the order of the other members (RemoveMember would not)
  doc.EraseMember("encrypted_content");
  rapidjson::StringBuffer buf;
  rapidjson::Writer<rapidjson::StringBuffer> w(buf);
  doc.Accept(w);
  return std::string(buf.GetString(), buf.GetSize());
}

class ModelHttpTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    setenv(kKeyVar, "test-key-123", 1);
    // Loopback traffic must never go through a proxy configured on the machine.
    setenv("no_proxy", "127.0.0.1,localhost", 1);
    setenv("NO_PROXY", "127.0.0.1,localhost", 1);
  }

  // Starts the server on `turns` with `faults`.
  void Serve(const std::string& turns, const std::vector<std::string>& faults = {}) {
    auto port = server_.Start(WriteTempFile("turns.json", turns), faults, 60);
    ASSERT_TRUE(port.ok()) << port.message();
  }

  ProviderInfo Provider(const std::string& wire) {
    ProviderInfo p;
    p.id = "mock";
    p.name = "mock";
    p.base_url = server_.base_url();
    p.env_key = kKeyVar;
    p.wire_api = wire;
    p.request_max_retries = 2;
    p.stream_max_retries = 2;
    p.stream_idle_timeout_ms = 20000;
    p.connect_timeout_ms = 5000;
    return p;
  }

  Result<ModelResponse> Run(const ProviderInfo& provider, const Prompt& prompt = UserPrompt()) {
    ModelOptions options;
    options.model = "test-model";
    auto client = MakeModelClient(provider, options);
    if (!client) return client.error();
    return (*client)->Stream(prompt, observer_, cancel_);
  }

  // One request to a server of its own (a loop over wires or faults needs a fresh one each
  // time), started on `turns` with `faults`; `adjust` changes the provider first, `obs` sees
  // the retries.
  Result<ModelResponse> StreamOnce(TestModelServer& server, const std::string& wire,
                                   const std::string& turns, const std::vector<std::string>& faults,
                                   RecordingObserver& obs,
                                   const std::function<void(ProviderInfo&)>& adjust = {}) {
    Result<int> port = server.Start(WriteTempFile("t.json", turns), faults, 60);
    if (!port.ok()) return port.error();
    ProviderInfo p = Provider(wire);
    p.base_url = server.base_url();
    if (adjust) adjust(p);
    auto client = MakeModelClient(p, TestOptions());
    if (!client.ok()) return client.error();
    return (*client)->Stream(UserPrompt(), obs, cancel_);
  }

  static Prompt UserPrompt() {
    Prompt p;
    p.input = {R"({"type":"message","role":"user","content":[{"type":"input_text","text":"hi"}]})"};
    p.tools_json =
        R"([{"type":"function","name":"exec_command","description":"Run.","strict":false,"parameters":{"type":"object","properties":{"cmd":{"type":"string"}},"required":["cmd"]}}])";
    return p;
  }

  std::string Url(const std::string& path) { return server_.base_url() + path; }

  TestModelServer server_;
  RecordingObserver observer_;
  CancelToken cancel_;
};

// --- the happy path -------------------------------------------------------------------------

TEST_F(ModelHttpTest, ResponsesTurnItemsUsageDeltasAndRequest) {
  Serve(kOneTurn);
  ProviderInfo p = Provider("responses");
  p.http_headers = {{"X-Custom", "v1"}};
  p.env_http_headers = {{"X-Env", "AE_TEST_ENV_HEADER"}, {"X-Unset", "AE_TEST_UNSET_HEADER"}};
  p.query_params = {{"api-version", "2025-01-01"}, {"a b", "c&d"}};
  setenv("AE_TEST_ENV_HEADER", "from-env", 1);
  unsetenv("AE_TEST_UNSET_HEADER");
  auto r = Run(p);
  ASSERT_TRUE(r.ok()) << r.message();
  EXPECT_EQ(r->id, "resp_1");
  ASSERT_EQ(r->items.size(), 2u);
  EXPECT_EQ(r->items[0].kind, OutputItem::Kind::kMessage);
  EXPECT_EQ(r->items[0].text, "hello");
  EXPECT_EQ(r->items[0].phase, "final_answer");
  EXPECT_EQ(r->items[1].kind, OutputItem::Kind::kFunctionCall);
  EXPECT_EQ(
      r->items[1].raw_json,
      R"({"id":"fc_1_1","type":"function_call","name":"exec_command","arguments":"{\"cmd\":\"true\"}","call_id":"call_1_1"})");
  EXPECT_EQ(r->usage.input_tokens, 10);
  EXPECT_EQ(r->usage.cached_input_tokens, 2);
  EXPECT_EQ(r->usage.output_tokens, 3);
  EXPECT_EQ(r->usage.reasoning_output_tokens, 1);
  EXPECT_EQ(observer_.deltas, std::vector<std::string>{"hello"});
  EXPECT_TRUE(observer_.retries.empty());

  auto log = server_.Requests();
  ASSERT_EQ(log.size(), 1u);
  EXPECT_EQ(log[0].path, "/v1/responses?a%20b=c%26d&api-version=2025-01-01");
  EXPECT_EQ(log[0].headers["authorization"], "Bearer test-key-123");
  EXPECT_EQ(log[0].headers["accept"], "text/event-stream");
  EXPECT_EQ(log[0].headers["content-type"], "application/json");
  EXPECT_EQ(log[0].headers["x-custom"], "v1");
  EXPECT_EQ(log[0].headers["x-env"], "from-env");
  EXPECT_EQ(log[0].headers.count("x-unset"), 0u);
  EXPECT_THAT(log[0].headers["user-agent"], StartsWith("agentexec/"));
  // The body on the wire is the one BuildResponsesRequest makes.
  ModelOptions options;
  options.model = "test-model";
  rapidjson::Document sent, expected;
  sent.Parse(log[0].body_json.c_str());
  expected.Parse(BuildResponsesRequest(options, UserPrompt()).c_str());
  EXPECT_TRUE(sent == expected) << log[0].body_json;
}

TEST_F(ModelHttpTest, ChatTurnRequestBodyIsTheChatMapping) {
  Serve(kPortableTurns);
  auto r = Run(Provider("chat"));
  ASSERT_TRUE(r.ok()) << r.message();
  auto log = server_.Requests();
  ASSERT_EQ(log.size(), 1u);
  EXPECT_EQ(log[0].path, "/v1/chat/completions");
  EXPECT_EQ(log[0].headers["authorization"], "Bearer test-key-123");
  ModelOptions options;
  options.model = "test-model";
  rapidjson::Document sent, expected;
  sent.Parse(log[0].body_json.c_str());
  expected.Parse(BuildChatRequest(options, UserPrompt())->c_str());
  EXPECT_TRUE(sent == expected) << log[0].body_json;
}

struct Observed {
  std::vector<std::vector<OutputItem>> items;
  std::vector<Usage> usage;
  std::vector<std::string> deltas;
};

void ExpectSameItems(const std::vector<OutputItem>& a, const std::vector<OutputItem>& b,
                     const std::string& what) {
  ASSERT_EQ(a.size(), b.size()) << what;
  for (size_t i = 0; i < a.size(); ++i) {
    EXPECT_EQ(a[i].kind, b[i].kind) << what << " item " << i;
    EXPECT_EQ(WithoutServiceFields(a[i].raw_json), WithoutServiceFields(b[i].raw_json))
        << what << " item " << i;
    EXPECT_EQ(a[i].text, b[i].text) << what << " item " << i;
    EXPECT_EQ(a[i].phase, b[i].phase) << what << " item " << i;
    EXPECT_EQ(a[i].call_id, b[i].call_id) << what << " item " << i;
    EXPECT_EQ(a[i].name, b[i].name) << what << " item " << i;
    EXPECT_EQ(a[i].arguments, b[i].arguments) << what << " item " << i;
    EXPECT_EQ(a[i].query, b[i].query) << what << " item " << i;
  }
}

TEST_F(ModelHttpTest, AllThreeWiresProduceTheSameItemsUsageAndDeltas) {
  const std::string turns_path = WriteTempFile("portable.json", kPortableTurns);
  std::map<std::string, Observed> seen;
  for (const std::string wire : {"scripted", "responses", "chat"}) {
    TestModelServer server;
    ProviderInfo p;
    if (wire == "scripted") {
      p.wire_api = "scripted";
      p.script = turns_path;
    } else {
      auto port = server.Start(turns_path, {}, 60);
      ASSERT_TRUE(port.ok()) << port.message();
      p.base_url = server.base_url();
      p.env_key = kKeyVar;
      p.wire_api = wire;
    }
    ModelOptions options;
    options.model = "m";
    auto client = MakeModelClient(p, options);
    ASSERT_TRUE(client.ok()) << client.message();
    RecordingObserver obs;
    Prompt prompt = UserPrompt();
    Observed& o = seen[wire];
    for (int turn = 0; turn < 2; ++turn) {
      auto r = (*client)->Stream(prompt, obs, cancel_);
      ASSERT_TRUE(r.ok()) << wire << ": " << r.message();
      for (const auto& item : r->items) {
        prompt.input.push_back(item.raw_json);
        if (item.kind == OutputItem::Kind::kFunctionCall) {
          prompt.input.push_back(R"({"type":"function_call_output","call_id":")" + item.call_id +
                                 R"(","output":"ok"})");
        }
      }
      o.items.push_back(r->items);
      o.usage.push_back(r->usage);
    }
    o.deltas = obs.deltas;
    EXPECT_TRUE(obs.retries.empty()) << wire;
    if (wire != "scripted") {
      auto log = server.Requests();
      ASSERT_EQ(log.size(), 2u) << wire;
      // The second request replays the first turn's items and the tool outputs.
      EXPECT_THAT(log[1].body_json, HasSubstr("call_x")) << wire;
      EXPECT_THAT(log[1].body_json, HasSubstr("Listing the files.")) << wire;
    }
  }
  ASSERT_EQ(seen["scripted"].items.size(), 2u);
  EXPECT_EQ(seen["scripted"].items[0].size(), 4u);
  for (const std::string wire : {"responses", "chat"}) {
    for (size_t t = 0; t < 2; ++t) {
      ExpectSameItems(seen["scripted"].items[t], seen[wire].items[t],
                      wire + " turn " + std::to_string(t + 1));
      const Usage& a = seen["scripted"].usage[t];
      const Usage& b = seen[wire].usage[t];
      EXPECT_EQ(a.input_tokens, b.input_tokens) << wire;
      EXPECT_EQ(a.cached_input_tokens, b.cached_input_tokens) << wire;
      EXPECT_EQ(a.output_tokens, b.output_tokens) << wire;
      EXPECT_EQ(a.reasoning_output_tokens, b.reasoning_output_tokens) << wire;
    }
    EXPECT_EQ(seen["scripted"].deltas, seen[wire].deltas) << wire;
  }
  EXPECT_EQ(seen["chat"].usage[0].input_tokens, 1000);
  EXPECT_EQ(seen["chat"].usage[0].cached_input_tokens, 200);
  EXPECT_EQ(seen["chat"].usage[0].reasoning_output_tokens, 7);
}

TEST_F(ModelHttpTest, ChatCustomToolCallArrivesAsFunctionCallWithInput) {
  Serve(
      R"({"turns":[{"items":[{"type":"custom_tool_call","name":"apply_patch","input":"*** Begin Patch\n*** End Patch\n"}]}]})");
  auto r = Run(Provider("chat"));
  ASSERT_TRUE(r.ok()) << r.message();
  ASSERT_EQ(r->items.size(), 1u);
  EXPECT_EQ(r->items[0].kind, OutputItem::Kind::kFunctionCall);
  EXPECT_EQ(r->items[0].name, "apply_patch");
  EXPECT_EQ(r->items[0].call_id, "call_1_0");
  EXPECT_EQ(r->items[0].arguments, R"({"input":"*** Begin Patch\n*** End Patch\n"})");
}

// --- keys and wires -------------------------------------------------------------------------

TEST_F(ModelHttpTest, MissingKeyFailsBeforeAnyRequest) {
  Serve(kOneTurn);
  for (const std::string wire : {"responses", "chat"}) {
    ProviderInfo p = Provider(wire);
    p.env_key = "AE_TEST_MISSING_KEY";
    unsetenv("AE_TEST_MISSING_KEY");
    auto r = Run(p);
    ASSERT_FALSE(r.ok());
    EXPECT_EQ(r.message(), "Missing environment variable: `AE_TEST_MISSING_KEY`.");
    setenv("AE_TEST_MISSING_KEY", "", 1);
    EXPECT_EQ(Run(p).message(), "Missing environment variable: `AE_TEST_MISSING_KEY`.");
    unsetenv("AE_TEST_MISSING_KEY");
  }
  EXPECT_EQ(server_.RequestCount(), 0);
}

TEST_F(ModelHttpTest, OpenAiKeyPrecedence) {
  Serve(R"({"turns":[{"items":[]},{"items":[]},{"items":[]},{"items":[]}]})");
  ProviderInfo p = Provider("responses");
  p.id = "openai";
  p.env_key = "AE_TEST_OPENAI_KEY";
  setenv("AE_TEST_OPENAI_KEY", "test-openai", 1);
  setenv("AGENTEXEC_API_KEY", "test-agentexec", 1);
  setenv("CODEX_API_KEY", "test-codex", 1);
  ASSERT_TRUE(Run(p).ok());
  unsetenv("AGENTEXEC_API_KEY");
  ASSERT_TRUE(Run(p).ok());
  unsetenv("CODEX_API_KEY");
  ASSERT_TRUE(Run(p).ok());
  // Other providers use only their own env_key.
  setenv("AGENTEXEC_API_KEY", "test-agentexec", 1);
  p.id = "mock";
  ASSERT_TRUE(Run(p).ok());
  unsetenv("AGENTEXEC_API_KEY");
  unsetenv("AE_TEST_OPENAI_KEY");
  auto log = server_.Requests();
  ASSERT_EQ(log.size(), 4u);
  EXPECT_EQ(log[0].headers["authorization"], "Bearer test-agentexec");
  EXPECT_EQ(log[1].headers["authorization"], "Bearer test-codex");
  EXPECT_EQ(log[2].headers["authorization"], "Bearer test-openai");
  EXPECT_EQ(log[3].headers["authorization"], "Bearer test-openai");
}

TEST_F(ModelHttpTest, NoEnvKeyMeansNoAuthorizationHeader) {
  Serve(kOneTurn);
  ProviderInfo p = Provider("responses");
  p.env_key.clear();
  ASSERT_TRUE(Run(p).ok());
  EXPECT_EQ(server_.Requests().at(0).headers.count("authorization"), 0u);
}

TEST_F(ModelHttpTest, UnknownWireIsAnError) {
  ProviderInfo p;
  p.id = "mock";
  p.wire_api = "grpc";
  auto client = MakeModelClient(p, TestOptions());
  ASSERT_FALSE(client.ok());
  EXPECT_EQ(
      client.message(),
      "model provider `mock`: unknown wire_api `grpc` (expected responses, chat or scripted)");
}

// --- HTTP status faults ---------------------------------------------------------------------

TEST_F(ModelHttpTest, ServerErrorsAreRetriedSilentlyByTheInnerLayer) {
  Serve(kOneTurn, {"status=500:count=2"});
  auto r = Run(Provider("responses"));
  ASSERT_TRUE(r.ok()) << r.message();
  EXPECT_EQ(r->items.size(), 2u);
  EXPECT_TRUE(observer_.retries.empty());
  EXPECT_EQ(server_.RequestCount(), 3);
}

TEST_F(ModelHttpTest, PersistentHttp500FailsWithCodexWording) {
  Serve(kOneTurn, {"status=500"});
  ProviderInfo p = Provider("responses");
  p.request_max_retries = 1;
  p.stream_max_retries = 1;
  auto r = Run(p);
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.message(), kHighDemand);
  EXPECT_EQ(observer_.retries,
            std::vector<std::string>{std::string("Reconnecting... 1/1 (") + kHighDemand + ")"});
  EXPECT_EQ(server_.RequestCount(), 4);  // 2 outer attempts x 2 inner
}

TEST_F(ModelHttpTest, PersistentHttp503NamesStatusMessageAndUrl) {
  Serve(kOneTurn, {"status=503:message=boom"});
  ProviderInfo p = Provider("chat");
  p.request_max_retries = 0;
  p.stream_max_retries = 1;
  auto r = Run(p);
  ASSERT_FALSE(r.ok());
  const std::string reason =
      "unexpected status 503 Service Unavailable: boom, url: " + Url("/chat/completions");
  EXPECT_EQ(r.message(), reason);
  EXPECT_EQ(observer_.retries, std::vector<std::string>{"Reconnecting... 1/1 (" + reason + ")"});
  EXPECT_EQ(server_.RequestCount(), 2);
}

TEST_F(ModelHttpTest, TooManyRequestsHonoursRetryAfter) {
  Serve(kOneTurn, {"status=429:retry_after=1:count=1"});
  const auto start = std::chrono::steady_clock::now();
  auto r = Run(Provider("responses"));
  const auto waited = std::chrono::steady_clock::now() - start;
  ASSERT_TRUE(r.ok()) << r.message();
  EXPECT_EQ(observer_.retries,
            std::vector<std::string>{
                "Reconnecting... 1/2 (exceeded retry limit, last status: 429 Too Many Requests)"});
  EXPECT_EQ(server_.RequestCount(), 2);
  // Retry-After: 1 is a floor on the wait (never a ceiling: machines are slow).
  EXPECT_GE(waited, std::chrono::milliseconds(1000));
}

TEST_F(ModelHttpTest, PersistentTooManyRequestsFails) {
  Serve(kOneTurn, {"status=429:retry_after=0"});
  ProviderInfo p = Provider("responses");
  p.stream_max_retries = 1;
  auto r = Run(p);
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.message(), "exceeded retry limit, last status: 429 Too Many Requests");
  EXPECT_EQ(observer_.retries.size(), 1u);
  EXPECT_EQ(server_.RequestCount(), 2);  // 429 is not retried by the inner layer
}

TEST_F(ModelHttpTest, BadRequestFailsAtOnceWithTheServerBody) {
  Serve(kOneTurn, {"status=400:message=Invalid request%3A bad thing"});
  auto r = Run(Provider("responses"));
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.message(),
            R"({"error":{"message":"Invalid request: bad thing","type":"test_error"}})");
  EXPECT_TRUE(observer_.retries.empty());
  EXPECT_EQ(server_.RequestCount(), 1);
}

TEST_F(ModelHttpTest, OtherClientErrorsFailAtOnce) {
  Serve(kOneTurn, {"status=401:message=Incorrect API key provided"});
  auto r = Run(Provider("responses"));
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.message(), "unexpected status 401 Unauthorized: Incorrect API key provided, url: " +
                             Url("/responses") +
                             " (the API key came from the environment variable "
                             "`AE_TEST_MODEL_KEY`)");
  EXPECT_TRUE(observer_.retries.empty());
  EXPECT_EQ(server_.RequestCount(), 1);
}

TEST_F(ModelHttpTest, NonStreamAnswerFailsAtOnce) {
  Serve(kOneTurn, {"content_type=application/json"});
  auto r = Run(Provider("responses"));
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.message(),
            "unexpected content type `application/json` from " + Url("/responses") +
                R"( (expected text/event-stream): {"error":{"message":"not a stream"}})");
  EXPECT_TRUE(observer_.retries.empty());
  EXPECT_EQ(server_.RequestCount(), 1);
}

TEST_F(ModelHttpTest, NoTurnLeftIsTheServersBadRequest) {
  Serve(R"({"turns":[]})");
  auto r = Run(Provider("chat"));
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(
      r.message(),
      R"x({"error":{"message":"model_server: no turn left for request 1 (script has 0 turns)","type":"invalid_request_error"}})x");
}

TEST_F(ModelHttpTest, ConnectionRefusedIsRetriedThenFails) {
  int fd = socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  ASSERT_EQ(bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr), 0);
  socklen_t len = sizeof addr;
  getsockname(fd, reinterpret_cast<sockaddr*>(&addr), &len);
  close(fd);  // nothing listens there now
  ProviderInfo p;
  p.id = "mock";
  p.wire_api = "responses";
  p.base_url = "http://127.0.0.1:" + std::to_string(ntohs(addr.sin_port)) + "/v1";
  p.request_max_retries = 1;
  p.stream_max_retries = 1;
  auto r = Run(p);
  ASSERT_FALSE(r.ok());
  const std::string host = "127.0.0.1:" + std::to_string(ntohs(addr.sin_port));
  EXPECT_THAT(r.message(),
              StartsWith("cannot reach " + host + " (Failed to connect to 127.0.0.1 port"));
  ASSERT_EQ(observer_.retries.size(), 1u);
  EXPECT_THAT(observer_.retries[0], StartsWith("Reconnecting... 1/1 (cannot reach " + host));
}

// --- stream faults --------------------------------------------------------------------------

TEST_F(ModelHttpTest, DroppedStreamIsRetriedAndItemsAreNotDuplicated) {
  for (const std::string wire : {"responses", "chat"}) {
    TestModelServer server;
    RecordingObserver obs;
    auto r = StreamOnce(server, wire, kPortableTurns, {"drop_after_items=2:requests=1"}, obs);
    ASSERT_TRUE(r.ok()) << wire << ": " << r.message();
    EXPECT_EQ(r->items.size(), 4u) << wire;
    const std::string reason =
        wire == "chat" ? "stream closed before [DONE]" : "stream closed before response.completed";
    EXPECT_EQ(obs.retries,
              std::vector<std::string>{
                  "Reconnecting... 1/2 (stream disconnected before completion: " + reason + ")"})
        << wire;
    EXPECT_EQ(server.RequestCount(), 2) << wire;
  }
}

TEST_F(ModelHttpTest, StreamThatAlwaysBreaksFailsAfterStreamMaxRetries) {
  Serve(kOneTurn, {"drop_after_items=1"});
  auto r = Run(Provider("responses"));
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.message(), kClosed);
  EXPECT_EQ(observer_.retries,
            (std::vector<std::string>{std::string("Reconnecting... 1/2 (") + kClosed + ")",
                                      std::string("Reconnecting... 2/2 (") + kClosed + ")"}));
  EXPECT_EQ(server_.RequestCount(), 3);
}

TEST_F(ModelHttpTest, ResponseFailedIsRetried) {
  for (const std::string wire : {"responses", "chat"}) {
    TestModelServer server;
    RecordingObserver obs;
    auto r = StreamOnce(server, wire, kOneTurn, {"failed=The model failed.:requests=1"}, obs);
    ASSERT_TRUE(r.ok()) << wire << ": " << r.message();
    EXPECT_EQ(obs.retries,
              std::vector<std::string>{"Reconnecting... 1/2 (stream disconnected before "
                                       "completion: The model failed.)"})
        << wire;
  }
}

TEST_F(ModelHttpTest, ScriptedFailTurnFailsEveryAttempt) {
  Serve(R"({"turns":[{"fail":"simulated failure"}]})");
  ProviderInfo p = Provider("responses");
  p.stream_max_retries = 1;
  auto r = Run(p);
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.message(), "stream disconnected before completion: simulated failure");
  EXPECT_EQ(observer_.retries.size(), 1u);
}

TEST_F(ModelHttpTest, MalformedEventFailsTheAttemptNeverHalfParsed) {
  for (const std::string wire : {"responses", "chat"}) {
    TestModelServer server;
    RecordingObserver obs;
    auto r = StreamOnce(server, wire, kPortableTurns, {"garbage:requests=1"}, obs);
    ASSERT_TRUE(r.ok()) << wire << ": " << r.message();
    EXPECT_EQ(r->items.size(), 4u);
    EXPECT_EQ(obs.retries,
              std::vector<std::string>{
                  "Reconnecting... 1/2 (stream disconnected before completion: malformed JSON in "
                  "server-sent event (offset 1: Missing a name for object member.))"})
        << wire;
  }
}

TEST_F(ModelHttpTest, IdleStreamTimesOutAndIsRetried) {
  for (const std::string fault :
       {"stall_after_headers=30:requests=1", "stall_before_headers=30:requests=1"}) {
    TestModelServer server;
    RecordingObserver obs;
    auto r = StreamOnce(server, "responses", kOneTurn, {fault}, obs, [](ProviderInfo& p) {
      p.stream_idle_timeout_ms = 500;
      p.stream_max_retries = 4;  // room for a slow machine to idle out once more
    });
    ASSERT_TRUE(r.ok()) << fault << ": " << r.message();
    EXPECT_EQ(r->items.size(), 2u);
    ASSERT_FALSE(obs.retries.empty()) << fault;
    // Before the head the (longer) header bound applies: twice the idle timeout.
    const std::string why = fault.rfind("stall_before", 0) == 0
                                ? "timeout waiting for response headers"
                                : "idle timeout waiting for SSE";
    EXPECT_EQ(obs.retries[0],
              "Reconnecting... 1/4 (stream disconnected before completion: " + why + ")")
        << fault;
  }
}

TEST_F(ModelHttpTest, CommentKeepAliveAndByteDribbleDoNotKeepAStreamAlive) {
  // The idle timeout counts complete events: an SSE comment every second, or one byte a
  // second, is not progress. Without that both faults would hold the request for 30 s.
  for (const std::string fault : {"comment_keepalive=30:requests=1", "dribble=30:requests=1"}) {
    TestModelServer server;
    RecordingObserver obs;
    auto r = StreamOnce(server, "responses", kOneTurn, {fault}, obs, [](ProviderInfo& p) {
      p.stream_idle_timeout_ms = 2500;
      p.stream_max_retries = 2;
    });
    ASSERT_TRUE(r.ok()) << fault << ": " << r.message();
    EXPECT_EQ(r->items.size(), 2u) << fault;
    EXPECT_EQ(obs.retries,
              std::vector<std::string>{"Reconnecting... 1/2 (stream disconnected before "
                                       "completion: idle timeout waiting for SSE)"})
        << fault;
    EXPECT_EQ(server.RequestCount(), 2) << fault;
  }
}

TEST_F(ModelHttpTest, InsufficientQuotaFailsAtOnceAndSaysWhatToDo) {
  Serve(kOneTurn, {"status=429:code=insufficient_quota:message=You exceeded your current quota."});
  auto r = Run(Provider("responses"));
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.message(), "Quota exceeded. Check your plan and billing details.");
  EXPECT_TRUE(observer_.retries.empty());
  EXPECT_EQ(server_.RequestCount(), 1);
}

// The same quota, reported inside the stream (response.failed) rather than as a 429: the same
// message and code, no retry, and not worded as a broken stream.
TEST_F(ModelHttpTest, InsufficientQuotaInTheStreamReadsAsTheQuotaMessage) {
  Serve(kOneTurn, {"failed=You exceeded your current quota.:code=insufficient_quota"});
  auto r = Run(Provider("responses"));
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.message(), "Quota exceeded. Check your plan and billing details.");
  EXPECT_EQ(r.error().code, "rate_limited");
  EXPECT_TRUE(observer_.retries.empty());
  EXPECT_EQ(server_.RequestCount(), 1);
}

TEST_F(ModelHttpTest, RateLimitHintsAreHonoured) {
  // retry-after-ms, then the x-ratelimit-reset-* headers: each is a floor on the wait.
  for (const std::string hint :
       {"retry_after_ms=1200", "reset_requests=1s200ms", "reset_tokens=1.2s"}) {
    TestModelServer server;
    ASSERT_TRUE(server
                    .Start(WriteTempFile("t.json", kOneTurn),
                           {"status=429:count=1:code=rate_limit_exceeded:" + hint}, 60)
                    .ok());
    ProviderInfo p = Provider("responses");
    p.base_url = server.base_url();
    RecordingObserver obs;
    auto client = MakeModelClient(p, TestOptions());
    ASSERT_TRUE(client.ok());
    const auto start = std::chrono::steady_clock::now();
    auto r = (*client)->Stream(UserPrompt(), obs, cancel_);
    const auto waited = std::chrono::steady_clock::now() - start;
    ASSERT_TRUE(r.ok()) << hint << ": " << r.message();
    EXPECT_EQ(obs.retries.size(), 1u) << hint;
    EXPECT_GE(waited, std::chrono::milliseconds(1200)) << hint;
  }
}

TEST_F(ModelHttpTest, ContextLengthExceededIsRecognisable) {
  Serve(kOneTurn, {"status=400:code=context_length_exceeded:message=Too long."});
  auto r = Run(Provider("responses"));
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.message(), std::string(kContextWindowExceeded) + " (Too long.)");
  EXPECT_TRUE(IsContextWindowExceeded(r.error()));
  EXPECT_TRUE(observer_.retries.empty());
}

// Every failure carries the code the turn fails with (Error::code, turn.failed's error.code),
// from the HTTP status, the error body's `code` or the stream's error event, never from the
// message text: the last cases only mention codes in their messages.
TEST_F(ModelHttpTest, FailuresCarryTheirErrorCode) {
  struct Case {
    const char* wire;
    std::string fault;
    const char* code;
  } cases[] = {
      {"responses", "status=401", "auth"},
      {"responses", "status=403", "auth"},
      {"responses", "status=400:code=invalid_api_key", "auth"},
      {"responses", "status=429", "rate_limited"},
      {"responses", "status=429:code=insufficient_quota", "rate_limited"},
      {"responses", "status=400:code=context_length_exceeded", "context_length"},
      {"responses", "failed=Too long.:code=context_length_exceeded", "context_length"},
      {"responses", "failed=Slow down.:code=rate_limit_exceeded", "rate_limited"},
      {"chat", "status=429", "rate_limited"},
      {"chat", "failed=Too long.:code=context_length_exceeded", "context_length"},
      {"responses", "status=500", ""},
      {"responses", "failed=The model failed.", ""},
      {"responses", "status=400:message=429 Too Many Requests insufficient_quota", ""},
      {"responses", "status=418:message=401 Unauthorized context_length_exceeded", ""},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(std::string(c.wire) + " " + c.fault);
    TestModelServer server;
    RecordingObserver obs;
    auto r = StreamOnce(server, c.wire, kOneTurn, {c.fault}, obs, [](ProviderInfo& p) {
      p.request_max_retries = 0;
      p.stream_max_retries = 0;
    });
    ASSERT_FALSE(r.ok());
    EXPECT_EQ(r.error().code, c.code) << r.message();
  }
  // A missing key is found before any request.
  ProviderInfo p = Provider("responses");
  p.env_key = "AE_TEST_MISSING_KEY";
  unsetenv("AE_TEST_MISSING_KEY");
  EXPECT_EQ(Run(p).error().code, "auth");
}

TEST_F(ModelHttpTest, RequestsIdentifyTheClientAndTheThread) {
  Serve(kOneTurn);
  Prompt prompt = UserPrompt();
  prompt.prompt_cache_key = "01a2012f-70ea-7213-b1a9-6556316d14f8";
  auto r = Run(Provider("responses"), prompt);
  ASSERT_TRUE(r.ok()) << r.message();
  r = Run(Provider("responses"), prompt);  // no turn left: only the headers matter
  auto log = server_.Requests();
  ASSERT_EQ(log.size(), 2u);
  EXPECT_EQ(log[0].headers["originator"], "agentexec");
  EXPECT_EQ(log[0].headers["session_id"], prompt.prompt_cache_key);
  EXPECT_EQ(log[0].headers["x-client-request-id"].size(), 36u);
  EXPECT_NE(log[0].headers["x-client-request-id"], log[1].headers["x-client-request-id"]);
  EXPECT_EQ(log[0].headers["user-agent"], UserAgent());
  EXPECT_THAT(UserAgent(),
              testing::MatchesRegex(R"(agentexec/[0-9.]+ \(Linux [^;]+; [a-z0-9_]+\))"));
  rapidjson::Document body;
  body.Parse(log[0].body_json.c_str());
  EXPECT_STREQ(body["prompt_cache_key"].GetString(), prompt.prompt_cache_key.c_str());
}

// codex's override of the originator header is honoured; one that could end the header is not.
TEST_F(ModelHttpTest, OriginatorOverrideReplacesTheHeaderAsInCodex) {
  Serve(kOneTurn);
  setenv("CODEX_INTERNAL_ORIGINATOR_OVERRIDE", "codex_exec_override", 1);
  auto r = Run(Provider("responses"));
  ASSERT_TRUE(r.ok()) << r.message();
  setenv("CODEX_INTERNAL_ORIGINATOR_OVERRIDE", "x\r\ninjected: 1", 1);
  r = Run(Provider("responses"));  // no turn left: only the headers matter
  unsetenv("CODEX_INTERNAL_ORIGINATOR_OVERRIDE");
  auto log = server_.Requests();
  ASSERT_EQ(log.size(), 2u);
  EXPECT_EQ(log[0].headers["originator"], "codex_exec_override");
  EXPECT_EQ(log[1].headers["originator"], "agentexec");
  EXPECT_EQ(log[1].headers.count("injected"), 0u);
}

TEST_F(ModelHttpTest, ShortStallWithinTheIdleTimeoutIsFine) {
  Serve(kOneTurn, {"stall_after_headers=0.3:requests=1"});
  auto r = Run(Provider("responses"));
  ASSERT_TRUE(r.ok()) << r.message();
  EXPECT_TRUE(observer_.retries.empty());
  EXPECT_EQ(server_.RequestCount(), 1);
}

TEST_F(ModelHttpTest, CancellationAbortsAStalledTransferPromptly) {
  Serve(kOneTurn, {"stall_before_headers=50"});
  ProviderInfo p = Provider("responses");
  p.stream_idle_timeout_ms = 100000;
  std::thread canceller([this] {
    std::this_thread::sleep_for(std::chrono::milliseconds(300));
    cancel_.Cancel(CancelReason::kSigint);
  });
  const auto start = std::chrono::steady_clock::now();
  auto r = Run(p);
  const auto took = std::chrono::steady_clock::now() - start;
  canceller.join();
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.message(), "model request cancelled");
  EXPECT_TRUE(observer_.retries.empty());
  // The server stalls for 50 s; returning long before that shows the abort was not waited out.
  EXPECT_LT(took, std::chrono::seconds(25));
}

TEST_F(ModelHttpTest, CancellationInterruptsTheBackOff) {
  Serve(kOneTurn, {"status=500"});
  ProviderInfo p = Provider("responses");
  p.request_max_retries = 12;  // back-offs sum to many minutes
  std::thread canceller([this] {
    std::this_thread::sleep_for(std::chrono::milliseconds(700));
    cancel_.Cancel(CancelReason::kTimeout);
  });
  auto r = Run(p);
  canceller.join();
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.message(), "model request cancelled");
}

}  // namespace
}  // namespace ae
