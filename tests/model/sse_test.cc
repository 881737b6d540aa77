#include "engine/model/sse.h"

#include <random>
#include <string>
#include <vector>

#include <gtest/gtest.h>

namespace ae {
namespace {

struct Ev {
  std::string event, data, id;
  bool operator==(const Ev&) const = default;
};

std::ostream& operator<<(std::ostream& os, const Ev& e) {
  return os << "{event=" << e.event << " data=" << e.data << " id=" << e.id << "}";
}

// Feeds `pieces` in order and returns the events.
std::vector<Ev> Parse(const std::vector<std::string>& pieces, SseParser parser = SseParser()) {
  std::vector<Ev> out;
  for (const auto& p : pieces) {
    Status s = parser.Feed(p, [&](SseEvent& e) { out.push_back({e.event, e.data, e.id}); });
    EXPECT_TRUE(s.ok()) << s.message();
  }
  return out;
}

std::vector<Ev> Parse(const std::string& whole) {
  return Parse(std::vector<std::string>{whole});
}

// A recorded Responses stream with every line-end style, comments, a multi-line event,
// an empty data line and an id.
const std::string kRecorded =
    ": keep-alive\n"
    "event: response.created\n"
    "data: {\"type\":\"response.created\"}\n"
    "\n"
    "event: response.output_text.delta\r\n"
    "data: {\"type\":\"response.output_text.delta\",\r\n"
    "data: \"delta\":\"h\xC3\xA9llo\"}\r\n"
    "\r\n"
    "id: 7\r"
    "data:no-space\r"
    "data\r"
    "\r"
    ": comment between events\n"
    "event: only-event-no-data\n"
    "\n"
    "data: last\n"
    "\n";

const std::vector<Ev> kRecordedEvents = {
    {"response.created", "{\"type\":\"response.created\"}", ""},
    {"response.output_text.delta",
     "{\"type\":\"response.output_text.delta\",\n\"delta\":\"h\xC3\xA9llo\"}", ""},
    {"", "no-space\n", "7"},
    {"", "last", "7"},
};

TEST(SseParser, ParsesRecordedStream) {
  EXPECT_EQ(Parse(kRecorded), kRecordedEvents);
}

TEST(SseParser, EverySplitPointGivesTheSameEvents) {
  for (size_t i = 0; i <= kRecorded.size(); ++i) {
    EXPECT_EQ(Parse({kRecorded.substr(0, i), kRecorded.substr(i)}), kRecordedEvents)
        << "split at " << i;
  }
}

TEST(SseParser, EveryPairOfSplitPointsGivesTheSameEvents) {
  for (size_t i = 0; i <= kRecorded.size(); i += 3) {
    for (size_t j = i; j <= kRecorded.size(); ++j) {
      ASSERT_EQ(Parse({kRecorded.substr(0, i), kRecorded.substr(i, j - i), kRecorded.substr(j)}),
                kRecordedEvents)
          << "split at " << i << " and " << j;
    }
  }
}

TEST(SseParser, ByteByByte) {
  std::vector<std::string> bytes;
  for (char c : kRecorded) bytes.emplace_back(1, c);
  EXPECT_EQ(Parse(bytes), kRecordedEvents);
}

TEST(SseParser, CrLfSplitBetweenCrAndLfIsOneLineEnd) {
  // "data: a\r" then "\n\r\n": the LF completes the CRLF, it is not an empty line.
  EXPECT_EQ(Parse({"data: a\r", "\ndata: b\r", "\n\r", "\n"}), (std::vector<Ev>{{"", "a\nb", ""}}));
}

TEST(SseParser, LoneCrLineEnds) {
  EXPECT_EQ(Parse("event: x\rdata: 1\r\rdata: 2\r\r"),
            (std::vector<Ev>{{"x", "1", ""}, {"", "2", ""}}));
}

TEST(SseParser, EventFieldResetsAfterDispatch) {
  EXPECT_EQ(Parse("event: a\ndata: 1\n\ndata: 2\n\n"),
            (std::vector<Ev>{{"a", "1", ""}, {"", "2", ""}}));
}

TEST(SseParser, OnlyOneLeadingSpaceIsStripped) {
  EXPECT_EQ(Parse("data:  two spaces\n\n"), (std::vector<Ev>{{"", " two spaces", ""}}));
}

TEST(SseParser, UnknownFieldsAndRetryAreIgnored) {
  EXPECT_EQ(Parse("retry: 100\nfoo: bar\ndata: x\n\n"), (std::vector<Ev>{{"", "x", ""}}));
}

TEST(SseParser, UnterminatedEventIsNotDispatched) {
  EXPECT_EQ(Parse("data: complete\n\ndata: partial\n"), (std::vector<Ev>{{"", "complete", ""}}));
}

TEST(SseParser, LeadingBomIsSkipped) {
  EXPECT_EQ(Parse("\xEF\xBB\xBF"
                  "data: x\n\n"),
            (std::vector<Ev>{{"", "x", ""}}));
}

// The network may cut anywhere, the BOM included (found by tests/fuzz/sse_fuzz.cc).
TEST(SseParser, LeadingBomSplitAcrossReadsIsSkipped) {
  EXPECT_EQ(Parse(std::vector<std::string>{"\xEF", "\xBB",
                                           "\xBF"
                                           "data: x\n\n"}),
            (std::vector<Ev>{{"", "x", ""}}));
  EXPECT_EQ(Parse(std::vector<std::string>{"\xEF\xBB",
                                           "\xBF"
                                           "data: y\n\n"}),
            (std::vector<Ev>{{"", "y", ""}}));
  // Bytes that only start like a BOM belong to the first line (here an unknown field name).
  EXPECT_EQ(Parse(std::vector<std::string>{"\xEF", "data: z\n\n"}), std::vector<Ev>{});
}

TEST(SseParser, VeryLongLineAcrossManyReads) {
  std::string payload(3 << 20, 'x');
  payload[12345] = 'y';
  std::string stream = "data: " + payload + "\n\n";
  std::vector<std::string> pieces;
  for (size_t i = 0; i < stream.size(); i += 4093) pieces.push_back(stream.substr(i, 4093));
  auto events = Parse(pieces);
  ASSERT_EQ(events.size(), 1u);
  EXPECT_EQ(events[0].data, payload);
}

TEST(SseParser, EventOverTheBoundIsAnError) {
  SseParser parser(1000);
  std::string line = "data: " + std::string(2000, 'a');
  Status s = parser.Feed(line, [](SseEvent&) { FAIL() << "no event expected"; });
  ASSERT_FALSE(s.ok());
  EXPECT_EQ(s.message(),
            "server-sent event larger than 1000 bytes (a line never ended); the stream is broken");

  SseParser many(1000);
  std::string lines;
  for (int i = 0; i < 30; ++i) lines += "data: " + std::string(50, 'b') + "\n";
  s = many.Feed(lines, [](SseEvent&) { FAIL() << "no event expected"; });
  ASSERT_FALSE(s.ok());
  EXPECT_EQ(s.message(), "server-sent event larger than 1000 bytes; the stream is broken");
}

TEST(SseParser, RandomGarbageNeverCrashes) {
  std::mt19937 rng(42);
  static const char kChars[] = "data: event:\r\n\n\r:{}\"x\0\xFF";
  const std::string alphabet(kChars, sizeof(kChars) - 1);
  for (int round = 0; round < 200; ++round) {
    SseParser parser(4096);
    std::string garbage;
    for (int i = 0; i < 2000; ++i) garbage.push_back(alphabet[rng() % alphabet.size()]);
    size_t pos = 0;
    size_t count = 0;
    while (pos < garbage.size()) {
      size_t n = 1 + rng() % 64;
      Status s = parser.Feed(std::string_view(garbage).substr(pos, n),
                             [&](SseEvent& e) { count += e.data.size() + 1; });
      if (!s.ok()) break;
      pos += n;
    }
    EXPECT_LE(count, garbage.size() * 2);
  }
}

}  // namespace
}  // namespace ae
