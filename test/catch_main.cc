// The main() of every Catch2 test binary in ROG.
#define CATCH_CONFIG_MAIN
#include "catch2/catch.hpp"
