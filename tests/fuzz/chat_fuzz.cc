// The Chat Completions wire's stream decoder (engine/model/chat.cc) on arbitrary streams.
#include "engine/model/chat.h"
#include "tests/fuzz/decoder_fuzz.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  return ae::fuzz::RunDecoder(data, size,
                              [](ae::StreamObserver& o) { return ae::MakeChatDecoder(o); });
}
