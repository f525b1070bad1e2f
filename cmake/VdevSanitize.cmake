# VDEV_SANITIZE (a -fsanitize= list such as "address,undefined" or "thread") instruments every C and C++
# target of the tree, the tests and tools included, at compile and link time. Frame pointers stay, for
# whole stacks in the reports; UBSan findings abort instead of printing and going on, so a test that
# hits undefined behaviour fails. CUDA device code is not instrumented (compute-sanitizer covers it).
if(VDEV_SANITIZE STREQUAL "")
  return()
endif()
if(VDEV_SANITIZE MATCHES "thread" AND VDEV_SANITIZE MATCHES "address")
  message(FATAL_ERROR "VDEV_SANITIZE=${VDEV_SANITIZE}: thread and address cannot be combined")
endif()
set(_vdev_sanitize_flags -fsanitize=${VDEV_SANITIZE} -fno-omit-frame-pointer)
if(VDEV_SANITIZE MATCHES "undefined")
  list(APPEND _vdev_sanitize_flags -fno-sanitize-recover=undefined)
endif()
add_compile_options("$<$<COMPILE_LANGUAGE:C,CXX>:${_vdev_sanitize_flags}>")
add_link_options("$<$<LINK_LANGUAGE:C,CXX>:${_vdev_sanitize_flags}>")
message(STATUS "vdev: sanitizers ${VDEV_SANITIZE}")
