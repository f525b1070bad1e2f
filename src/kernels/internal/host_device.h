// VDEV_HOST_DEVICE marks a function written once for the CPU kernels and the CUDA device code
// (integer_math.h, elementwise_math.h): __host__ __device__ under nvcc, nothing for the host compiler.
#ifndef VDEV_SRC_KERNELS_INTERNAL_HOST_DEVICE_H_
#define VDEV_SRC_KERNELS_INTERNAL_HOST_DEVICE_H_

#if defined(__CUDACC__)
#define VDEV_HOST_DEVICE __host__ __device__
#else
#define VDEV_HOST_DEVICE
#endif

#endif  // VDEV_SRC_KERNELS_INTERNAL_HOST_DEVICE_H_
