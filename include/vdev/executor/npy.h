// NumPy `.npy` files (format versions 1.0, 2.0 and 3.0): the inputs and outputs of `vdev run`.
//
// Little-endian, C order. dtypes: f64 `<f8`, f32 `<f4`, f16 `<f2`, i64 `<i8`, i32 `<i4`, i8 `|i1`,
// u8 `|u1`, bool `|b1`; bf16, which NumPy lacks, as 2-byte raw elements `|V2` holding the bfloat16
// bits (`np.load(f).view(ml_dtypes.bfloat16)` reads them back).
//   VDEV_ASSIGN_OR_RETURN(HostTensor x, ReadNpy("x.npy"));
//   VDEV_RETURN_IF_ERROR(WriteNpy("y.npy", x));
#ifndef VDEV_NPY_H_
#define VDEV_NPY_H_

#include <string>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "vdev/kernels/tensor.h"

namespace vdev {

// NotFound for a missing file; InvalidArgument, naming the file, for anything that is not a
// well-formed C-order little-endian array of a dtype above (or whose data is cut short).
absl::StatusOr<HostTensor> ReadNpy(const std::string& path);
absl::Status WriteNpy(const std::string& path, const HostTensor& tensor);

}  // namespace vdev

#endif  // VDEV_NPY_H_
