/* attnc_library.h: what every model library attnc generates shares with
   the runtime. attnc copies this text into each generated <model>.h (a
   generated header stands alone), and the runtime includes it (KernelCall.h,
   DeviceApi.h): one definition of each type, guarded so both may meet in a
   translation unit. */
#ifndef ATTNC_LIBRARY_H
#define ATTNC_LIBRARY_H

#include "HalideRuntime.h"

#ifndef ATTNC_APPEND_OUTPUT_ALIGNMENT
/* Bytes to which the output of a linear kernel with the KV-cache append
   fused in must be aligned: it reads its rows back with aligned vector
   loads and refuses a misaligned output. The runtime allocates its
   activations so. */
#define ATTNC_APPEND_OUTPUT_ALIGNMENT 128
#endif

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

#ifndef ATTNC_MODEL_LIBRARY_DEFINED
#define ATTNC_MODEL_LIBRARY_DEFINED
/* The layout of attnc_model_library; a runtime refuses a library written
   with another (attn::runtime::ModelLibrary). */
#define ATTNC_LIBRARY_ABI 2
/* The one symbol a shared model library (attnc --shared) exports: a
   function returning its attnc_model_library. */
#define ATTNC_LIBRARY_SYMBOL "attnc_library"
/* Everything the runtime needs from one model library: <model>_library in
   the generated header (static linking), and what a shared library's
   attnc_library() returns (loading at run time). */
typedef struct attnc_model_library {
  unsigned abi;              /* ATTNC_LIBRARY_ABI of the attnc that wrote it */
  const char *attnc_version; /* that attnc's ATTNC_VERSION */
  const char *name;          /* the model's name: prefix of its symbols */
  /* Halide targets of the CPU kernels, comma-separated, most specific
     first: the last is the one the library falls back to, so the CPU must
     have its features. "" for a GPU-only library. */
  const char *cpu_targets;
  const char *plan_json;
  const attnc_kernel_entry *kernels;
  unsigned long kernel_count;
  const attnc_device_api *device_api; /* NULL: no GPU kernels */
  /* The library's own Halide runtime: where its kernels report errors and
     how they allocate their temporaries (the runtime caches large ones:
     attn/runtime/KernelTemporaries.h). */
  halide_error_handler_t (*set_error_handler)(halide_error_handler_t);
  halide_malloc_t (*set_custom_malloc)(halide_malloc_t);
  halide_free_t (*set_custom_free)(halide_free_t);
} attnc_model_library;
#endif

#endif /* ATTNC_LIBRARY_H */
