// A robot's training binary in miniature, built outside Bazel against the
// installed client SDK (test/deploy/install_test.sh builds it with plain g++
// and with CMake, from `pkg-config rog-client`):
//
//   rog_consumer SERVER ID STEP ITERATIONS EXPECT BARRIER_DIR TEAM
//
// Every iteration adds STEP to every parameter (integer values, so sums are
// exact). After its iterations the worker flushes, marks BARRIER_DIR/ID and
// waits for the TEAM's marks, syncs, and checks that every parameter equals
// EXPECT: 1 (the initial value) plus every worker's updates, i.e. that the
// updates of the others reached it through rogd. Exit 0 when they do.
#include <dirent.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <string>
#include <thread>
#include <vector>

#include "client/worker.h"

static int Fail(const std::string& id, const std::string& what, const absl::Status& s) {
  std::fprintf(stderr, "%s: %s: %s\n", id.c_str(), what.c_str(), s.ToString().c_str());
  return 1;
}

// Files in `dir` not starting with '.'.
static int Marks(const std::string& dir) {
  int n = 0;
  if (DIR* d = opendir(dir.c_str())) {
    while (dirent* e = readdir(d)) n += e->d_name[0] != '.';
    closedir(d);
  }
  return n;
}

int main(int argc, char** argv) {
  if (argc != 8) {
    std::fprintf(stderr, "usage: %s SERVER ID STEP ITERATIONS EXPECT BARRIER_DIR TEAM\n", argv[0]);
    return 2;
  }
  const std::string id = argv[2], barrier = argv[6];
  const float step = std::atof(argv[3]), expect = std::atof(argv[5]);
  const int iterations = std::atoi(argv[4]), team = std::atoi(argv[7]);

  // 8 rows of 256 plus one row of 4: 2052 parameters.
  absl::StatusOr<rog::Layout> layout = rog::Layout::Create({{"w", {8, 256}}, {"b", {4}}});
  if (!layout.ok()) return Fail(id, "layout", layout.status());
  std::vector<float> params(layout->total_numel(), 1.0f);
  rog::WorkerOptions options;
  options.server = argv[1];
  options.worker_id = id;
  absl::StatusOr<std::unique_ptr<rog::Worker>> worker =
      rog::Worker::Start(options, *layout, params);
  if (!worker.ok()) return Fail(id, "start", worker.status());

  std::vector<float> update(params.size(), step);
  for (int i = 0; i < iterations; ++i) {
    absl::Status s = (*worker)->BeginIteration(absl::MakeSpan(params), 30);
    if (!s.ok()) return Fail(id, "begin iteration", s);
    absl::StatusOr<rog::IterationStats> stats = (*worker)->EndIteration(update);
    if (!stats.ok()) return Fail(id, "end iteration", stats.status());
  }
  absl::Status s = (*worker)->Flush(30);
  if (!s.ok()) return Fail(id, "flush", s);

  // Wait until every worker has flushed: then Sync brings all their updates.
  std::ofstream(barrier + "/" + id) << "flushed\n";
  for (int waited = 0; Marks(barrier) < team; ++waited) {
    if (waited > 600) return Fail(id, "barrier", absl::DeadlineExceededError("team never flushed"));
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }
  s = (*worker)->Sync(30);
  if (!s.ok()) return Fail(id, "sync", s);

  std::vector<float> replica = (*worker)->Replica();
  size_t wrong = 0;
  for (float v : replica) wrong += v != expect;
  if (wrong != 0) {
    std::fprintf(stderr, "%s: %zu of %zu parameters differ from %g (first: %g)\n", id.c_str(),
                 wrong, replica.size(), expect, replica[0]);
    return 1;
  }
  s = (*worker)->Close(10);
  if (!s.ok()) return Fail(id, "close", s);
  std::printf("%s: %d iterations, every one of %zu parameters is %g as expected\n", id.c_str(),
              iterations, replica.size(), expect);
  return 0;
}
