#include <catch2/catch.hpp>

#include "run_length.h"

TEST_CASE("empty text stays empty") { REQUIRE(run_length::encode("") == ""); }

#if defined(EXERCISM_RUN_ALL_TESTS)
TEST_CASE("single characters stay as they are") { REQUIRE(run_length::encode("abc") == "abc"); }

TEST_CASE("a run becomes its length and letter") { REQUIRE(run_length::encode("aaaa") == "4a"); }

TEST_CASE("runs and single characters mixed") { REQUIRE(run_length::encode("aaabcc") == "3ab2c"); }

TEST_CASE("runs longer than nine") { REQUIRE(run_length::encode(std::string(12, 'z') + "y") == "12zy"); }
#endif
