/* attnc_library.h: what every model library attnc generates shares with
   the runtime. attnc copies this text into each generated <model>.h (a
   generated header stands alone), and the runtime includes it (KernelCall.h,
   DeviceApi.h): one definition of each type, guarded so both may meet in a
   translation unit. */
#ifndef ATTNC_LIBRARY_H
#define ATTNC_LIBRARY_H

#include "HalideRuntime.h"

#ifndef ATTNC_KERNEL_ENTRY_DEFINED
#define ATTNC_KERNEL_ENTRY_DEFINED
/* One kernel of <model>_kernel_table: its name, its function (type-erased:
   every kernel takes only halide_buffer_t pointers, ordered as its metadata
   says) and its Halide metadata. */
typedef struct attnc_kernel_entry {
  const char *name;
  void (*function)(void);
  const struct halide_filter_metadata_t *(*metadata)(void);
} attnc_kernel_entry;
#endif

#ifndef ATTNC_DEVICE_API_DEFINED
#define ATTNC_DEVICE_API_DEFINED
/* <model>_device_api of a library with GPU kernels: the driver loader and
   the entry points of Halide's device runtime the runtime needs, reached
   through this table so that the runtime links against CPU-only model
   libraries too (they lack the GPU API's halide_* symbols). */
typedef struct attnc_device_api {
  const char *name; /* "cuda" or "opencl": also the GPU kernels' suffix */
  int (*load_driver)(void);
  const struct halide_device_interface_t *(*device_interface)(void);
  int (*device_malloc)(void *, struct halide_buffer_t *,
                       const struct halide_device_interface_t *);
  int (*device_free)(void *, struct halide_buffer_t *);
  int (*copy_to_device)(void *, struct halide_buffer_t *,
                        const struct halide_device_interface_t *);
  int (*copy_to_host)(void *, struct halide_buffer_t *);
  int (*buffer_copy)(void *, struct halide_buffer_t *,
                     const struct halide_device_interface_t *,
                     struct halide_buffer_t *);
  int (*device_crop)(void *, const struct halide_buffer_t *,
                     struct halide_buffer_t *);
  int (*device_release_crop)(void *, struct halide_buffer_t *);
  halide_error_handler_t (*set_error_handler)(halide_error_handler_t);
} attnc_device_api;
#endif

#endif /* ATTNC_LIBRARY_H */
