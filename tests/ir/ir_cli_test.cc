// `vdev fmt` / `vdev parse`: canonical output, exit status 2 and a located message on bad input.
#include <array>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <string>

#include <sys/wait.h>
#include <unistd.h>

#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace {

using ::testing::HasSubstr;

struct CliResult {
  int status;
  std::string output;  // stdout and stderr
};

CliResult Vdev(const std::string& args, const std::string& stdin_text = "") {
  std::filesystem::path in = std::filesystem::temp_directory_path() / ("vdev_cli_in_" + std::to_string(::getpid()));
  std::ofstream(in) << stdin_text;
  std::string command = std::string(VDEV_CLI) + " " + args + " < " + in.string() + " 2>&1";
  FILE* pipe = popen(command.c_str(), "r");
  std::string out;
  std::array<char, 4096> buffer;
  size_t n;
  while ((n = fread(buffer.data(), 1, buffer.size(), pipe)) > 0) out.append(buffer.data(), n);
  int status = pclose(pipe);
  std::filesystem::remove(in);
  return {WEXITSTATUS(status), out};
}

TEST(IrCli, FmtPrintsCanonicalText) {
  CliResult r = Vdev("fmt -", "def @main(%a:f32[2]){\n%0=add(%a,%a)\nreturn %0}\n");
  EXPECT_EQ(r.status, 0);
  EXPECT_EQ(r.output, "def @main(%a: f32[2]) {\n  %0 = add(%a, %a)\n  return %0\n}\n");
}

TEST(IrCli, ParseWritesInferredTypes) {
  CliResult r = Vdev("parse -", "def @main(%a: f32[2]) {\n  %0 = add(%a, %a)\n  return %0\n}\n");
  EXPECT_EQ(r.status, 0);
  EXPECT_EQ(r.output, "def @main(%a: f32[2]) {\n  %0: f32[2] = add(%a, %a)\n  return %0\n}\n");
}

TEST(IrCli, BadInputExitsTwoWithLocatedMessage) {
  CliResult r = Vdev("fmt -", "def @main(%a: f32[2]) {\n  %0 = on_device(%a, gpu:0)\n  return %0\n}\n");
  EXPECT_EQ(r.status, 2);
  EXPECT_THAT(r.output, HasSubstr("<stdin>:2:22: error: unknown device type 'gpu'"));
  EXPECT_THAT(r.output, HasSubstr("  %0 = on_device(%a, gpu:0)\n"));
  EXPECT_THAT(r.output, HasSubstr("^"));
}

TEST(IrCli, MissingFileExitsTwo) {
  CliResult r = Vdev("fmt /nonexistent/file.vdev");
  EXPECT_EQ(r.status, 2);
  EXPECT_THAT(r.output, HasSubstr("/nonexistent/file.vdev: error: cannot open: No such file or directory"));
}

TEST(IrCli, VerifierErrorsExitTwo) {
  CliResult r = Vdev("parse -", "def @main(%a: f32[2]) {\n  %0 = device_copy(%a)\n  return %0\n}\n");
  EXPECT_EQ(r.status, 2);
  EXPECT_THAT(r.output, HasSubstr("<stdin>:2:8: error: 'device_copy' needs the attribute 'src'"));
}

}  // namespace
