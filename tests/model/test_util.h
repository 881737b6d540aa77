// Small helpers shared by the model tests.
#pragma once

#include <unistd.h>

#include <fstream>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "engine/model/client.h"
#include "tests/support/scratch_dir.h"

namespace ae {

// Writes `text` to a fresh file in the process's scratch directory (removed at exit) and
// returns its path.
inline std::string WriteTempFile(const std::string& name, const std::string& text) {
  static int counter = 0;
  std::string path = test::ProcessScratchDir() / (std::to_string(counter++) + "_" + name);
  std::ofstream(path, std::ios::binary) << text;
  return path;
}

class RecordingObserver : public StreamObserver {
 public:
  void OnTextDelta(const std::string& delta) override { deltas.push_back(delta); }
  void OnRetry(int attempt, int max, const std::string& reason) override {
    retries.push_back("Reconnecting... " + std::to_string(attempt) + "/" + std::to_string(max) +
                      " (" + reason + ")");
  }
  void OnToolCallAhead() override { ++tool_calls_ahead; }
  std::vector<std::string> deltas;
  std::vector<std::string> retries;
  int tool_calls_ahead = 0;
};

}  // namespace ae
