// The epoch a datastore ends at is the one its last flush() returned: a close with nothing
// dirty since that flush writes nothing (no new watermark), so what a program or a tool
// reports is where the datastore is. A close after a change still commits it.
#include <gtest/gtest.h>

#include "manager_fixture.hpp"
#include "pheap/pheap.hpp"

namespace {

using namespace pheap;

class Epochs : public pheap::test::manager_test {};

TEST_F(Epochs, ACloseWithNothingDirtyWritesNothingAndTheReopenedHeapIsAtTheLastFlush) {
  std::uint64_t flushed = 0;
  {
    manager m(create_only, path_, test::small_options());
    *m.construct<std::uint64_t>("n")() = 7;
    flushed = m.flush();
  }  // nothing written since the flush
  EXPECT_EQ(manager::peek(path_).epoch, flushed);
  {
    manager m(open_read_only, path_);
    EXPECT_EQ(m.epoch(), flushed) << "flush() returned " << flushed;
  }
  {
    manager m(open_only, path_, test::small_options());  // read-write, read only
    EXPECT_EQ(*m.find<std::uint64_t>("n").first, 7u);
  }
  EXPECT_EQ(manager::peek(path_).epoch, flushed) << "a read-write open and close that changed nothing";
}

TEST_F(Epochs, ACloseAfterAChangeStillCommitsIt) {
  std::uint64_t flushed = 0;
  {
    manager m(create_only, path_, test::small_options());
    *m.construct<std::uint64_t>("n")() = 7;
    flushed = m.flush();
    *m.find<std::uint64_t>("n").first = 8;  // dirty at close
  }
  EXPECT_EQ(manager::peek(path_).epoch, flushed + 1);
  {
    manager m(open_only, path_, test::small_options());
    EXPECT_EQ(*m.find<std::uint64_t>("n").first, 8u);
    m.set_description("changed");  // the root record changes, no page does
  }
  EXPECT_EQ(manager::peek(path_).epoch, flushed + 2);
  EXPECT_EQ(manager::peek(path_).description, "changed");
  {
    manager m(open_only, path_, test::small_options());
    m.construct<std::uint64_t>("m")(1);
    m.destroy<std::uint64_t>("m");
  }
  EXPECT_EQ(manager::peek(path_).epoch, flushed + 3) << "a construct and destroy wrote pages";
}

}  // namespace
