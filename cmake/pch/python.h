// Precompiled in front of every C++ source of a Python extension (cmake/VdevPrecompiledHeaders.cmake):
// pybind11, which includes Python.h, before base.h, as Python.h asks to come before the standard
// headers.
#pragma once

#include "pybind11/pybind11.h"

#include "pybind11/numpy.h"
#include "pybind11/stl.h"

#include "base.h"
