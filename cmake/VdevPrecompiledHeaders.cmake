# Precompiled headers (VDEV_PRECOMPILE_HEADERS, on by default). Most of a vdev source's compile time
# is parsing the standard library, Abseil, GoogleTest, RapidCheck, CLI11 and pybind11 (a planner test: 9
# of its 16 s at -O2), and every source parses them again. vdev_precompile_headers() gives every C++
# target of the tree with at least three C++ sources one precompiled header (cmake/pch/): base.h for
# libraries, cli.h for the command line (CLI11), test.h for targets that link GoogleTest,
# property_test.h for those that also link RapidCheck, python.h for the Python extensions. It cuts the
# summed compile time of the tree by a third; a header compile costs ~10 s, so targets of one or two
# sources are left alone, and targets that would compile the same header the same way share one
# compile of it (_vdev_pch_group). The headers hold only third-party headers: sources still include what
# they use and build without them.
option(VDEV_PRECOMPILE_HEADERS "Precompile the standard library, Abseil and test-framework headers per target" ON)

function(_vdev_targets_below dir out)
  get_property(targets DIRECTORY "${dir}" PROPERTY BUILDSYSTEM_TARGETS)
  get_property(subdirs DIRECTORY "${dir}" PROPERTY SUBDIRECTORIES)
  foreach(sub IN LISTS subdirs)
    _vdev_targets_below("${sub}" below)
    list(APPEND targets ${below})
  endforeach()
  set(${out} ${targets} PARENT_SCOPE)
endfunction()

function(_vdev_cxx_source_count target out)
  get_target_property(sources ${target} SOURCES)
  set(count 0)
  foreach(source IN LISTS sources)
    if(source MATCHES "\\.(cc|cpp|cxx)$")
      math(EXPR count "${count} + 1")
    endif()
  endforeach()
  set(${out} ${count} PARENT_SCOPE)
endfunction()

# The header a target precompiles (see above), or "" for a target that keeps none.
function(_vdev_pch_header target out)
  set(${out} "" PARENT_SCOPE)
  get_target_property(type ${target} TYPE)
  if(NOT type MATCHES "^(STATIC_LIBRARY|SHARED_LIBRARY|MODULE_LIBRARY|OBJECT_LIBRARY|EXECUTABLE)$")
    return()
  endif()
  _vdev_cxx_source_count(${target} count)
  if(count LESS 3)
    return()
  endif()
  get_target_property(libs ${target} LINK_LIBRARIES)
  set(header base.h)
  if(libs MATCHES "CLI11")
    set(header cli.h)
  elseif(libs MATCHES "pybind11")
    set(header python.h)
  elseif(libs MATCHES "GTest|gtest|gmock")
    set(header test.h)
    if(libs MATCHES "rapidcheck")
      set(header property_test.h)
    endif()
  endif()
  set(${out} ${header} PARENT_SCOPE)
endfunction()

# Targets that would compile the same header the same way share one compile of it (REUSE_FROM): the
# same header, the same kind of code (libraries are position-independent, executables PIE, and a
# compiler refuses a header precompiled for the other) and the same target compile options. The
# target that compiles it for the group is the first with no compile definitions of its own, so no
# macro of its header differs from a member's definition of it (clang refuses the header then; a macro
# defined on one side only is accepted, and no third-party header reads vdev's). Sharing saves ~10 s
# of compile per target.
function(_vdev_pch_group target header out)
  get_target_property(type ${target} TYPE)
  set(kind library)
  if(type STREQUAL "EXECUTABLE")
    set(kind executable)
  elseif(type STREQUAL "MODULE_LIBRARY")
    set(kind module)
  endif()
  get_target_property(options ${target} COMPILE_OPTIONS)
  string(MAKE_C_IDENTIFIER "${header}_${kind}_${options}" group)
  set(${out} ${group} PARENT_SCOPE)
endfunction()

function(vdev_precompile_headers)
  if(NOT VDEV_PRECOMPILE_HEADERS)
    return()
  endif()
  set(pch_dir "${PROJECT_SOURCE_DIR}/cmake/pch")
  _vdev_targets_below("${PROJECT_SOURCE_DIR}" targets)
  set(precompiled 0)
  set(compiled 0)
  foreach(target IN LISTS targets)
    _vdev_pch_header(${target} header)
    if(header STREQUAL "")
      continue()
    endif()
    _vdev_pch_group(${target} ${header} group)
    get_target_property(definitions ${target} COMPILE_DEFINITIONS)
    if(DEFINED _vdev_pch_from_${group})
      target_precompile_headers(${target} REUSE_FROM ${_vdev_pch_from_${group}})
    else()
      target_precompile_headers(${target} PRIVATE "$<$<COMPILE_LANGUAGE:CXX>:${pch_dir}/${header}>")
      math(EXPR compiled "${compiled} + 1")
      if(NOT definitions)
        set(_vdev_pch_from_${group} ${target})
      endif()
    endif()
    math(EXPR precompiled "${precompiled} + 1")
  endforeach()
  message(STATUS "vdev: precompiled headers for ${precompiled} targets, compiled ${compiled} times")
endfunction()
