# OpenBLAS (Debian's libopenblas-dev) for the CPU kernels. Its own cblas.h (which declares
# openblas_set_num_threads) lives in an openblas-pthread folder that CMake's FindBLAS does not
# report, so find it and the library by hand, that folder first, and expose vdev::openblas.
if(NOT TARGET vdev::openblas)
  set(_vdev_openblas_arch "${CMAKE_LIBRARY_ARCHITECTURE}")
  find_path(VDEV_OPENBLAS_INCLUDE_DIR cblas.h
    HINTS /usr/include/${_vdev_openblas_arch}/openblas-pthread
    PATH_SUFFIXES openblas-pthread openblas)
  find_library(VDEV_OPENBLAS_LIBRARY openblas
    HINTS /usr/lib/${_vdev_openblas_arch}/openblas-pthread
    PATH_SUFFIXES openblas-pthread)
  if(NOT VDEV_OPENBLAS_INCLUDE_DIR OR NOT VDEV_OPENBLAS_LIBRARY)
    message(FATAL_ERROR "OpenBLAS not found: install libopenblas-dev (or set CMAKE_PREFIX_PATH)")
  endif()
  add_library(vdev::openblas UNKNOWN IMPORTED)
  set_target_properties(vdev::openblas PROPERTIES
    IMPORTED_LOCATION "${VDEV_OPENBLAS_LIBRARY}"
    INTERFACE_INCLUDE_DIRECTORIES "${VDEV_OPENBLAS_INCLUDE_DIR}")
endif()
