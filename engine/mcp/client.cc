#include "engine/mcp/client.h"

#include <poll.h>
#include <sys/eventfd.h>
#include <unistd.h>

#include <fmt/format.h>
#include <rapidjson/document.h>

#include <chrono>
#include <cstring>
#include <set>

#include "base/json.h"
#include "engine/mcp/http_transport.h"
#include "engine/mcp/stdio_transport.h"

#ifndef AGENTEXEC_VERSION
#define AGENTEXEC_VERSION "0.0.0"
#endif

namespace ae {
namespace {

using Clock = std::chrono::steady_clock;

constexpr int64_t kNotifyTimeoutMs = 1000;
constexpr int kMaxToolPages = 1000;
constexpr size_t kGarbageExcerpt = 120;

std::string Excerpt(const std::string& s) {
  if (s.size() <= kGarbageExcerpt) return s;
  size_t n = kGarbageExcerpt;
  while (n > 0 && (static_cast<unsigned char>(s[n]) & 0xC0) == 0x80) --n;  // whole UTF-8
  return s.substr(0, n) + "…";
}

// The last non-empty line of the server's stderr, which is usually what went wrong.
std::string LastLine(const std::string& text) {
  size_t end = text.find_last_not_of(" \t\r\n");
  if (end == std::string::npos) return {};
  size_t start = text.rfind('\n', end);
  start = start == std::string::npos ? 0 : start + 1;
  return text.substr(start, end - start + 1);
}

}  // namespace

std::string FormatTimeout(int64_t ms) {
  if (ms % 1000 == 0) return fmt::format("{} s", ms / 1000);
  if (ms < 1000) return fmt::format("{} ms", ms);
  return fmt::format("{:g} s", static_cast<double>(ms) / 1000.0);
}

Result<std::unique_ptr<McpClient>> McpClient::Spawn(const McpServerSpec& spec) {
  std::unique_ptr<McpTransport> transport;
  if (!spec.url.empty()) {
    Result<std::unique_ptr<HttpTransport>> t = HttpTransport::Connect(spec);
    if (!t.ok()) return t.error();
    transport = std::move(t.value());
  } else {
    Result<std::unique_ptr<StdioTransport>> t = StdioTransport::Spawn(spec);
    if (!t.ok()) return t.error();
    transport = std::move(t.value());
  }
  std::unique_ptr<McpClient> c(new McpClient());
  c->name_ = spec.name;
  c->transport_ = std::move(transport);
  McpClient* self = c.get();
  c->transport_->StartReader([self](std::string line) { self->OnLine(std::move(line)); },
                             [self](std::string why) { self->OnClose(std::move(why)); });
  return c;
}

// The reader thread calls into us: stop it before our members go.
McpClient::~McpClient() {
  transport_->Shutdown();
}

void McpClient::Shutdown() {
  transport_->Shutdown();
  std::lock_guard lock(mu_);
  CloseLocked("the server has been shut down");
}

void McpClient::CloseLocked(std::string message) {
  if (closed_) return;
  closed_ = std::move(message);
  for (auto& [id, p] : pending_) {
    p->error = *closed_;
    p->done = true;
    uint64_t one = 1;
    [[maybe_unused]] ssize_t n = ::write(p->ready.get(), &one, sizeof one);
  }
  pending_.clear();
}

void McpClient::OnClose(std::string why) {
  std::string message = "the server " + why;
  std::string last = LastLine(transport_->StderrTail());
  if (!last.empty()) message += "; its stderr ends with: " + last;
  std::lock_guard lock(mu_);
  CloseLocked(std::move(message));
}

void McpClient::OnLine(std::string line) {
  rapidjson::Document d;
  if (ParseJsonInto(line, &d) || !d.IsObject()) {
    // The spec allows only MCP messages on stdout. Failing at once beats waiting out a
    // timeout and blaming the wrong thing.
    std::lock_guard lock(mu_);
    CloseLocked(fmt::format(
        "the server wrote something other than JSON-RPC on stdout: '{}' (an MCP stdio server "
        "must write only MCP messages there; logs belong on stderr)",
        Excerpt(line)));
    return;
  }
  bool has_id = d.HasMember("id") && !d["id"].IsNull();
  if (d.HasMember("method")) {
    if (has_id) Answer(line);  // a request to us; notifications need nothing
    return;
  }
  if (!has_id || !d["id"].IsInt64()) return;  // not an answer to anything we sent
  std::lock_guard lock(mu_);
  auto it = pending_.find(d["id"].GetInt64());
  if (it == pending_.end()) return;  // late answer to a request that timed out
  std::shared_ptr<Pending> p = it->second;
  pending_.erase(it);
  if (d.HasMember("error")) {
    const rapidjson::Value& e = d["error"];
    std::string message = e.IsObject() && e.HasMember("message") && e["message"].IsString()
                              ? e["message"].GetString()
                              : ToJson(e);
    if (e.IsObject() && e.HasMember("code") && e["code"].IsInt64()) {
      message += fmt::format(" (JSON-RPC error {})", e["code"].GetInt64());
    }
    p->error = std::move(message);
  } else if (d.HasMember("result")) {
    p->result = ToJson(d["result"]);
  } else {
    p->error = "the server answered with neither a result nor an error";
  }
  p->done = true;
  uint64_t one = 1;
  [[maybe_unused]] ssize_t n = ::write(p->ready.get(), &one, sizeof one);
}

// We offer no client capabilities, so the only request worth answering is ping.
void McpClient::Answer(const std::string& line) {
  rapidjson::Document d;
  if (ParseJsonInto(line, &d) || !d.IsObject() || !d.HasMember("id") || !d.HasMember("method")) {
    return;
  }
  JsonWriter w;
  w.StartObject();
  w.Key("jsonrpc"), w.String("2.0");
  w.Key("id"), w.Value(d["id"]);
  std::string method = d["method"].IsString() ? d["method"].GetString() : "";
  if (method == "ping") {
    w.Key("result"), w.StartObject(), w.EndObject();
  } else {
    w.Key("error"), w.StartObject();
    w.Key("code"), w.Int(-32601);
    w.Key("message"), w.String(("Method not found: " + method).c_str());
    w.EndObject();
  }
  w.EndObject();
  (void)transport_->WriteLine(std::string(w.view()), kNotifyTimeoutMs, nullptr);
}

void McpClient::Notify(const std::string& method, const std::string& params_json) {
  JsonWriter w;
  w.StartObject();
  w.Key("jsonrpc"), w.String("2.0");
  w.Key("method"), w.String(method.c_str());
  if (!params_json.empty()) {
    w.Key("params"), w.Raw(params_json);
  }
  w.EndObject();
  (void)transport_->WriteLine(std::string(w.view()), kNotifyTimeoutMs, nullptr);
}

Result<std::string> McpClient::Request(const std::string& method, const std::string& params_json,
                                       int64_t timeout_ms, CancelToken* cancel) {
  auto p = std::make_shared<Pending>();
  p->ready = Fd(::eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK));
  if (!p->ready) return MakeError(fmt::format("eventfd: {}", strerror(errno)));
  int64_t id;
  {
    std::lock_guard lock(mu_);
    if (closed_) return MakeError(*closed_);
    id = next_id_++;
    pending_[id] = p;
  }
  auto deadline = Clock::now() + std::chrono::milliseconds(timeout_ms);

  JsonWriter w;
  w.StartObject();
  w.Key("jsonrpc"), w.String("2.0");
  w.Key("id"), w.Int64(id);
  w.Key("method"), w.String(method.c_str());
  if (!params_json.empty()) {
    w.Key("params"), w.Raw(params_json);
  }
  w.EndObject();
  Status sent = transport_->WriteLine(std::string(w.view()), timeout_ms, cancel);
  if (!sent.ok()) {
    // A dead server usually shows as a broken pipe first; its exit is the better story.
    struct pollfd pf {
      p->ready.get(), POLLIN, 0
    };
    ::poll(&pf, 1, 300);
    std::lock_guard lock(mu_);
    pending_.erase(id);
    if (p->done && p->error) return MakeError(*p->error);
    return sent.error();
  }

  bool cancelled = false;
  for (;;) {
    auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - Clock::now());
    struct pollfd fds[2] = {{p->ready.get(), POLLIN, 0},
                            {cancel != nullptr ? cancel->wake_fd() : -1, POLLIN, 0}};
    int r = ::poll(fds, 2, static_cast<int>(std::max<int64_t>(0, left.count())));
    if (r < 0 && errno == EINTR) continue;
    if (fds[1].revents != 0) cancelled = true;
    break;
  }
  {
    std::lock_guard lock(mu_);
    if (p->done) {
      if (p->error) return MakeError(*p->error);
      return std::move(p->result);
    }
    pending_.erase(id);
  }
  // Tell the server to stop working on it (MCP cancellation); a late answer is dropped.
  Notify("notifications/cancelled", fmt::format(R"({{"requestId":{},"reason":"{}"}})", id,
                                                cancelled ? "cancelled" : "timeout"));
  if (cancelled) return MakeError(fmt::format("{} was cancelled", method));
  return MakeError(fmt::format("no answer to {} within {}", method, FormatTimeout(timeout_ms)));
}

Status McpClient::Initialize(int64_t timeout_ms, CancelToken* cancel) {
  JsonWriter w;
  w.StartObject();
  w.Key("protocolVersion"), w.String(kMcpProtocolVersion);
  w.Key("capabilities"), w.StartObject(), w.EndObject();
  w.Key("clientInfo"), w.StartObject();
  w.Key("name"), w.String("agentexec");
  w.Key("version"), w.String(AGENTEXEC_VERSION);
  w.EndObject();
  w.EndObject();
  Result<std::string> r = Request("initialize", std::string(w.view()), timeout_ms, cancel);
  if (!r.ok()) return r.error();
  rapidjson::Document d;
  if (ParseJsonInto(*r, &d) || !d.IsObject()) {
    return MakeError("initialize answered with a result that is not an object");
  }
  Notify("notifications/initialized", "");
  return {};
}

Result<std::vector<McpTool>> McpClient::ListTools(int64_t timeout_ms, CancelToken* cancel) {
  std::vector<McpTool> tools;
  std::set<std::string> cursors;
  std::string cursor;
  auto deadline = Clock::now() + std::chrono::milliseconds(timeout_ms);
  for (int page = 0; page < kMaxToolPages; ++page) {
    std::string params;
    if (!cursor.empty()) {
      JsonWriter w;
      w.StartObject();
      w.Key("cursor"), w.String(cursor.c_str());
      w.EndObject();
      params = std::string(w.view());
    }
    int64_t left = std::max<int64_t>(
        1, std::chrono::duration_cast<std::chrono::milliseconds>(deadline - Clock::now()).count());
    Result<std::string> r = Request("tools/list", params, left, cancel);
    if (!r.ok()) {
      // One timeout covers every page; report it as configured, not as what was left.
      if (r.message().rfind("no answer to", 0) == 0) {
        return MakeError(
            fmt::format("no answer to tools/list within {}", FormatTimeout(timeout_ms)));
      }
      return r.error();
    }
    rapidjson::Document d;
    if (ParseJsonInto(*r, &d) || !d.IsObject() || !d.HasMember("tools") || !d["tools"].IsArray()) {
      return MakeError("tools/list answered without a `tools` array");
    }
    for (const rapidjson::Value& t : d["tools"].GetArray()) {
      if (!t.IsObject() || !t.HasMember("name") || !t["name"].IsString()) continue;
      McpTool tool;
      tool.name = t["name"].GetString();
      if (t.HasMember("description") && t["description"].IsString()) {
        tool.description = t["description"].GetString();
      }
      if (t.HasMember("inputSchema") && t["inputSchema"].IsObject()) {
        tool.input_schema_json = ToJson(t["inputSchema"]);
      } else {
        tool.input_schema_json = R"({"type":"object","properties":{}})";
      }
      if (t.HasMember("annotations") && t["annotations"].IsObject()) {
        const rapidjson::Value& a = t["annotations"];
        tool.read_only = a.HasMember("readOnlyHint") && a["readOnlyHint"].IsBool() &&
                         a["readOnlyHint"].GetBool();
      }
      tools.push_back(std::move(tool));
    }
    if (!d.HasMember("nextCursor") || !d["nextCursor"].IsString() ||
        d["nextCursor"].GetStringLength() == 0) {
      return tools;
    }
    cursor = d["nextCursor"].GetString();
    if (!cursors.insert(cursor).second) {
      return MakeError(fmt::format("tools/list returned the cursor '{}' twice", Excerpt(cursor)));
    }
  }
  return MakeError(fmt::format("tools/list returned more than {} pages", kMaxToolPages));
}

Result<McpCallResult> McpClient::CallTool(const std::string& tool,
                                          const std::string& arguments_json, int64_t timeout_ms,
                                          CancelToken* cancel) {
  JsonWriter w;
  w.StartObject();
  w.Key("name"), w.String(tool.c_str());
  if (!arguments_json.empty()) {
    w.Key("arguments");
    w.Raw(arguments_json);
  }
  w.EndObject();
  Result<std::string> r = Request("tools/call", std::string(w.view()), timeout_ms, cancel);
  if (!r.ok()) return r.error();
  rapidjson::Document d;
  if (ParseJsonInto(*r, &d) || !d.IsObject()) {
    return MakeError("tools/call answered with a result that is not an object");
  }
  McpCallResult out;
  if (d.HasMember("content")) {
    if (!d["content"].IsArray()) return MakeError("tools/call answered with a non-array `content`");
    out.content_json = ToJson(d["content"]);
  } else {
    out.content_json = "[]";
  }
  if (d.HasMember("structuredContent") && !d["structuredContent"].IsNull()) {
    out.structured_json = ToJson(d["structuredContent"]);
  }
  out.is_error = d.HasMember("isError") && d["isError"].IsBool() && d["isError"].GetBool();
  return out;
}

}  // namespace ae
