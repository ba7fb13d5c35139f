/* c_check.h: CHECK for the C API tests: report a failed condition with the
 * runtime's last error and count it; the test's exit status reports. */
#ifndef ATTN_TEST_C_CHECK_H
#define ATTN_TEST_C_CHECK_H

#include "attn/runtime/attn_runtime.h"

#include <stdio.h>

static int failures = 0;
#define CHECK(condition)                                                       \
  do {                                                                         \
    if (!(condition)) {                                                        \
      fprintf(stderr, "%s:%d: CHECK failed: %s (last error: %s)\n", __FILE__,  \
              __LINE__, #condition, attn_last_error());                        \
      failures++;                                                              \
    }                                                                          \
  } while (0)

#endif /* ATTN_TEST_C_CHECK_H */
