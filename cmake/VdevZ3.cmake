# Debian's libz3-dev ships no CMake package; find the C++ API by hand and expose vdev::z3.
if(NOT TARGET vdev::z3)
  find_path(VDEV_Z3_INCLUDE_DIR z3++.h)
  find_library(VDEV_Z3_LIBRARY z3)
  if(NOT VDEV_Z3_INCLUDE_DIR OR NOT VDEV_Z3_LIBRARY)
    message(FATAL_ERROR "Z3 not found: install libz3-dev (or set CMAKE_PREFIX_PATH)")
  endif()
  add_library(vdev::z3 UNKNOWN IMPORTED)
  set_target_properties(vdev::z3 PROPERTIES
    IMPORTED_LOCATION "${VDEV_Z3_LIBRARY}"
    INTERFACE_INCLUDE_DIRECTORIES "${VDEV_Z3_INCLUDE_DIR}")
endif()
