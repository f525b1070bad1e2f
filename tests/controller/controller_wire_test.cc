// The process back end's wire format against corrupted input: lengths and shapes whose sizes
// overflow are refused before anything is allocated for them.
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <cstdint>

#include "controller/internal/frame_reader.h"
#include "controller/internal/protocol.h"
#include "gtest/gtest.h"

namespace vdev::internal {
namespace {

class SocketPair {
 public:
  SocketPair() { EXPECT_EQ(socketpair(AF_UNIX, SOCK_STREAM, 0, fds_), 0); }
  ~SocketPair() {
    close(fds_[0]);
    close(fds_[1]);
  }
  void Write(const void* data, size_t n) { ASSERT_EQ(write(fds_[1], data, n), static_cast<ssize_t>(n)); }
  int reader() const { return fds_[0]; }

 private:
  int fds_[2] = {-1, -1};
};

TEST(FrameReaderTest, CutsConsecutiveFrames) {
  SocketPair pair;
  for (absl::string_view text : {"one", "", "three"}) {
    const uint64_t length = text.size();
    pair.Write(&length, sizeof length);
    pair.Write(text.data(), text.size());
  }
  FrameReader reader;
  ASSERT_GT(reader.Fill(pair.reader(), MSG_DONTWAIT), 0);
  absl::string_view message;
  ASSERT_TRUE(reader.Next(&message));
  EXPECT_EQ(message, "one");
  ASSERT_TRUE(reader.Next(&message));
  EXPECT_EQ(message, "");
  ASSERT_TRUE(reader.Next(&message));
  EXPECT_EQ(message, "three");
  EXPECT_FALSE(reader.Next(&message));
}

TEST(FrameReaderTest, RefusesALengthOverTheLimitInsteadOfAllocatingIt) {
  for (uint64_t length : {kMaxFrameBytes + 1, uint64_t{1} << 62, ~uint64_t{0}}) {
    SocketPair pair;
    pair.Write(&length, sizeof length);
    pair.Write("abc", 3);
    FrameReader reader;
    ASSERT_GT(reader.Fill(pair.reader(), MSG_DONTWAIT), 0);  // the header arrives
    absl::string_view message;
    EXPECT_FALSE(reader.Next(&message));
    errno = 0;
    EXPECT_EQ(reader.Fill(pair.reader(), MSG_DONTWAIT), -1) << length;
    EXPECT_EQ(errno, EMSGSIZE) << length;
  }
}

std::string TensorHeaderMessage(const Shape& shape, uint64_t bytes) {
  Encoder out;
  out.U8(static_cast<uint8_t>(ir::DType::kF32));
  out.ShapeOf(shape);
  out.U64(bytes);
  return out.Take();
}

TEST(DecoderTest, ReadsATensorHeaderWhoseBytesMatchItsShape) {
  const std::string message = TensorHeaderMessage({3, 5}, 60);
  Decoder in(message);
  HostTensor t;
  ASSERT_TRUE(in.TensorHeader(&t));
  EXPECT_EQ(t.shape, (Shape{3, 5}));
  EXPECT_EQ(t.bytes.size(), 60u);
}

TEST(DecoderTest, RefusesAShapeWhoseByteCountWrapsAround) {
  // 2^62 * 4 f32 elements: 2^66 bytes, which wraps to 0 in 64 bits.
  for (const Shape& shape :
       {Shape{int64_t{1} << 62, 4}, Shape{int64_t{1} << 32, int64_t{1} << 32}, Shape{INT64_MAX, INT64_MAX}}) {
    const std::string message = TensorHeaderMessage(shape, 0);
    Decoder in(message);
    HostTensor t;
    EXPECT_FALSE(in.TensorHeader(&t));
  }
}

}  // namespace
}  // namespace vdev::internal
