// Reads Prometheus' text exposition format in tests.
#ifndef ROG_TEST_UTIL_PROMETHEUS_TEXT_H_
#define ROG_TEST_UTIL_PROMETHEUS_TEXT_H_

#include <cstdlib>
#include <map>
#include <sstream>
#include <string>

namespace rog {

// Sample lines: series (name and labels, as printed) -> value.
inline std::map<std::string, double> PrometheusSamples(const std::string& text) {
  std::map<std::string, double> out;
  std::istringstream in(text);
  std::string line;
  while (std::getline(in, line)) {
    if (line.empty() || line[0] == '#') continue;
    const size_t space = line.rfind(' ');
    out[line.substr(0, space)] = std::strtod(line.c_str() + space + 1, nullptr);
  }
  return out;
}

}  // namespace rog

#endif  // ROG_TEST_UTIL_PROMETHEUS_TEXT_H_
