// Precompiled for targets that link CLI11 (the vdev command line): base.h and CLI11, whose
// header-only implementation alone takes about 8 s to compile in every source that includes it.
#pragma once

#include "base.h"

#include "CLI/CLI.hpp"
