// .npy files: every dtype round-trips, NumPy's own header variants read, and each malformed file is
// an error naming the file.
#include <sys/stat.h>
#include <unistd.h>

#include <cstdlib>
#include <fstream>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "executor_test_util.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "vdev/executor/npy.h"

namespace vdev {
namespace {

using ::testing::HasSubstr;

class NpyTest : public ::testing::Test {
 protected:
  void SetUp() override {
    std::string pattern = ::testing::TempDir() + "/npy_test_XXXXXX";
    ASSERT_NE(mkdtemp(pattern.data()), nullptr);
    dir_ = pattern;
  }
  void TearDown() override { std::system(("rm -rf '" + dir_ + "'").c_str()); }

  std::string Path(const std::string& name) const { return dir_ + "/" + name; }

  // A version 1.0 file with `header` (padded as NumPy pads it) followed by `data`.
  std::string WriteRaw(const std::string& name, const std::string& header, const std::string& data,
                       std::string magic = "\x93NUMPY") {
    std::string h = header;
    const size_t unpadded = 6 + 2 + 2 + h.size() + 1;
    h.append((64 - unpadded % 64) % 64, ' ');
    h.push_back('\n');
    std::string bytes = magic + std::string("\x01\x00", 2);
    bytes.push_back(static_cast<char>(h.size() & 0xFF));
    bytes.push_back(static_cast<char>(h.size() >> 8));
    bytes += h + data;
    return WriteBytes(name, bytes);
  }
  std::string WriteBytes(const std::string& name, const std::string& bytes) {
    std::ofstream out(Path(name), std::ios::binary);
    out << bytes;
    return Path(name);
  }
  std::string dir_;
};

TEST_F(NpyTest, EveryDTypeRoundTrips) {
  const ir::DType dtypes[] = {ir::DType::kF64, ir::DType::kF32, ir::DType::kF16, ir::DType::kBF16, ir::DType::kI64,
                              ir::DType::kI32, ir::DType::kI8,  ir::DType::kU8,  ir::DType::kBool};
  for (ir::DType dtype : dtypes) {
    const bool boolean = dtype == ir::DType::kBool;
    HostTensor t = testing_executor::Make(
        dtype, {2, 3}, boolean ? std::vector<double>{1, 0, 1, 1, 0, 0} : std::vector<double>{1, 2, 3, 4, 5, 120});
    const std::string path = Path(absl::StrCat(ir::DTypeName(dtype), ".npy"));
    ASSERT_TRUE(WriteNpy(path, t).ok()) << ir::DTypeName(dtype);
    absl::StatusOr<HostTensor> back = ReadNpy(path);
    ASSERT_TRUE(back.ok()) << back.status();
    EXPECT_EQ(back->dtype, dtype) << ir::DTypeName(dtype);
    EXPECT_EQ(back->shape, t.shape) << ir::DTypeName(dtype);
    EXPECT_EQ(back->bytes, t.bytes) << ir::DTypeName(dtype);
  }
}

TEST_F(NpyTest, ScalarsAndVectorsRoundTrip) {
  for (const Shape& shape : {Shape{}, Shape{5}, Shape{0}, Shape{1, 1, 2}}) {
    HostTensor t = testing_executor::F32(shape, {1.5, -2, 3, 4, 5});
    ASSERT_TRUE(WriteNpy(Path("s.npy"), t).ok());
    absl::StatusOr<HostTensor> back = ReadNpy(Path("s.npy"));
    ASSERT_TRUE(back.ok()) << back.status();
    EXPECT_EQ(back->shape, shape);
    EXPECT_EQ(back->bytes, t.bytes);
  }
}

TEST_F(NpyTest, BFloat16IsStoredAsRawTwoByteElements) {
  ASSERT_TRUE(WriteNpy(Path("b.npy"), testing_executor::Make(ir::DType::kBF16, {1}, {1})).ok());
  std::ifstream in(Path("b.npy"), std::ios::binary);
  std::string bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  EXPECT_THAT(bytes, HasSubstr("'descr': '|V2'"));
  EXPECT_EQ(bytes.size() % 64, 2u);  // data starts at a multiple of 64
}

TEST_F(NpyTest, ReadsNumPysHeaderSpelling) {
  // np.save writes the keys in this order with a trailing comma and a one-element tuple.
  const std::string path = WriteRaw("np.npy", "{'descr': '<i4', 'fortran_order': False, 'shape': (2,), }",
                                    std::string("\x07\x00\x00\x00\xfe\xff\xff\xff", 8));
  absl::StatusOr<HostTensor> t = ReadNpy(path);
  ASSERT_TRUE(t.ok()) << t.status();
  EXPECT_EQ(t->dtype, ir::DType::kI32);
  EXPECT_THAT(testing_executor::Values(*t), ::testing::ElementsAre(7, -2));
}

TEST_F(NpyTest, AMissingFileIsNotFound) {
  absl::StatusOr<HostTensor> t = ReadNpy(Path("absent.npy"));
  EXPECT_EQ(t.status().code(), absl::StatusCode::kNotFound);
  EXPECT_THAT(std::string(t.status().message()), HasSubstr("absent.npy"));
}

void ExpectInvalid(const absl::StatusOr<HostTensor>& t, const std::string& path, const std::string& why) {
  ASSERT_FALSE(t.ok()) << path;
  EXPECT_EQ(t.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(std::string(t.status().message()), HasSubstr(path));
  EXPECT_THAT(std::string(t.status().message()), HasSubstr(why));
}

TEST_F(NpyTest, BadMagic) {
  const std::string path =
      WriteRaw("magic.npy", "{'descr': '<f4', 'fortran_order': False, 'shape': (1,), }", "abcd", "\x93NUMPZ");
  ExpectInvalid(ReadNpy(path), path, "magic");
}

TEST_F(NpyTest, TruncatedHeader) {
  const std::string path = WriteBytes("header.npy", std::string("\x93NUMPY\x01\x00\x76\x00{'descr': '<f4'", 25));
  ExpectInvalid(ReadNpy(path), path, "header");
}

TEST_F(NpyTest, TruncatedPrefix) {
  const std::string path = WriteBytes("prefix.npy", "\x93NUM");
  ExpectInvalid(ReadNpy(path), path, "not a .npy file");
}

TEST_F(NpyTest, TruncatedData) {
  const std::string path =
      WriteRaw("data.npy", "{'descr': '<f4', 'fortran_order': False, 'shape': (4,), }", "abcdefgh");
  ExpectInvalid(ReadNpy(path), path, "holds 8 data bytes");
}

TEST_F(NpyTest, ExtraDataIsAnError) {
  const std::string path =
      WriteRaw("extra.npy", "{'descr': '<f4', 'fortran_order': False, 'shape': (1,), }", "abcdefgh");
  ExpectInvalid(ReadNpy(path), path, "needs 4");
}

TEST_F(NpyTest, FortranOrder) {
  const std::string path =
      WriteRaw("fortran.npy", "{'descr': '<f4', 'fortran_order': True, 'shape': (1, 2), }", std::string(8, '\0'));
  ExpectInvalid(ReadNpy(path), path, "Fortran");
}

TEST_F(NpyTest, UnknownDType) {
  for (const char* descr : {"<c8", ">f4", "<U3", "O"}) {
    const std::string path =
        WriteRaw("dtype.npy", absl::StrCat("{'descr': '", descr, "', 'fortran_order': False, 'shape': (1,), }"),
                 std::string(16, '\0'));
    ExpectInvalid(ReadNpy(path), path, absl::StrCat("unsupported dtype '", descr, "'"));
  }
}

TEST_F(NpyTest, HeaderWithoutShape) {
  const std::string path = WriteRaw("noshape.npy", "{'descr': '<f4', 'fortran_order': False, }", "abcd");
  ExpectInvalid(ReadNpy(path), path, "lacks");
}

TEST_F(NpyTest, NegativeDimension) {
  const std::string path = WriteRaw("neg.npy", "{'descr': '<f4', 'fortran_order': False, 'shape': (-1,), }", "abcd");
  ExpectInvalid(ReadNpy(path), path, "bad shape");
}

TEST_F(NpyTest, UnsupportedVersion) {
  const std::string path = WriteBytes("v9.npy", std::string("\x93NUMPY\x09\x00\x10\x00", 10) + std::string(16, ' '));
  ExpectInvalid(ReadNpy(path), path, "version 9");
}

TEST_F(NpyTest, ADirectoryIsNotAFile) {
  ASSERT_EQ(mkdir(Path("dir.npy").c_str(), 0700), 0);
  ExpectInvalid(ReadNpy(Path("dir.npy")), Path("dir.npy"), "not a regular file");
}

TEST_F(NpyTest, WritingIntoAMissingDirectoryFailsNamingThePath) {
  absl::Status s = WriteNpy(Path("no/such/dir/x.npy"), testing_executor::F32({1}, {1}));
  EXPECT_FALSE(s.ok());
  EXPECT_THAT(std::string(s.message()), HasSubstr("no/such/dir/x.npy"));
}

}  // namespace
}  // namespace vdev
