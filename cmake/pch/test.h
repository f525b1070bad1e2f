// Precompiled in front of every C++ source of a test target that links GoogleTest
// (cmake/VdevPrecompiledHeaders.cmake): base.h plus GoogleTest and GoogleMock.
#pragma once

#include "base.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
