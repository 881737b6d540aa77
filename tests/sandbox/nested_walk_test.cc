// The walk itself (sandbox/nested_walk.h): directories without subdirectories looked into by
// name, and a tree shared among threads, each finding exactly what one thread finds.
#include "sandbox/nested_walk.h"

#include <fcntl.h>
#include <grp.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cstdio>
#include <functional>
#include <string>
#include <utility>
#include <vector>

#include "base/fd.h"
#include "test_util.h"

namespace ae::sandbox {
namespace {

using testing::ScratchDir;
using testing::Sh;

using Hits = std::vector<std::string>;

// Every hit as "git DIR", "agentexec PATH" or "unsearchable DIR", sorted, each once; false in
// *complete when the walk did not see the whole tree.
Hits Collect(const std::string& root, unsigned threads, const std::vector<std::string>& skip,
             bool* complete) {
  Hits hits;
  *complete = WalkNested(
      root, skip, [] { return false; },
      [&](NestedHit hit, const std::string& path) {
        hits.push_back((hit == NestedHit::kGit         ? "git "
                        : hit == NestedHit::kAgentexec ? "agentexec "
                                                       : "unsearchable ") +
                       path);
      },
      threads);
  std::sort(hits.begin(), hits.end());
  hits.erase(std::unique(hits.begin(), hits.end()), hits.end());
  return hits;
}

Hits Walk(const std::string& root, unsigned threads, const std::vector<std::string>& skip = {}) {
  bool complete = false;
  Hits hits = Collect(root, threads, skip, &complete);
  EXPECT_TRUE(complete);
  return hits;
}

// In a child (AsOwnerOf): 0 when the walk on 1 and on 4 threads finds exactly `expected`,
// else 1, what it found said on stderr.
int WalksFind(const std::string& root, const Hits& expected) {
  int failed = 0;
  for (unsigned threads : {1u, 4u}) {
    bool complete = false;
    const Hits hits = Collect(root, threads, {}, &complete);
    if (hits != expected || !complete) {
      for (const std::string& hit : hits) {
        std::fprintf(stderr, "threads %u: %s\n", threads, hit.c_str());
      }
      failed = 1;
    }
  }
  return failed;
}

// The directories to try the walk in: the scratch directory's file system and, where there
// is one, tmpfs (both keep st_nlink, so both take the leaf path).
std::vector<std::string> Places(const ScratchDir& dir) {
  std::vector<std::string> places = {dir.path() + "/disk"};
  Sh("mkdir disk", dir.path());
  std::string tmpl = "/dev/shm/ae-walk-XXXXXX";
  if (::mkdtemp(tmpl.data()) != nullptr) places.push_back(tmpl);
  return places;
}

void RemovePlaces(const std::vector<std::string>& places) {
  for (size_t i = 1; i < places.size(); ++i) Sh("rm -rf '" + places[i] + "'", "/");
}

// A directory without subdirectories is not listed: its `.git` or `.agentexec` can then only
// be a file or a symlink, and each kind is found by name.
TEST(NestedWalk, WhatALeafDirectoryHoldsIsFoundByName) {
  ScratchDir dir;
  const std::vector<std::string> places = Places(dir);
  for (const std::string& root : places) {
    Sh("mkdir -p a/file b/link c/agentexec d/agentexec-link e/plain f/both && "
       "echo 'gitdir: ../../store' > a/file/.git && ln -s ../../store b/link/.git && "
       "echo x > c/agentexec/.agentexec && ln -s /nonexistent d/agentexec-link/.agentexec && "
       "touch e/plain/x.git e/plain/.gitignore e/plain/agentexec && "
       "touch f/both/.git f/both/.agentexec",
       root);
    for (unsigned threads : {1u, 4u}) {
      EXPECT_EQ(Walk(root, threads),
                (Hits{"agentexec " + root + "/c/agentexec/.agentexec",
                      "agentexec " + root + "/d/agentexec-link/.agentexec",
                      "agentexec " + root + "/f/both/.agentexec", "git " + root + "/a/file",
                      "git " + root + "/b/link", "git " + root + "/f/both"}))
          << root << ", threads " << threads;
    }
  }
  RemovePlaces(places);
}

// Enough directories to be split among the threads (more than 16 subtrees a thread), hits at
// every depth, a skipped directory (another root) and the way down to one.
TEST(NestedWalk, ThreadsFindExactlyWhatOneThreadFinds) {
  ScratchDir dir;
  const std::vector<std::string> places = Places(dir);
  for (const std::string& root : places) {
    Sh("for i in $(seq 1 150); do mkdir -p t$i/u/v; done && "
       "for i in $(seq 1 150 | awk 'NR % 7 == 0'); do mkdir t$i/.git; done && "
       "for i in $(seq 1 150 | awk 'NR % 11 == 0'); do touch t$i/u/v/.git; done && "
       "for i in $(seq 1 150 | awk 'NR % 13 == 0'); do mkdir t$i/u/.agentexec; done && "
       "mkdir -p t1/u/v/w/x/y/z/.git other/inner/.git way/to/other/.git way/to/sibling/.git",
       root);
    Hits expected;
    for (int i = 1; i <= 150; ++i) {
      const std::string t = root + "/t" + std::to_string(i);
      if (i % 7 == 0) expected.push_back("git " + t);
      if (i % 11 == 0) expected.push_back("git " + t + "/u/v");
      if (i % 13 == 0) expected.push_back("agentexec " + t + "/u/.agentexec");
    }
    expected.push_back("git " + root + "/t1/u/v/w/x/y/z");
    expected.push_back("git " + root + "/way/to/sibling");
    std::sort(expected.begin(), expected.end());
    const std::vector<std::string> skip = {root + "/other", root + "/way/to/other"};
    for (unsigned threads : {1u, 2u, 4u}) {
      EXPECT_EQ(Walk(root, threads, skip), expected) << root << ", threads " << threads;
    }
  }
  RemovePlaces(places);
}

// Subtrees wait for a thread as names, not descriptors: a directory of 2,000 subdirectories
// is walked on 4 threads by a process that may hold 40 descriptors, and nothing is missed.
TEST(NestedWalk, AWideDirectoryIsWalkedWithFewDescriptors) {
  ScratchDir dir;
  Sh("mkdir wide && cd wide && for i in $(seq 1 2000); do mkdir -p d$i/sub; "
     "echo 'gitdir: /x' > d$i/sub/.git; done",
     dir.path());
  const std::string root = dir.path();
  const pid_t pid = ::fork();
  ASSERT_GE(pid, 0);
  if (pid == 0) {
    struct rlimit limit = {40, 40};
    if (::setrlimit(RLIMIT_NOFILE, &limit) != 0) ::_exit(2);
    std::atomic<int> hits{0};
    const bool complete = WalkNested(
        root, {}, [] { return false; }, [&](NestedHit, const std::string&) { ++hits; }, 4);
    ::_exit(complete && hits.load() == 2000 ? 0 : 1);
  }
  int status = 0;
  ASSERT_EQ(::waitpid(pid, &status, 0), pid);
  ASSERT_TRUE(WIFEXITED(status));
  EXPECT_EQ(WEXITSTATUS(status), 0);
}

// Runs `body` as an unprivileged user that owns `dir` (root passes every mode check, so the
// walk would see through what follows): in a child as nobody when we are root, with `dir`
// given to it, all but an entry named `foreign`; as ourselves otherwise. The child's exit
// status is the answer.
int AsOwnerOf(const std::string& dir, const std::function<int()>& body) {
  if (::geteuid() != 0) return body();
  Sh("chown 65534:65534 . && find . -mindepth 1 -maxdepth 1 ! -name foreign -exec chown -R "
     "65534:65534 {} +",
     dir);
  const pid_t pid = ::fork();
  if (pid < 0) return -1;
  if (pid == 0) {
    if (::setgroups(0, nullptr) != 0 || ::setresgid(65534, 65534, 65534) != 0 ||
        ::setresuid(65534, 65534, 65534) != 0) {
      ::_exit(90);
    }
    ::_exit(body());
  }
  int status = 0;
  if (::waitpid(pid, &status, 0) != pid || !WIFEXITED(status)) return -1;
  return WEXITSTATUS(status);
}

// A command can chmod a directory it owns so that the next run's walk cannot list it, to
// hide a repository below it; what the walk cannot see is reported, to be kept read-only
// whole. A directory it cannot list but can search is still looked into by name when it has
// no subdirectories; one that belongs to another user holds nothing a command of ours could
// reach, and is not reported.
TEST(NestedWalk, ADirectoryClosedByItsModeIsReportedWhole) {
  ScratchDir dir;
  const std::string root = dir.path() + "/ws";
  Sh("mkdir -p ws/vendor/lib/.git ws/shut ws/peek ws/open/sub && echo 'gitdir: /x' > ws/peek/.git",
     dir.path());
  const bool root_user = ::geteuid() == 0;
  if (root_user) Sh("mkdir -p ws/foreign/sub && chmod 700 ws/foreign", dir.path());
  // Only where the file system counts subdirectories (not overlayfs, a container's /tmp) can
  // the walk know `peek` has none and look into it by name; elsewhere it is reported whole.
  const Fd root_fd(::open(root.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC));
  const std::string peek = KeepsSubdirectoryCount(root_fd.get()) ? "git " + root + "/peek"
                                                                 : "unsearchable " + root + "/peek";
  const int status = AsOwnerOf(root, [&] {
    Sh("chmod 311 vendor peek && chmod 0 shut", root);
    const int failed = WalksFind(
        root, {peek, "unsearchable " + root + "/shut", "unsearchable " + root + "/vendor"});
    Sh("chmod 755 vendor peek shut", root);
    return failed;
  });
  EXPECT_EQ(status, 0);
  Sh("chmod -R u+rwx ws", dir.path());
}

// A directory of ours the walk can open and list but not search (chmod 600 or 400 by an
// earlier command) hides what is below it as well as one it cannot list: its own `.git` is
// found by listing, and the directory is reported whole, since nothing below it can be seen.
TEST(NestedWalk, ADirectoryListableButNotSearchableIsReportedWhole) {
  ScratchDir dir;
  const std::string root = dir.path() + "/ws";
  Sh("mkdir -p ws/vendor/.git ws/vendor/lib/.git ws/deep/a/b/.git", dir.path());
  const int status = AsOwnerOf(root, [&] {
    Sh("chmod 600 vendor && chmod 400 deep/a", root);
    const int failed =
        WalksFind(root, {"git " + root + "/vendor", "unsearchable " + root + "/deep/a",
                         "unsearchable " + root + "/vendor"});
    Sh("chmod 755 vendor deep/a", root);
    return failed;
  });
  EXPECT_EQ(status, 0);
}

// Runs `child` in a forked process and returns its exit status (-1: it did not exit).
template <typename Child>
int InChild(Child child) {
  const pid_t pid = ::fork();
  if (pid < 0) return -1;
  if (pid == 0) ::_exit(child());
  int status = 0;
  if (::waitpid(pid, &status, 0) != pid || !WIFEXITED(status)) return -1;
  return WEXITSTATUS(status);
}

// A threaded walk of `root` before descriptors run out: UBSan checks the dynamic type of the
// walk's thread state the first time one runs, with a pipe(2) it cannot have then (a false
// "invalid vptr" report); checked once, the type is cached.
void WarmUpThreads(const std::string& root) {
  WalkNested(
      root, {}, [] { return false; }, [](NestedHit, const std::string&) {}, 2);
}

// A walk that runs out of descriptors has not seen the whole tree: it never answers that it
// has with a subtree left unread. The subtrees queued for the threads hold 32 parents'
// descriptors, and each is a chain deeper than the frames a walk keeps open; the process may
// hold 40 descriptors besides stdio, which is enough for one thread.
TEST(NestedWalk, RunningOutOfDescriptorsIsNeverACompleteWalk) {
  ScratchDir dir;
  Sh("for i in $(seq 1 32); do for j in 1 2; do p=a$i/b$j; for k in $(seq 1 40); do p=$p/c; "
     "done; mkdir -p $p; echo 'gitdir: /x' > $p/.git; done; done",
     dir.path());
  const std::string root = dir.path();
  for (unsigned threads : {1u, 4u}) {
    const int status = InChild([&] {
      WarmUpThreads(root);
      // Descriptor numbers are what the limit counts: none above stdio is left open.
      for (int fd = 3; fd < 4096; ++fd) ::close(fd);
      struct rlimit rl = {3 + 40, 3 + 40};
      if (::setrlimit(RLIMIT_NOFILE, &rl) != 0) return 2;
      std::atomic<int> hits{0};
      const bool complete = WalkNested(
          root, {}, [] { return false; }, [&](NestedHit, const std::string&) { ++hits; }, threads);
      if (!complete) return 3;
      return hits.load() == 64 ? 0 : 1;
    });
    // One thread needs no more descriptors than it may hold: it sees everything.
    if (threads == 1) {
      EXPECT_EQ(status, 0) << "threads " << threads;
    } else {
      EXPECT_TRUE(status == 0 || status == 3) << "threads " << threads << ": " << status;
    }
  }
}

// Under a descriptor limit too low for several threads (a CI container's 256), the walk the
// sandbox asks for keeps to one thread and sees the whole tree, rather than end incomplete
// and leave the run unable to run a command.
TEST(NestedWalk, UnderALowDescriptorLimitTheWalkKeepsToOneThreadAndCompletes) {
  ScratchDir dir;
  Sh("for i in $(seq 1 100); do mkdir -p t$i/u/v && touch t$i/u/v/.git; done", dir.path());
  const std::string root = dir.path();
  const int status = InChild([&] {
    WarmUpThreads(root);
    struct rlimit rl = {256, 256};
    if (::setrlimit(RLIMIT_NOFILE, &rl) != 0) return 2;
    if (WalkThreads() != 1) return 4;
    std::atomic<int> hits{0};
    const bool complete = WalkNested(
        root, {}, [] { return false; }, [&](NestedHit, const std::string&) { ++hits; },
        WalkThreads());
    if (!complete) return 3;
    return hits.load() == 100 ? 0 : 1;
  });
  EXPECT_EQ(status, 0);
}

// `stop` is asked before each subdirectory is looked into, on the way that splits the tree
// among the threads too: a SIGINT is not held up by a directory of many thousands (an
// earlier command's /tmp), whose leaves would each be looked up first.
TEST(NestedWalk, AStopIsAskedBeforeEachSubdirectoryOfADirectoryBeingSplit) {
  ScratchDir dir;
  Sh("for i in $(seq 1 300); do mkdir d$i && touch d$i/.git; done", dir.path());
  for (unsigned threads : {1u, 4u}) {
    std::atomic<int> asked{0};
    std::atomic<int> hits{0};
    const bool complete = WalkNested(
        dir.path(), {}, [&] { return ++asked > 1; }, [&](NestedHit, const std::string&) { ++hits; },
        threads);
    EXPECT_FALSE(complete) << "threads " << threads;
    EXPECT_EQ(hits.load(), 0) << "threads " << threads;
  }
}

// `stop` ends the walk on every thread: the answer is then that the tree was not all seen.
TEST(NestedWalk, AStopEndsTheWalkOnEveryThread) {
  ScratchDir dir;
  Sh("for i in $(seq 1 200); do mkdir -p t$i/u/v; done", dir.path());
  for (unsigned threads : {1u, 4u}) {
    std::atomic<int> asked{0};
    const bool complete = WalkNested(
        dir.path(), {}, [&] { return ++asked > 50; }, [](NestedHit, const std::string&) {},
        threads);
    EXPECT_FALSE(complete) << "threads " << threads;
  }
}

}  // namespace
}  // namespace ae::sandbox
