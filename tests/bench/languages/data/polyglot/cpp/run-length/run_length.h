#pragma once

#include <string>

namespace run_length {
std::string encode(const std::string& text);
}
