#include "base/secret_env.h"

#include <sys/prctl.h>

#include <cctype>
#include <cstdlib>
#include <cstring>

extern char** environ;

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

void MoveVariablesOffStartupBlock(const std::vector<std::string>& names) {
  for (const std::string& name : names) {
    if (name.empty() || name.find('=') != std::string::npos) continue;
    const char* current = std::getenv(name.c_str());
    if (current == nullptr) continue;
    // Taken before the block's bytes (which it may be) are wiped, and the block wiped before
    // setenv: `environ` may still be main's `envp` array, whose entry setenv replaces.
    std::string copy = current;
    for (char** e = startup_env; e != nullptr && *e != nullptr; ++e) {
      if (std::strncmp(*e, name.c_str(), name.size()) == 0 && (*e)[name.size()] == '=') {
        char* value = *e + name.size() + 1;
        std::memset(value, 0, std::strlen(value));
      }
    }
    ::setenv(name.c_str(), copy.c_str(), 1);  // glibc's copy, never freed: the one left
    WipeString(copy);
  }
}

void WipeString(std::string& s) {
  s.resize(s.capacity());  // never reallocates: the bytes past the old size are zeroed too
  ::explicit_bzero(s.data(), s.size());
  s.clear();
}

void WipeStrings(std::vector<std::string>& strings) {
  for (std::string& s : strings) WipeString(s);
  strings.clear();
}

std::vector<std::string> CredentialLookingVariables() {
  std::vector<std::string> names;
  for (char** e = environ; e != nullptr && *e != nullptr; ++e) {
    const char* eq = std::strchr(*e, '=');
    if (eq == nullptr) continue;
    std::string name(*e, static_cast<size_t>(eq - *e));
    std::string upper = name;
    for (char& c : upper) c = static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
    for (const char* word : {"KEY", "SECRET", "TOKEN"}) {
      if (upper.find(word) != std::string::npos) {
        names.push_back(name);
        break;
      }
    }
  }
  return names;
}

}  // namespace ae
