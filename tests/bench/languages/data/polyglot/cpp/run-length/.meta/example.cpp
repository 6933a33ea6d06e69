#include "run_length.h"

namespace run_length {
std::string encode(const std::string& text) {
    std::string out;
    for (std::size_t i = 0; i < text.size();) {
        std::size_t j = i;
        while (j < text.size() && text[j] == text[i]) ++j;
        if (j - i > 1) out += std::to_string(j - i);
        out += text[i];
        i = j;
    }
    return out;
}
}  // namespace run_length
