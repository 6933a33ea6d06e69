// The tests' main(), from Debian's Catch2 2 (package catch2).
#define CATCH_CONFIG_MAIN
#include <catch2/catch.hpp>
