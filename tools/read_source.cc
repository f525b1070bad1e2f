// Reading the program text of a command through vdev::ReadSourceFile or MapSourceFile, the refusal on
// stderr.
#include <iostream>
#include <string>

#include "commands.h"
#include "vdev/support/source_file.h"

namespace vdev::cli {

std::string DisplayName(const std::string& path) { return SourceDisplayName(path); }

bool ReadSource(const std::string& path, std::string* source) {
  absl::StatusOr<std::string> text = ReadSourceFile(path);
  if (!text.ok()) {
    std::cerr << text.status().message() << "\n";
    return false;
  }
  *source = *std::move(text);
  return true;
}

bool ReadSource(const std::string& path, SourceText* source) {
  absl::StatusOr<SourceText> text = MapSourceFile(path);
  if (!text.ok()) {
    std::cerr << text.status().message() << "\n";
    return false;
  }
  *source = *std::move(text);
  return true;
}

}  // namespace vdev::cli
