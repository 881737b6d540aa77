#include "base/duration.h"

#include <gtest/gtest.h>

#include <cmath>

namespace ae {
namespace {

TEST(DurationTest, HugeDurationsAreClamped) {
  EXPECT_EQ(*ParseDurationMs("9999999h"), kMaxDurationMs);
  EXPECT_EQ(*ParseDurationMs("90s"), 90000);
  EXPECT_EQ(ClampDurationMs(INT64_MAX), kMaxDurationMs);
  EXPECT_EQ(ClampDurationMs(-5), 0);
  EXPECT_EQ(ClampDurationMs(1500), 1500);
}

TEST(DurationTest, TheModelCanLowerACommandTimeoutButNeverRaiseOrDisableIt) {
  const int64_t configured = 10000;
  EXPECT_EQ(LowerLimitMs(500, configured), 500);
  EXPECT_EQ(LowerLimitMs(0.2, configured), 1);
  EXPECT_EQ(LowerLimitMs(60000, configured), configured);
  EXPECT_EQ(LowerLimitMs(9.2e18, configured), configured);
  EXPECT_EQ(LowerLimitMs(1e300, configured), configured);
  EXPECT_EQ(LowerLimitMs(INFINITY, configured), configured);
  EXPECT_EQ(LowerLimitMs(0, configured), configured);
  EXPECT_EQ(LowerLimitMs(-1, configured), configured);
  EXPECT_EQ(LowerLimitMs(NAN, configured), configured);
  // No configured limit: a request applies, clamped; none stays none.
  EXPECT_EQ(LowerLimitMs(500, 0), 500);
  EXPECT_EQ(LowerLimitMs(1e300, 0), kMaxDurationMs);
  EXPECT_EQ(LowerLimitMs(-1, 0), 0);
}

}  // namespace
}  // namespace ae
