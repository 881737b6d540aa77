// update_plan: the model's task list, reported as one todo_list item per turn — started at
// the first call, updated at later ones, completed at turn end.
#pragma once

#include <memory>

#include "engine/tools/router.h"

namespace ae {

std::unique_ptr<ToolHandler> MakeUpdatePlanTool();

}  // namespace ae
