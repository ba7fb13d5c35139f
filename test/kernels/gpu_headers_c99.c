/* The generated headers of libraries with GPU kernels compile as strict C99
   (both GPU APIs in one translation unit: their shared definitions are
   guarded). Built, not run. */
#include "cuda_gqa.h"
#include "opencl_gqa.h"

const attnc_device_api *attn_test_device_apis[] = {&cuda_gqa_device_api,
                                                   &opencl_gqa_device_api};
