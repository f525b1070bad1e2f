// Runs ONNX's backend node tests (DIR/test_*/model.onnx with test_data_set_*/input_N.pb and
// output_N.pb) through the ONNX importer and the executor, in one process:
//
//   onnx_backend_tests [--backend host|cuda] [--filter SUBSTRING] [--verbose] DIR
//
// Each test is imported with its inputs' values known (so a shape given as an input folds, as a
// frontend with static shapes would), run once per data set and compared with the expected outputs
// at ONNX's backend tolerance: |actual - expected| <= 1e-7 + 1e-3 |expected|, NaN where NaN, and the
// same shape and dtype. A test that vdev cannot run (IsSkip: an unsupported op or dtype, a shape
// that depends on a run-time value, a random Dropout mask) is skipped with that reason; every other
// import or run error is a failure. Prints each failure and skip, then the
// counts and the skips grouped by reason. Exit status 1 when a test failed.
#include <algorithm>
#include <cmath>
#include <filesystem>
#include <iostream>
#include <map>
#include <string>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "vdev/executor/executor.h"
#include "vdev/frontend/onnx_import.h"

namespace fs = std::filesystem;
using vdev::HostTensor;

namespace {

// input_0.pb, input_1.pb, … (or output_N.pb) of a data set, in index order.
absl::StatusOr<std::vector<HostTensor>> ReadTensors(const fs::path& dir, const std::string& prefix) {
  std::vector<HostTensor> out;
  for (int i = 0;; ++i) {
    const fs::path p = dir / absl::StrCat(prefix, "_", i, ".pb");
    if (!fs::exists(p)) break;
    absl::StatusOr<HostTensor> t = vdev::frontend::ReadOnnxTensorFile(p.string());
    if (!t.ok()) return t.status();
    out.push_back(*std::move(t));
  }
  return out;
}

absl::Status Compare(const HostTensor& actual, const HostTensor& expected, size_t index) {
  if (actual.dtype != expected.dtype || actual.shape != expected.shape)
    return absl::InternalError(absl::StrCat("output ", index, ": got ", vdev::ir::DTypeName(actual.dtype), " with ",
                                            actual.shape.size(), " dims, expected ",
                                            vdev::ir::DTypeName(expected.dtype), " with ", expected.shape.size()));
  for (int64_t i = 0; i < expected.NumElements(); ++i) {
    const double a = vdev::ReadAsDouble(actual.Ref(), i), e = vdev::ReadAsDouble(expected.Ref(), i);
    const bool ok = std::isnan(e) ? std::isnan(a) : (a == e || std::fabs(a - e) <= 1e-7 + 1e-3 * std::fabs(e));
    if (!ok) return absl::InternalError(absl::StrCat("output ", index, "[", i, "]: got ", a, ", expected ", e));
  }
  return absl::OkStatus();
}

enum class Outcome { kPass, kFail, kSkip };

// Refusals that name what vdev lacks: an op or input type the importer does not map, an element
// type vdev has no dtype for, a dtype the op's kernel does not implement, a value computed at run
// time that the import needs (vdev folds static shapes only), an output shape that depends on a
// run-time value, or a random Dropout mask (whose expected values are those of ONNX's reference RNG,
// which no other implementation reproduces).
bool IsSkip(absl::string_view why) {
  for (absl::string_view reason :
       {"unsupported op", "must be known at import", "unsupported input type", "vdev lacks", "is not supported (",
        "output shape depends on a run-time value", "draws a random mask"}) {
    if (absl::StrContains(why, reason)) return true;
  }
  return false;
}

struct Result {
  Outcome outcome;
  std::string why;
};

absl::StatusOr<std::unique_ptr<vdev::ExecutionBackend>> MakeBackend(const std::string& name) {
  if (name == "cuda") return vdev::CreateCudaBackend(nullptr, 1);
  return vdev::CreateHostBackend(nullptr);
}

Result RunTest(const fs::path& dir, const std::string& backend_name) {
  std::vector<fs::path> sets;
  for (const fs::directory_entry& e : fs::directory_iterator(dir)) {
    if (e.is_directory() && absl::StartsWith(e.path().filename().string(), "test_data_set_")) sets.push_back(e.path());
  }
  std::sort(sets.begin(), sets.end());
  if (sets.empty()) return {Outcome::kFail, "no test_data_set_*"};
  for (const fs::path& set : sets) {
    absl::StatusOr<std::vector<HostTensor>> inputs = ReadTensors(set, "input");
    absl::StatusOr<std::vector<HostTensor>> expected = ReadTensors(set, "output");
    if (!inputs.ok() || !expected.ok()) {
      // Test data that is not plain tensors (sequences, optionals) belongs to a model the importer
      // refuses; report its reason when it has one.
      const absl::Status s = inputs.ok() ? expected.status() : inputs.status();
      absl::StatusOr<vdev::frontend::ImportedModel> model =
          vdev::frontend::ImportOnnxFile((dir / "model.onnx").string());
      const std::string why(model.ok() ? s.message() : model.status().message());
      return {IsSkip(why) ? Outcome::kSkip : Outcome::kFail, why};
    }
    // Graph inputs are matched to input_N.pb by position; the tensors' names give the graph names.
    vdev::frontend::ImportOptions options;
    absl::StatusOr<std::vector<std::string>> names = vdev::frontend::OnnxGraphInputNames((dir / "model.onnx").string());
    if (!names.ok()) return {Outcome::kFail, std::string(names.status().message())};
    for (size_t i = 0; i < names->size() && i < inputs->size(); ++i) options.known_inputs[(*names)[i]] = (*inputs)[i];
    absl::StatusOr<vdev::frontend::ImportedModel> model =
        vdev::frontend::ImportOnnxFile((dir / "model.onnx").string(), options);
    if (!model.ok()) {
      const std::string why(model.status().message());
      return {IsSkip(why) ? Outcome::kSkip : Outcome::kFail, why};
    }
    std::vector<HostTensor> args = *inputs;
    args.resize(model->inputs.size());
    for (const HostTensor& c : model->constant_values) args.push_back(c);
    absl::StatusOr<vdev::LoweredProgram> program = vdev::CompileForExecution(std::move(model->module), "model.onnx");
    if (!program.ok()) return {Outcome::kFail, std::string(program.status().message())};
    absl::StatusOr<std::unique_ptr<vdev::ExecutionBackend>> backend = MakeBackend(backend_name);
    if (!backend.ok()) return {Outcome::kFail, std::string(backend.status().message())};
    absl::StatusOr<std::unique_ptr<vdev::Executor>> exec = vdev::Executor::Load(*program, backend->get());
    if (!exec.ok()) return {Outcome::kFail, std::string(exec.status().message())};
    absl::StatusOr<std::vector<HostTensor>> outputs = (*exec)->Run(args);
    if (!outputs.ok()) {
      const std::string why(outputs.status().message());
      return {IsSkip(why) ? Outcome::kSkip : Outcome::kFail, why};
    }
    if (outputs->size() != expected->size())
      return {Outcome::kFail, absl::StrCat(outputs->size(), " outputs, expected ", expected->size())};
    for (size_t i = 0; i < expected->size(); ++i) {
      if (absl::Status s = Compare((*outputs)[i], (*expected)[i], i); !s.ok())
        return {Outcome::kFail, absl::StrCat(set.filename().string(), ": ", s.message())};
    }
  }
  return {Outcome::kPass, ""};
}

// "node X (Op): unsupported op Op…" -> "Op"; other reasons are kept whole.
std::string SkipKey(const std::string& why) {
  if (const size_t k = why.find("': dtype ");
      k != std::string::npos && why.find("is not supported (") != std::string::npos)
    return absl::StrCat("kernel lacks the dtype: ",
                        why.substr(why.rfind('\'', k - 1), why.find(" is not") - why.rfind('\'', k - 1)));
  if (why.find("draws a random mask") != std::string::npos)
    return "training-mode Dropout with ratio > 0: the expected output depends on ONNX's reference RNG";
  if (why.find("output shape depends on a run-time value") != std::string::npos)
    return absl::StrCat("output shape depends on a run-time value: ",
                        why.substr(why.find(" (") + 2, why.find("):") - why.find(" (") - 2));
  if (why.find("must be known at import") != std::string::npos)
    return absl::StrCat("a run-time value needed at import by ",
                        why.substr(why.find(" (") + 2, why.find("):") - why.find(" (") - 2));
  const size_t at = why.find("unsupported op ");
  if (at == std::string::npos) return why.substr(why.find(": ") == std::string::npos ? 0 : why.find(": ") + 2);
  const size_t start = at + 15;
  return why.substr(start, why.find_first_of(":,", start) - start);
}

}  // namespace

int main(int argc, char** argv) {
  std::string backend = "host", filter, root;
  bool verbose = false;
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    if (a == "--backend" && i + 1 < argc) backend = argv[++i];
    else if (a == "--filter" && i + 1 < argc) filter = argv[++i];
    else if (a == "--verbose") verbose = true;
    else root = a;
  }
  if (root.empty() || (backend != "host" && backend != "cuda")) {
    std::cerr << "usage: onnx_backend_tests [--backend host|cuda] [--filter SUBSTRING] [--verbose] DIR\n";
    return 2;
  }
  std::vector<fs::path> tests;
  for (const fs::directory_entry& e : fs::directory_iterator(root)) {
    if (fs::exists(e.path() / "model.onnx") && absl::StrContains(e.path().filename().string(), filter))
      tests.push_back(e.path());
  }
  std::sort(tests.begin(), tests.end());
  int passed = 0, failed = 0, skipped = 0;
  std::map<std::string, int> skips;
  for (const fs::path& t : tests) {
    const Result r = RunTest(t, backend);
    const std::string name = t.filename().string();
    if (r.outcome == Outcome::kPass) {
      ++passed;
      if (verbose) std::cout << "PASS " << name << "\n";
    } else if (r.outcome == Outcome::kFail) {
      ++failed;
      std::cout << "FAIL " << name << ": " << r.why << "\n";
    } else {
      ++skipped;
      ++skips[SkipKey(r.why)];
      if (verbose) std::cout << "SKIP " << name << ": " << r.why << "\n";
    }
  }
  std::cout << "skipped, by reason:\n";
  for (const auto& [why, n] : skips) std::cout << "  " << n << "  " << why << "\n";
  std::cout << "onnx backend node tests (" << backend << "): " << passed << " passed, " << failed << " failed, "
            << skipped << " skipped, of " << tests.size() << "\n";
  return failed == 0 ? 0 : 1;
}
