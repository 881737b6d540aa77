// base/secret_env: on a startup block of the test's own (as main() receives one: `environ` is
// the same array), the values leave the block's bytes; a moved variable stays readable, a
// forgotten one does not; non-dumpable is asked for; wiped strings are zeros to the last byte
// of their capacity.
#include "base/secret_env.h"

#include <gtest/gtest.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

extern char** environ;

namespace ae {
namespace {

// A writable startup block (A_PLAIN, X_TOKEN, Z_PLAIN), made `environ` and remembered as the
// startup environment for the test's length.
class StartupBlock {
 public:
  StartupBlock() : saved_(environ) {
    for (const char* kv : {"A_PLAIN=1", "X_TOKEN=tok-0123456789abcdef", "Z_PLAIN=2"}) {
      entries_.emplace_back(kv, kv + std::strlen(kv) + 1);
    }
    for (std::vector<char>& e : entries_) pointers_.push_back(e.data());
    pointers_.push_back(nullptr);
    environ = pointers_.data();
    RememberStartupEnvironment(pointers_.data());
  }
  ~StartupBlock() {
    RememberStartupEnvironment(nullptr);
    environ = saved_;
  }
  // The block's bytes of entry `i` as they are now, NULs included.
  std::string Bytes(size_t i) const { return std::string(entries_[i].begin(), entries_[i].end()); }

 private:
  char** saved_;
  std::vector<std::vector<char>> entries_;
  std::vector<char*> pointers_;
};

const std::string kWiped = std::string("X_TOKEN=") + std::string(21, '\0');

TEST(SecretEnvTest, AMovedVariableLeavesTheBlockAndStaysInEnviron) {
  StartupBlock block;
  EXPECT_EQ(CredentialLookingVariables(), std::vector<std::string>{"X_TOKEN"});
  MoveVariablesOffStartupBlock({"X_TOKEN", "NOT_SET_TOKEN"});
  EXPECT_EQ(block.Bytes(1), kWiped);
  ASSERT_NE(std::getenv("X_TOKEN"), nullptr);
  EXPECT_STREQ(std::getenv("X_TOKEN"), "tok-0123456789abcdef");
  EXPECT_STREQ(std::getenv("A_PLAIN"), "1");
  EXPECT_EQ(block.Bytes(0), std::string("A_PLAIN=1", 10));
  ::unsetenv("X_TOKEN");
}

TEST(SecretEnvTest, AForgottenVariableLeavesTheBlockAndEnviron) {
  StartupBlock block;
  const int dumpable = ::prctl(PR_GET_DUMPABLE, 0, 0, 0, 0);
  ForgetSecretVariables({"X_TOKEN"}, /*non_dumpable=*/false);
  EXPECT_EQ(block.Bytes(1), kWiped);
  EXPECT_EQ(std::getenv("X_TOKEN"), nullptr);
  EXPECT_STREQ(std::getenv("Z_PLAIN"), "2");
  EXPECT_EQ(::prctl(PR_GET_DUMPABLE, 0, 0, 0, 0), dumpable);
}

// In a child, which is thrown away: the test process stays dumpable.
TEST(SecretEnvTest, NonDumpableIsAskedFor) {
  pid_t pid = ::fork();
  ASSERT_GE(pid, 0);
  if (pid == 0) {
    ForgetSecretVariables({}, /*non_dumpable=*/true);
    ::_exit(::prctl(PR_GET_DUMPABLE, 0, 0, 0, 0) == 0 ? 0 : 1);
  }
  int status = 0;
  ASSERT_EQ(::waitpid(pid, &status, 0), pid);
  EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0) << status;
}

TEST(SecretEnvTest, WipedStringsAreZerosToTheEndOfTheirCapacity) {
  std::string long_one = "OPENAI_API_KEY=sk-" + std::string(60, 'k');
  long_one.resize(20);  // bytes past the size still hold the key
  std::string short_one = "K=short";
  for (std::string* s : {&long_one, &short_one}) {
    const char* data = s->data();
    const size_t capacity = s->capacity();
    WipeString(*s);
    EXPECT_TRUE(s->empty());
    ASSERT_EQ(s->data(), data);  // not freed, so its bytes can be looked at
    EXPECT_EQ(std::string(data, capacity), std::string(capacity, '\0'));
  }
  std::vector<std::string> env = {"A=1", "GITHUB_TOKEN=ghp_" + std::string(40, 't')};
  WipeStrings(env);
  EXPECT_TRUE(env.empty());
}

}  // namespace
}  // namespace ae
