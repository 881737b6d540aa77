#include "engine/events/emitter.h"

#include <fmt/format.h>

namespace ae {

const char* ItemStatusName(ItemStatus s) {
  switch (s) {
    case ItemStatus::kInProgress:
      return "in_progress";
    case ItemStatus::kCompleted:
      return "completed";
    case ItemStatus::kFailed:
      return "failed";
  }
  return "failed";
}

const char* FileChangeKindName(FileChangeKind k) {
  switch (k) {
    case FileChangeKind::kAdd:
      return "add";
    case FileChangeKind::kUpdate:
      return "update";
    case FileChangeKind::kDelete:
      return "delete";
  }
  return "update";
}

std::string Emitter::NextIdLocked() {
  return fmt::format("item_{}", next_item_++);
}

void Emitter::EmitLocked(const Event& event) {
  for (EventSink* sink : sinks_) sink->Emit(event);
}

void Emitter::Emit(const Event& event) {
  std::lock_guard lock(mu_);
  EmitLocked(event);
}

std::string Emitter::Start(ItemDetails details) {
  std::lock_guard lock(mu_);
  std::string id = NextIdLocked();
  EmitLocked(ItemStarted{Item{id, std::move(details)}});
  return id;
}

void Emitter::Update(const std::string& id, ItemDetails details) {
  std::lock_guard lock(mu_);
  EmitLocked(ItemUpdated{Item{id, std::move(details)}});
}

void Emitter::Complete(const std::string& id, ItemDetails details) {
  std::lock_guard lock(mu_);
  EmitLocked(ItemCompleted{Item{id, std::move(details)}});
}

std::string Emitter::CompleteNew(ItemDetails details) {
  std::lock_guard lock(mu_);
  std::string id = NextIdLocked();
  EmitLocked(ItemCompleted{Item{id, std::move(details)}});
  return id;
}

}  // namespace ae
