// The JSONL event writer (outputs/jsonl_sink.h) on events built from arbitrary strings,
// numbers and raw JSON fields. Invariant: whatever the input, the sink writes
// exactly one line per event it carries, and that line is one valid UTF-8 JSON object with
// the event's type; deltas write nothing.
#include <fuzzer/FuzzedDataProvider.h>
#include <sys/mman.h>
#include <unistd.h>

#include <cstdint>
#include <string>

#include "outputs/jsonl_sink.h"
#include "tests/fuzz/fuzz_util.h"

namespace {

std::string Text(FuzzedDataProvider& p) {
  return p.ConsumeRandomLengthString(256);
}

// A raw JSON field (MCP arguments/results) as the model or a tool server sent it.
std::string Raw(FuzzedDataProvider& p) {
  std::string raw = p.ConsumeRandomLengthString(512);
  return ae::fuzz::HitsPendingBug(raw) ? "{}" : raw;
}

ae::ItemStatus Status(FuzzedDataProvider& p) {
  return p.PickValueInArray(
      {ae::ItemStatus::kInProgress, ae::ItemStatus::kCompleted, ae::ItemStatus::kFailed});
}

ae::ItemDetails Details(FuzzedDataProvider& p) {
  switch (p.ConsumeIntegralInRange(0, 7)) {
    case 0:
      return ae::AgentMessageItem{Text(p)};
    case 1:
      return ae::ReasoningItem{Text(p)};
    case 2: {
      ae::CommandExecutionItem c{Text(p), Text(p), std::nullopt, Status(p)};
      if (p.ConsumeBool()) c.exit_code = p.ConsumeIntegral<int>();
      return c;
    }
    case 3: {
      ae::FileChangeItem f;
      for (int n = p.ConsumeIntegralInRange(0, 4); n > 0; --n) {
        f.changes.push_back(
            {Text(p),
             p.PickValueInArray({ae::FileChangeKind::kAdd, ae::FileChangeKind::kUpdate,
                                 ae::FileChangeKind::kDelete}),
             Text(p)});
      }
      f.status = Status(p);
      return f;
    }
    case 4: {
      ae::McpToolCallItem m{Text(p), Text(p), Raw(p)};
      if (p.ConsumeBool()) m.result_content_json = Raw(p);
      if (p.ConsumeBool()) m.result_structured_json = Raw(p);
      if (p.ConsumeBool()) m.error_message = Text(p);
      m.status = Status(p);
      return m;
    }
    case 5: {
      ae::TodoListItem t;
      for (int n = p.ConsumeIntegralInRange(0, 4); n > 0; --n) {
        t.items.push_back({Text(p), p.ConsumeBool()});
      }
      return t;
    }
    case 6:
      return ae::WebSearchItem{Text(p), {"search", Text(p), "", ""}};
    default:
      return ae::ErrorItem{Text(p)};
  }
}

ae::Event MakeEvent(FuzzedDataProvider& p) {
  switch (p.ConsumeIntegralInRange(0, 8)) {
    case 0:
      return ae::ThreadStarted{Text(p), {}};
    case 1:
      return ae::TurnStarted{};
    case 2:
      return ae::ItemStarted{{Text(p), Details(p)}};
    case 3:
      return ae::ItemUpdated{{Text(p), Details(p)}};
    case 4:
      return ae::ItemCompleted{{Text(p), Details(p)}};
    case 5: {
      ae::Usage u;
      u.input_tokens = p.ConsumeIntegral<int64_t>();
      u.cached_input_tokens = p.ConsumeIntegral<int64_t>();
      u.cache_write_input_tokens = p.ConsumeIntegral<int64_t>();
      u.output_tokens = p.ConsumeIntegral<int64_t>();
      u.reasoning_output_tokens = p.ConsumeIntegral<int64_t>();
      return ae::TurnCompleted{u};
    }
    case 6:
      return ae::TurnFailed{Text(p)};
    case 7:
      return ae::StreamError{Text(p)};
    default:
      return ae::AgentMessageDelta{Text(p)};
  }
}

const char* TypeOf(const ae::Event& e) {
  static const char* const kTypes[] = {"thread.started", "turn.started",   "item.started",
                                       "item.updated",   "item.completed", "turn.completed",
                                       "turn.failed",    "error",          nullptr};
  return kTypes[e.index()];
}

// What the sink wrote: a memory file, emptied before each event.
int OutFd() {
  static const int fd = [] {
    int f = ::memfd_create("ae-fuzz-jsonl", MFD_CLOEXEC);
    if (f < 0) std::abort();
    return f;
  }();
  return fd;
}

std::string Written() {
  std::string out;
  char buf[65536];
  ::lseek(OutFd(), 0, SEEK_SET);
  for (ssize_t n; (n = ::read(OutFd(), buf, sizeof buf)) > 0;) out.append(buf, size_t(n));
  ::ftruncate(OutFd(), 0);
  ::lseek(OutFd(), 0, SEEK_SET);
  return out;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  FuzzedDataProvider p(data, size);
  ae::JsonlSink sink(OutFd());
  while (p.remaining_bytes() > 0) {
    ae::Event event = MakeEvent(p);
    sink.Emit(event);
    std::string out = Written();
    const char* type = TypeOf(event);
    if (!type) {
      ae::fuzz::Check(out.empty(), "a delta reached JSONL", out);
      continue;
    }
    ae::fuzz::Check(!out.empty() && out.back() == '\n', "no complete line written", out);
    out.pop_back();
    ae::fuzz::CheckJsonObjectLine(out, std::string("event ") + type);
    rapidjson::Document d;
    ae::fuzz::ParsesAsJson(out, d, true);
    ae::fuzz::Check(
        d.HasMember("type") && d["type"].IsString() && std::string(d["type"].GetString()) == type,
        "wrong type field", out);
  }
  return 0;
}
