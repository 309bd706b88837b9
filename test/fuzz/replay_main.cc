// main() of the fuzz targets when they are not built with libFuzzer
// (every build but --config=fuzz): runs LLVMFuzzerTestOneInput once on each
// file named, or on each file in each folder named, so `bazel test` replays
// the checked-in corpus (also under --config=asan, ubsan and tsan). A crash
// is a failed test; otherwise it prints tools/test.sh's closing line, one
// case per target.
#include <dirent.h>
#include <sys/stat.h>

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size);

namespace {

void Collect(const std::string& path, std::vector<std::string>* files) {
  struct stat st;
  if (::stat(path.c_str(), &st) != 0) {
    std::fprintf(stderr, "replay: cannot stat %s\n", path.c_str());
    std::exit(1);
  }
  if (!S_ISDIR(st.st_mode)) {
    files->push_back(path);
    return;
  }
  DIR* dir = ::opendir(path.c_str());
  std::vector<std::string> names;
  while (dirent* e = ::readdir(dir)) {
    if (e->d_name[0] != '.') names.push_back(e->d_name);
  }
  ::closedir(dir);
  std::sort(names.begin(), names.end());
  for (const std::string& n : names) Collect(path + "/" + n, files);
}

}  // namespace

int main(int argc, char** argv) {
  std::vector<std::string> files;
  for (int i = 1; i < argc; ++i) Collect(argv[i], &files);
  if (files.empty()) {
    std::fprintf(stderr, "replay: no input files\n0 passed, 1 failed\n");
    return 1;
  }
  for (const std::string& f : files) {
    std::ifstream in(f, std::ios::binary);
    std::stringstream b;
    b << in.rdbuf();
    const std::string bytes = b.str();
    LLVMFuzzerTestOneInput(reinterpret_cast<const uint8_t*>(bytes.data()), bytes.size());
  }
  std::printf("replay: %zu inputs ran without a crash\n1 passed, 0 failed\n", files.size());
  return 0;
}
