// The provider's key under danger-full-access (docs/CI.md's container fallback): a command
// walks its ancestors' /proc/PID/environ and cmdline, agentexec's included, and must not find
// the key, as root (who can read a non-dumpable process's environ: the value is wiped) or as
// the same unprivileged user (who cannot: agentexec is non-dumpable). The model request still
// carries the key.
#include <gtest/gtest.h>
#include <rapidjson/document.h>
#include <unistd.h>

#include <filesystem>
#include <string>
#include <vector>

#include "tests/support/agentexec_runner.h"
#include "tests/support/test_model_server.h"

namespace ae::e2e {
namespace {

constexpr const char* kKey = "test-key-s3cr3t-4242";
constexpr const char* kHeaderValue = "hdr-s3cr3t-7777";

// Every ancestor of the command: its environ and cmdline, NULs as newlines.
constexpr const char* kPeek = R"(p=$PPID
while [ "$p" -gt 1 ]; do
  echo "== $p"
  tr '\0' '\n' < /proc/$p/environ
  tr '\0' '\n' < /proc/$p/cmdline
  p=$(awk '/^PPid:/{print $2}' /proc/$p/status)
done 2>&1
true
)";

// The output of the one command, as the second request sent it to the model.
std::string PeekOutput(bool unprivileged, std::string* auth, std::string* header, int* exit_code) {
  Workspace ws;
  std::string peek = ws.WriteFile("peek.sh", kPeek);
  std::string script = ws.WriteFile(
      "turns.json", R"({"turns":[{"items":[{"type":"function_call","name":"exec_command",)"
                    R"("arguments":{"cmd":"sh )" +
                        peek +
                        R"("},"call_id":"c1"}]},{"items":[{"type":"message","text":"ok"}]}]})");
  TestModelServer server;
  if (Result<int> port = server.Start(script, {}, 60); !port.ok()) return port.message();
  ws.WriteFile("agentexec-home/config.toml",
               MockProviderConfig(server) +
                   "\n[model_providers.mock.env_http_headers]\nx-extra = \"EXTRA_HEADER_VALUE\"\n");
  RunOptions options;
  options.cwd = ws.repo();
  options.env =
      ws.Env({{"MOCK_KEY", kKey}, {"OPENAI_API_KEY", kKey}, {"EXTRA_HEADER_VALUE", kHeaderValue}});
  if (unprivileged) {
    std::filesystem::permissions(ws.root(), std::filesystem::perms::all);
    for (const auto& entry : std::filesystem::recursive_directory_iterator(ws.root())) {
      std::filesystem::permissions(entry.path(), std::filesystem::perms::all);
    }
    options.wrapper = {"/usr/bin/setpriv", "--reuid=65534", "--regid=65534", "--clear-groups"};
    options.reachable_binary = true;
  }
  RunOutput out =
      RunAgentexec({"--json", "--ephemeral", "-s", "danger-full-access", "find-the-key"}, options);
  *exit_code = out.exit_code;
  std::vector<LoggedRequest> requests = server.Requests();
  if (requests.size() != 2)
    return "requests: " + std::to_string(requests.size()) + "\n" + out.out + out.err;
  *auth = requests[0].headers["authorization"];
  *header = requests[0].headers["x-extra"];
  rapidjson::Document body;
  body.Parse(requests[1].body_json.c_str());
  for (const rapidjson::Value& item : body["input"].GetArray()) {
    if (item.HasMember("output") && item["output"].IsString()) return item["output"].GetString();
  }
  return "no output\n" + requests[1].body_json;
}

TEST(SecretsTest, RootFindsNoKeyInAgentexecsEnviron) {
  if (::geteuid() != 0) GTEST_SKIP() << "needs root (the test as another user is the next one)";
  std::string auth, header;
  int exit_code = -1;
  std::string output = PeekOutput(false, &auth, &header, &exit_code);
  EXPECT_EQ(exit_code, 0);
  EXPECT_EQ(auth, std::string("Bearer ") + kKey);
  EXPECT_EQ(header, kHeaderValue);
  // It did read agentexec's own environ and cmdline (its prompt, the variable names) ...
  EXPECT_NE(output.find("find-the-key"), std::string::npos) << output;
  EXPECT_NE(output.find("\nMOCK_KEY=\n"), std::string::npos) << output;
  // ... and the values are gone.
  EXPECT_EQ(output.find("s3cr3t"), std::string::npos) << output;
}

TEST(SecretsTest, TheSameUnprivilegedUserCannotReadAgentexecsEnviron) {
  if (::geteuid() != 0) GTEST_SKIP() << "needs root to run agentexec as another user";
  std::string auth, header;
  int exit_code = -1;
  std::string output = PeekOutput(true, &auth, &header, &exit_code);
  EXPECT_EQ(exit_code, 0);
  EXPECT_EQ(auth, std::string("Bearer ") + kKey);
  EXPECT_NE(output.find("find-the-key"), std::string::npos) << output;
  EXPECT_NE(output.find("/environ: Permission denied"), std::string::npos) << output;
  EXPECT_EQ(output.find("s3cr3t"), std::string::npos) << output;
}

// A header value from the environment holding a line break is not sent (it would split the
// request into an injected header); the run says so and goes on.
TEST(SecretsTest, AnEnvHeaderValueWithALineBreakIsNotSent) {
  Workspace ws;
  std::string script =
      ws.WriteFile("turns.json", R"({"turns":[{"items":[{"type":"message","text":"ok"}]}]})");
  TestModelServer server;
  Result<int> port = server.Start(script, {}, 60);
  ASSERT_TRUE(port.ok()) << port.message();
  ws.WriteFile("agentexec-home/config.toml",
               MockProviderConfig(server) +
                   "\n[model_providers.mock.env_http_headers]\nx-extra = \"EXTRA_HEADER_VALUE\"\n");
  RunOptions options;
  options.cwd = ws.repo();
  options.env = ws.Env({{"MOCK_KEY", kKey}, {"EXTRA_HEADER_VALUE", "a\r\nx-injected: 1"}});
  RunOutput out = RunAgentexec({"--json", "--ephemeral", "hi"}, options);
  EXPECT_EQ(out.exit_code, 0) << out.err;
  EXPECT_NE(out.out.find(R"("type":"error","message":"env_http_headers: the value of )"
                         R"(`EXTRA_HEADER_VALUE` for header `x-extra` holds a line break; the )"
                         R"(header is not sent"})"),
            std::string::npos)
      << out.out;
  std::vector<LoggedRequest> requests = server.Requests();
  ASSERT_EQ(requests.size(), 1u);
  EXPECT_EQ(requests[0].headers.count("x-injected"), 0u);
  EXPECT_EQ(requests[0].headers.count("x-extra"), 0u);
}

}  // namespace
}  // namespace ae::e2e
