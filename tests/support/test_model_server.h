// TestModelServer: runs tests/support/model_server.py (the loopback test model server) as a
// child process for one test, and reads back its request log. Used by the model client tests
// and by end-to-end tests of the agentexec binary. Link the `ae_test_model_server` target.
#pragma once

#include <sys/types.h>

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "base/result.h"

namespace ae {

struct LoggedRequest {
  int n = 0;                                   // request number, from 1
  std::string path;                            // e.g. /v1/responses?x=1
  std::map<std::string, std::string> headers;  // lower-case names
  std::string body_json;                       // the body, compact JSON
  int turn = 0;                                // turn served (from 1), 0 = none
  std::string fault;                           // the fault spec applied, "" = none
};

// How an agentexec run reaches the server: provider "mock" with its key in $MOCK_KEY.
struct MockProvider {
  std::string wire = "responses";  // wire_api
  int request_max_retries = 0;
  int stream_max_retries = 2;
  int64_t stream_idle_timeout_ms = 20000;
};

class TestModelServer;
// The config.toml text (for $AGENTEXEC_HOME/config.toml) that points agentexec at `server`.
std::string MockProviderConfig(const TestModelServer& server, const MockProvider& provider = {});

class TestModelServer {
 public:
  // `server_py` defaults to this tree's tests/support/model_server.py.
  explicit TestModelServer(std::string server_py = AE_MODEL_SERVER_PY);
  ~TestModelServer();
  TestModelServer(const TestModelServer&) = delete;
  TestModelServer& operator=(const TestModelServer&) = delete;

  // Starts the server on a free loopback port with the given turns file and --fault specs
  // (see model_server.py --help); returns the port once it listens.
  Result<int> Start(const std::string& script_path, const std::vector<std::string>& faults = {},
                    double max_seconds = 120);
  // Stops it (SIGTERM, then waits). Also done by the destructor.
  void Stop();

  int port() const { return port_; }
  std::string base_url() const;                    // http://127.0.0.1:PORT/v1
  const std::string& dir() const { return dir_; }  // scratch dir; logs in dir()/log
  // The requests received so far, by number.
  std::vector<LoggedRequest> Requests() const;
  int RequestCount() const;

 private:
  std::string server_py_;
  std::string dir_;
  pid_t pid_ = -1;
  int port_ = 0;
};

}  // namespace ae
