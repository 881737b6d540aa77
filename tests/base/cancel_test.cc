#include "base/cancel.h"

#include <gtest/gtest.h>
#include <poll.h>

namespace ae {
namespace {

TEST(CancelTokenTest, FirstReasonWinsAndWakeFdBecomesReadable) {
  CancelToken token;
  ASSERT_GE(token.wake_fd(), 0);
  pollfd p{token.wake_fd(), POLLIN, 0};
  EXPECT_EQ(::poll(&p, 1, 0), 0);
  EXPECT_FALSE(token.cancelled());
  token.Cancel(CancelReason::kTimeout);
  token.Cancel(CancelReason::kSigint);
  EXPECT_TRUE(token.cancelled());
  EXPECT_EQ(token.reason(), CancelReason::kTimeout);
  EXPECT_EQ(::poll(&p, 1, 0), 1);
  EXPECT_EQ(::poll(&p, 1, 0), 1);  // level-triggered: every waiter sees it
}

}  // namespace
}  // namespace ae
