// The tools' progress reporter (tools/support/progress.hpp) on a fake clock: the bar's fields
// (percent, amounts, rate, ETA) and width, a plain line at most every 10 s when not on a
// terminal plus one at the end, nothing when silent, and an unknown total.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <string>

#include "support/progress.hpp"
#include "tools/tool_test_util.hpp"

namespace {

using tool_support::progress;

// A memory FILE and its contents.
struct capture {
  char* buf = nullptr;
  std::size_t len = 0;
  std::FILE* f = open_memstream(&buf, &len);
  ~capture() {
    std::fclose(f);
    std::free(buf);
  }
  std::string text() {
    std::fflush(f);
    return std::string(buf, len);
  }
};

TEST(Progress, BarShowsPercentAmountsRateAndEtaWithinTheWidth) {
  double t = 100;
  capture c;
  progress p(progress::style::bar, "ingest", progress::unit::items, "edges", c.f, [&] { return t; });
  p.set_total(1000000);
  t = 110;
  p.update(250000, "input 1/2");
  const std::string l = p.status_line(100);
  EXPECT_NE(l.find("ingest ["), std::string::npos) << l;
  EXPECT_NE(l.find(" 25.0%"), std::string::npos) << l;
  EXPECT_NE(l.find("250.0k/1.00M edges"), std::string::npos) << l;
  EXPECT_NE(l.find("25.0k edges/s"), std::string::npos) << l;
  EXPECT_NE(l.find("ETA 0:30"), std::string::npos) << l;  // 750k left at 25k/s
  EXPECT_NE(l.find("input 1/2"), std::string::npos) << l;
  EXPECT_LE(l.size(), 100u);
  const auto bar = l.substr(l.find('[') + 1, l.find(']') - l.find('[') - 1);
  EXPECT_EQ(std::count(bar.begin(), bar.end(), '#'), static_cast<long>(bar.size() / 4)) << bar;
  EXPECT_EQ(bar.find_first_not_of('#'), bar.size() / 4) << bar;
  EXPECT_LE(p.status_line(60).size(), 60u);
  // Drawn in place: \r, no newline until finish.
  const std::string drawn = c.text();
  EXPECT_EQ(drawn.front(), '\r') << drawn;
  EXPECT_EQ(drawn.find('\n'), std::string::npos) << drawn;
  p.update(1000000);
  p.finish();
  EXPECT_EQ(c.text().back(), '\n');
}

TEST(Progress, ResumedWorkCountsInThePercentButNotInTheRate) {
  double t = 0;
  capture c;
  progress p(progress::style::bar, "ingest", progress::unit::bytes, "", c.f, [&] { return t; });
  p.set_total(100u << 20);
  p.set_start(50u << 20);
  t = 10;
  p.update(60u << 20);
  const std::string l = p.status_line(120);
  EXPECT_NE(l.find(" 60.0%"), std::string::npos) << l;
  EXPECT_NE(l.find("1.0 MiB/s"), std::string::npos) << l;  // 10 MiB this run in 10 s
  EXPECT_NE(l.find("ETA 0:40"), std::string::npos) << l;
}

TEST(Progress, PlainLinesComeAtMostEveryTenSecondsAndOnceAtTheEnd) {
  double t = 0;
  capture c;
  progress p(progress::style::lines, "check", progress::unit::bytes, "", c.f, [&] { return t; });
  p.set_total(1000);
  for (t = 0.5; t < 35; t += 0.5) p.update(static_cast<std::uint64_t>(t * 20));
  p.update(1000);
  p.finish("done reading");
  const auto lines = pheap::test::lines_of(c.text());
  ASSERT_EQ(lines.size(), 4u) << c.text();  // at 10, 20 and 30 s, then the last line
  EXPECT_EQ(lines[0].find('\r'), std::string::npos);
  EXPECT_NE(lines[0].find(" 20.0%"), std::string::npos) << lines[0];
  EXPECT_EQ(lines[0].find('['), std::string::npos) << "no bar in a log: " << lines[0];
  EXPECT_NE(lines[3].find("100.0%"), std::string::npos) << lines[3];
  EXPECT_NE(lines[3].find("done reading (done)"), std::string::npos) << lines[3];
}

TEST(Progress, SilentPrintsNothingAndAnUnknownTotalShowsAmountAndRate) {
  double t = 0;
  capture c;
  {
    progress p(progress::style::silent, "x", progress::unit::bytes, "", c.f, [&] { return t; });
    t = 100;
    p.update(5);
    p.finish();
  }
  EXPECT_TRUE(c.text().empty());
  progress u(progress::style::lines, "ingest", progress::unit::bytes, "", c.f, [&] { return t; });
  t = 102;
  u.update(4u << 20);
  const std::string l = u.status_line(0);
  EXPECT_NE(l.find("4.0 MiB  2.0 MiB/s  (total unknown)"), std::string::npos) << l;
  EXPECT_EQ(l.find('%'), std::string::npos) << l;
}

}  // namespace
