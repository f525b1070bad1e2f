#include "dynload/dynamic_library.h"

#include <dlfcn.h>

#include "absl/strings/str_cat.h"

namespace vdev::dynload {

DynamicLibrary DynamicLibrary::Open(const std::string& soname, const std::string& fallback_dir) {
  DynamicLibrary library;
  library.soname_ = soname;
  library.handle_ = dlopen(soname.c_str(), RTLD_NOW | RTLD_LOCAL);
  if (library.handle_ == nullptr && !fallback_dir.empty()) {
    const std::string first_error = dlerror();
    library.handle_ = dlopen(absl::StrCat(fallback_dir, "/", soname).c_str(), RTLD_NOW | RTLD_LOCAL);
    if (library.handle_ == nullptr) {
      library.status_ = absl::UnavailableError(
          absl::StrCat("cannot load ", soname, " (", first_error, "; nor from ", fallback_dir, ")"));
    }
  } else if (library.handle_ == nullptr) {
    library.status_ = absl::UnavailableError(absl::StrCat("cannot load ", soname, " (", dlerror(), ")"));
  }
  return library;
}

void* DynamicLibrary::Symbol(const char* name) {
  if (handle_ == nullptr) return nullptr;
  void* address = dlsym(handle_, name);
  if (address == nullptr && status_.ok()) {
    status_ = absl::UnavailableError(absl::StrCat(soname_, " has no ", name));
  }
  return address;
}

}  // namespace vdev::dynload
