// sparse_store/commit_state.hpp — what a commit carries from step to step (commit.cpp), and a
// prepared epoch waiting for confirm(). Private to the store's implementation files.
#pragma once

#include "store_impl.hpp"

namespace pheap::store {

struct store_impl::commit_state {
  page_map::sealed_epoch sealed;  // the epoch being committed and the blocks it changed
  page_map::map_update update;    // its map blocks and directory (empty: the map is unchanged)
  epoch_files files;              // the segments its writes touched
};

struct store_impl::pending_epoch {
  commit_state state;
  superblock record;  // as written (prepared) into `slot`
  unsigned slot = 0;
};

}  // namespace pheap::store
