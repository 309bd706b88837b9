// RateProxy moved to tools/links/rate_proxy.h (//tools/links:rate_proxy) so that
// trace_relay can use it outside tests; this header keeps
// `#include "test/util/rate_proxy.h"` working.
#ifndef ROG_TEST_UTIL_RATE_PROXY_H_
#define ROG_TEST_UTIL_RATE_PROXY_H_

#include "tools/links/rate_proxy.h"

#endif  // ROG_TEST_UTIL_RATE_PROXY_H_
