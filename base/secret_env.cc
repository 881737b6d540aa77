#include "base/secret_env.h"

#include <sys/prctl.h>

#include <cstdlib>
#include <cstring>

namespace ae {
namespace {

// The block's entries as main() received them; never freed or moved (they live on the stack).
char** startup_env = nullptr;

}  // namespace

void RememberStartupEnvironment(char** envp) {
  startup_env = envp;
}

void ForgetSecretVariables(const std::vector<std::string>& names, bool non_dumpable) {
  for (const std::string& name : names) {
    if (name.empty() || name.find('=') != std::string::npos) continue;
    for (char** e = startup_env; e != nullptr && *e != nullptr; ++e) {
      if (std::strncmp(*e, name.c_str(), name.size()) == 0 && (*e)[name.size()] == '=') {
        char* value = *e + name.size() + 1;
        std::memset(value, 0, std::strlen(value));
      }
    }
    ::unsetenv(name.c_str());
  }
  if (non_dumpable) ::prctl(PR_SET_DUMPABLE, 0, 0, 0, 0);
}

}  // namespace ae
