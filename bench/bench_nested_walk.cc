// The search for nested repositories (sandbox/nested_walk.h), the one start-up cost that grows
// with the workspace: 15,000 directories on the disk, as leaves (a hundred empty directories
// in each of 150, like build output) and as a deeper tree (3,000 packages of five directories,
// like node_modules), walked on one thread and on as many as the walk takes here; and, for
// scale, one fstatat per directory of the same trees: the least that any search which looks at
// each directory pays (an index kept between runs included: only a directory's own ctime says
// that its entries changed, and nothing cheaper says so for a whole subtree).
#include <benchmark/benchmark.h>
#include <fcntl.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <map>
#include <string>
#include <vector>

#include "bench/bench_dir.h"
#include "sandbox/nested_walk.h"

namespace {

using ae::sandbox::NestedHit;
using ae::sandbox::WalkNested;
using ae::sandbox::WalkThreads;

constexpr int kDirectories = 15000;

// The trees, made once under /var/tmp (the disk, as a workspace is) and removed at exit.
class Trees {
 public:
  static const Trees& Get() {
    static const Trees trees;
    return trees;
  }
  std::string leaves, packages;  // empty when the directory could not be made

 private:
  Trees() {
    if (base_.path().empty()) return;
    leaves = base_.path() + "/leaves";
    packages = base_.path() + "/packages";
    for (int i = 0; i < kDirectories; ++i) {
      std::filesystem::create_directories(leaves + "/d" + std::to_string(i / 100) + "/e" +
                                          std::to_string(i % 100));
    }
    // Five directories a package: the package, lib, lib/a, lib/b, test.
    for (int i = 0; i < kDirectories / 5; ++i) {
      const std::string pkg = packages + "/p" + std::to_string(i);
      std::filesystem::create_directories(pkg + "/lib/a");
      std::filesystem::create_directories(pkg + "/lib/b");
      std::filesystem::create_directories(pkg + "/test");
    }
  }
  ae::bench::BenchDir base_{"/var/tmp/ae-bench-walk"};
};

// arg 0: 0 leaves, 1 packages; arg 1: 0 one thread, 1 WalkThreads().
void BM_NestedWalk15kDirs(benchmark::State& state) {
  const Trees& trees = Trees::Get();
  const std::string& root = state.range(0) == 0 ? trees.leaves : trees.packages;
  if (root.empty()) {
    state.SkipWithError("cannot make the trees under /var/tmp");
    return;
  }
  const unsigned threads = state.range(1) == 0 ? 1 : WalkThreads();
  int hits = 0;
  for (auto _ : state) {
    WalkNested(
        root, {}, [] { return false; }, [&](NestedHit, const std::string&) { ++hits; }, threads);
  }
  benchmark::DoNotOptimize(hits);
  state.SetLabel(std::to_string(threads) + " thread(s)");
  state.counters["dirs"] =
      benchmark::Counter(kDirectories, benchmark::Counter::kIsIterationInvariantRate);
}
BENCHMARK(BM_NestedWalk15kDirs)
    ->ArgNames({"packages", "threads"})
    ->Args({0, 0})
    ->Args({0, 1})
    ->Args({1, 0})
    ->Args({1, 1})
    ->UseRealTime()
    ->Unit(benchmark::kMillisecond);

// The directories of `root`, grouped by their parent (relative to `root`, "." for itself).
std::map<std::string, std::vector<std::string>> DirectoriesByParent(const std::string& root) {
  std::map<std::string, std::vector<std::string>> by_parent;
  std::error_code ec;
  for (auto it = std::filesystem::recursive_directory_iterator(root, ec);
       it != std::filesystem::recursive_directory_iterator(); it.increment(ec)) {
    if (ec || !it->is_directory(ec) || it->is_symlink(ec)) continue;
    const std::filesystem::path rel = std::filesystem::relative(it->path(), root, ec);
    const std::string parent = rel.parent_path().empty() ? "." : rel.parent_path().string();
    by_parent[parent].push_back(rel.filename().string());
  }
  return by_parent;
}

// arg 0: 0 leaves, 1 packages. One thread: compare with BM_NestedWalk15kDirs's threads:0.
void BM_OneStatPerDirectory15kDirs(benchmark::State& state) {
  const Trees& trees = Trees::Get();
  const std::string& root = state.range(0) == 0 ? trees.leaves : trees.packages;
  if (root.empty()) {
    state.SkipWithError("cannot make the trees under /var/tmp");
    return;
  }
  const auto by_parent = DirectoriesByParent(root);
  const int root_fd = ::open(root.c_str(), O_PATH | O_DIRECTORY | O_CLOEXEC);
  size_t dirs = 0;
  for (const auto& [parent, names] : by_parent) dirs += names.size();
  for (auto _ : state) {
    for (const auto& [parent, names] : by_parent) {
      // Each parent once, by descriptor, as the walk opens it: the names are looked up in it.
      const int fd =
          ::openat(root_fd, parent.c_str(), O_PATH | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
      for (const std::string& name : names) {
        struct stat st {};
        benchmark::DoNotOptimize(::fstatat(fd, name.c_str(), &st, AT_SYMLINK_NOFOLLOW));
      }
      ::close(fd);
    }
  }
  ::close(root_fd);
  state.counters["dirs"] =
      benchmark::Counter(static_cast<double>(dirs), benchmark::Counter::kIsIterationInvariantRate);
}
BENCHMARK(BM_OneStatPerDirectory15kDirs)
    ->ArgNames({"packages"})
    ->Arg(0)
    ->Arg(1)
    ->UseRealTime()
    ->Unit(benchmark::kMillisecond);

}  // namespace
