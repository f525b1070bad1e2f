# Finds the Python 3 interpreter and pybind11 for the `vdev` Python package; sets VDEV_HAVE_PYTHON
# and VDEV_PYTHON_INSTALL_DIR (site-packages relative to the install prefix).
#
# Debian's pybind11, pytest, Hypothesis and NumPy live in the system interpreter's dist-packages, so
# /usr/bin/python3 is preferred over whatever python3 comes first in PATH (a pyenv or conda one would
# not see them). -DPython3_EXECUTABLE=… chooses another.
if(NOT DEFINED Python3_EXECUTABLE AND EXISTS /usr/bin/python3)
  set(Python3_EXECUTABLE /usr/bin/python3 CACHE FILEPATH "Python interpreter of the vdev package")
endif()
find_package(Python3 COMPONENTS Interpreter Development.Module)
if(Python3_FOUND)
  set(PYBIND11_FINDPYTHON ON)
  find_package(pybind11 2.6 CONFIG QUIET)
endif()
# DLPack's header (Debian's libdlpack-dev): vdev.run reads any `__dlpack__` producer in place.
find_path(VDEV_DLPACK_INCLUDE_DIR dlpack/dlpack.h)
if(NOT Python3_FOUND OR NOT pybind11_FOUND OR NOT VDEV_DLPACK_INCLUDE_DIR)
  if(VDEV_BUILD_PYTHON STREQUAL "ON")
    message(FATAL_ERROR "VDEV_BUILD_PYTHON=ON but Python 3 (with headers), pybind11 or dlpack/dlpack.h was not found")
  endif()
  return()
endif()
set(VDEV_HAVE_PYTHON ON)

# The interpreter's site-packages relative to the install prefix, so that `cmake --install` with the
# default prefix lands where `python3` imports from (/usr/local/lib/python3.11/dist-packages on
# Debian) and `--prefix P` installs under P.
execute_process(
  COMMAND ${Python3_EXECUTABLE} -c "import os, sys, sysconfig
site = sysconfig.get_path('platlib')
prefix = os.path.realpath(sys.argv[1])
if os.path.realpath(site).startswith(prefix + os.sep):
    print(os.path.relpath(os.path.realpath(site), prefix))
else:
    print(sysconfig.get_path('platlib', 'posix_prefix', vars={'base': '/', 'platbase': '/'}).lstrip('/'))"
    ${CMAKE_INSTALL_PREFIX}
  OUTPUT_VARIABLE vdev_site_packages OUTPUT_STRIP_TRAILING_WHITESPACE)
set(VDEV_PYTHON_INSTALL_DIR "${vdev_site_packages}" CACHE STRING
    "Where cmake --install puts the vdev Python package, relative to the install prefix")
