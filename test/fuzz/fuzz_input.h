// A reader over a fuzzer's input bytes: takes what it is asked for and
// zeros once the input is used up, so every input decodes to something.
#ifndef ROG_TEST_FUZZ_FUZZ_INPUT_H_
#define ROG_TEST_FUZZ_FUZZ_INPUT_H_

#include <cstddef>
#include <cstdint>
#include <string>

namespace rog {

class FuzzInput {
 public:
  FuzzInput(const uint8_t* data, size_t size) : data_(data), size_(size) {}

  uint8_t Byte() { return at_ < size_ ? data_[at_++] : 0; }

  uint32_t U32() {
    uint32_t v = 0;
    for (int i = 0; i < 4; ++i) v |= uint32_t{Byte()} << (8 * i);
    return v;
  }

  // Bytes not taken yet.
  size_t left() const { return size_ - at_; }

  // Everything not taken yet.
  std::string Rest() {
    std::string s(reinterpret_cast<const char*>(data_) + at_, size_ - at_);
    at_ = size_;
    return s;
  }

 private:
  const uint8_t* data_;
  size_t size_;
  size_t at_ = 0;
};

}  // namespace rog

#endif  // ROG_TEST_FUZZ_FUZZ_INPUT_H_
