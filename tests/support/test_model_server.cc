#include "tests/support/test_model_server.h"

#include <signal.h>
#include <stdlib.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <thread>

#include <fmt/format.h>
#include <rapidjson/document.h>
#include <rapidjson/stringbuffer.h>
#include <rapidjson/writer.h>

#include "base/child.h"

namespace ae {
namespace {

std::string ReadAll(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

}  // namespace

std::string MockProviderConfig(const TestModelServer& server, const MockProvider& provider) {
  return fmt::format(
      "model_provider = \"mock\"\n"
      "[model_providers.mock]\n"
      "name = \"mock\"\n"
      "base_url = \"{}\"\n"
      "env_key = \"MOCK_KEY\"\n"
      "wire_api = \"{}\"\n"
      "request_max_retries = {}\n"
      "stream_max_retries = {}\n"
      "stream_idle_timeout_ms = {}\n",
      server.base_url(), provider.wire, provider.request_max_retries, provider.stream_max_retries,
      provider.stream_idle_timeout_ms);
}

TestModelServer::TestModelServer(std::string server_py) : server_py_(std::move(server_py)) {}

TestModelServer::~TestModelServer() {
  Stop();
  if (!dir_.empty()) {
    std::error_code ec;
    std::filesystem::remove_all(dir_, ec);
  }
}

Result<int> TestModelServer::Start(const std::string& script_path,
                                   const std::vector<std::string>& faults, double max_seconds) {
  if (pid_ > 0) return MakeError("test model server already started");
  if (dir_.empty()) {
    std::string tmpl = (std::filesystem::temp_directory_path() / "ae-model-server-XXXXXX").string();
    if (!mkdtemp(tmpl.data())) {
      return MakeError(fmt::format("mkdtemp {}: {}", tmpl, std::strerror(errno)));
    }
    dir_ = tmpl;
  }
  const std::string port_file = dir_ + "/port";
  std::vector<std::string> args = {
      "python3", server_py_,  "--script",    script_path,     "--port-file",
      port_file, "--log-dir", dir_ + "/log", "--max-seconds", fmt::format("{}", max_seconds)};
  for (const auto& f : faults) {
    args.push_back("--fault");
    args.push_back(f);
  }
  std::vector<char*> argv;
  for (auto& a : args) argv.push_back(a.data());
  argv.push_back(nullptr);
  const pid_t parent = getpid();
  pid_t pid = fork();
  if (pid < 0) return MakeError(fmt::format("fork: {}", std::strerror(errno)));
  if (pid == 0) {
    // The server dies with the test: a test that aborts must not leave it holding ctest's
    // output pipe (ctest then waits for its timeout).
    const char* step = "";
    int err = 0;
    if (!EnterOwnGroupTiedToParent(parent, 127, &step, &err)) _exit(126);
    execvp("python3", argv.data());
    _exit(127);
  }
  pid_ = pid;
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(20);
  while (std::chrono::steady_clock::now() < deadline) {
    std::string text = ReadAll(port_file);
    if (!text.empty() && text.back() == '\n') {
      port_ = std::atoi(text.c_str());
      return port_;
    }
    int status = 0;
    if (waitpid(pid_, &status, WNOHANG) == pid_) {
      pid_ = -1;
      return MakeError(
          fmt::format("{} exited before listening (status {}); see stderr", server_py_, status));
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  Stop();
  return MakeError(fmt::format("{} did not write {} within 20 s", server_py_, port_file));
}

void TestModelServer::Stop() {
  if (pid_ <= 0) return;
  kill(pid_, SIGTERM);
  int status = 0;
  while (waitpid(pid_, &status, 0) < 0 && errno == EINTR) {
  }
  pid_ = -1;
}

std::string TestModelServer::base_url() const {
  return fmt::format("http://127.0.0.1:{}/v1", port_);
}

std::vector<LoggedRequest> TestModelServer::Requests() const {
  std::vector<LoggedRequest> out;
  std::error_code ec;
  for (const auto& entry : std::filesystem::directory_iterator(dir_ + "/log", ec)) {
    const std::string name = entry.path().filename().string();
    if (name.rfind("request-", 0) != 0 || entry.path().extension() != ".json") continue;
    rapidjson::Document doc;
    std::string text = ReadAll(entry.path().string());
    doc.Parse(text.c_str(), text.size());
    if (doc.HasParseError() || !doc.IsObject()) continue;
    LoggedRequest r;
    if (doc.HasMember("n") && doc["n"].IsInt()) r.n = doc["n"].GetInt();
    if (doc.HasMember("path") && doc["path"].IsString()) r.path = doc["path"].GetString();
    if (doc.HasMember("headers") && doc["headers"].IsObject()) {
      for (const auto& m : doc["headers"].GetObject()) {
        if (m.value.IsString()) r.headers[m.name.GetString()] = m.value.GetString();
      }
    }
    if (doc.HasMember("body")) {
      rapidjson::StringBuffer buf;
      rapidjson::Writer<rapidjson::StringBuffer> w(buf);
      doc["body"].Accept(w);
      r.body_json.assign(buf.GetString(), buf.GetSize());
    }
    if (doc.HasMember("turn") && doc["turn"].IsInt()) r.turn = doc["turn"].GetInt();
    if (doc.HasMember("fault") && doc["fault"].IsString()) r.fault = doc["fault"].GetString();
    out.push_back(std::move(r));
  }
  std::sort(out.begin(), out.end(),
            [](const LoggedRequest& a, const LoggedRequest& b) { return a.n < b.n; });
  return out;
}

int TestModelServer::RequestCount() const {
  return static_cast<int>(Requests().size());
}

}  // namespace ae
