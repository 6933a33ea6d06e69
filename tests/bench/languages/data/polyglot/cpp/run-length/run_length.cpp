#include "run_length.h"

namespace run_length {
std::string encode(const std::string& text) {
    return "";
}
}  // namespace run_length
