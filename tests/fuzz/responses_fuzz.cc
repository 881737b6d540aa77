// The Responses wire's stream decoder (engine/model/responses.cc) on arbitrary streams.
#include "engine/model/responses.h"
#include "tests/fuzz/decoder_fuzz.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  return ae::fuzz::RunDecoder(data, size,
                              [](ae::StreamObserver& o) { return ae::MakeResponsesDecoder(o); });
}
