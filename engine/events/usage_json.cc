#include "engine/events/usage_json.h"

namespace ae {

void WriteUsage(JsonWriter& w, const Usage& u) {
  w.StartObject();
  w.Key("input_tokens"), w.Int64(u.input_tokens);
  w.Key("cached_input_tokens"), w.Int64(u.cached_input_tokens);
  w.Key("cache_write_input_tokens"), w.Int64(u.cache_write_input_tokens);
  w.Key("output_tokens"), w.Int64(u.output_tokens);
  w.Key("reasoning_output_tokens"), w.Int64(u.reasoning_output_tokens);
  w.EndObject();
}

}  // namespace ae
