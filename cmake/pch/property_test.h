// Precompiled in front of every C++ source of a test target that links GoogleTest and RapidCheck
// (cmake/VdevPrecompiledHeaders.cmake): test.h plus RapidCheck and its GoogleTest integration.
#pragma once

// rapidcheck/gtest.h uses GoogleTest's macros without including it.
#include "test.h"

#include "rapidcheck.h"
#include "rapidcheck/gtest.h"
