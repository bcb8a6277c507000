// pheap/pheap.hpp — everything an application needs: manager, allocator, containers, errors,
// guard_faults.
#pragma once

#include "pheap/error.hpp"  // first: the C++20 check
#include "pheap/allocator.hpp"
#include "pheap/container.hpp"
#include "pheap/fault_guard.hpp"
#include "pheap/manager.hpp"
#include "pheap/object_info.hpp"
#include "pheap/options.hpp"
#include "pheap/persistable.hpp"
#include "pheap/type_name.hpp"
