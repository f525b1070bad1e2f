// libFuzzer target: the IR parser, verifier and printer on arbitrary bytes.
//
// Besides "no crash, no leak, no undefined behaviour, no hang" it checks the properties the text
// format promises: every error has a location; whatever parses prints to text that parses again,
// verifies the same way, and prints identically (print ∘ parse is a fixed point).
#include <cstdint>
#include <string>

#include "fuzz_check.h"
#include "vdev/ir/ir_text.h"
#include "vdev/support/diagnostic.h"

using vdev::fuzz::Check;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  absl::string_view text(reinterpret_cast<const char*>(data), size);
  vdev::Diagnostic diag;
  absl::StatusOr<vdev::ir::Module> module = vdev::ir::ParseModule(text, &diag);
  if (!module.ok()) {
    Check(diag.loc.valid());
    (void)vdev::FormatDiagnostic("fuzz", text, diag);
    return 0;
  }
  vdev::Diagnostic verify_diag;
  bool verified = vdev::ir::VerifyModule(*module, &verify_diag).ok();
  if (!verified) Check(verify_diag.loc.valid());
  std::string printed = vdev::ir::PrintModule(*module);
  absl::StatusOr<vdev::ir::Module> again = vdev::ir::ParseModule(printed, &diag);
  Check(again.ok());
  Check(vdev::ir::VerifyModule(*again).ok() == verified);
  Check(vdev::ir::PrintModule(*again) == printed);
  return 0;
}
