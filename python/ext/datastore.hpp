// python/ext/datastore.hpp — pheap.Datastore and pheap.Vector: named objects of a datastore
// as NumPy arrays that are the heap's memory (no copy).
//
//   Datastore.create_array(name, shape, dtype)  a named array T[n] (n = prod(shape)), zero-filled;
//                                              a shape of more than one axis is recorded in the
//                                              object's description as "shape=AxBxC"
//   Datastore.array(name)                       a view of a numeric array or of a
//                                              pheap::container::vector<T> (its elements now)
//   Datastore.create_vector / vector(name)      a pheap.Vector: append, extend, reserve, view()
// Views are writable only on a read-write open (flags.writeable is False otherwise, and NumPy
// refuses to set it). Every page of a view is read once when the view is made, under the fault
// guard: a damaged page is pheap.CorruptError naming the segment file and the page then, not
// SIGBUS inside NumPy. Caveat: a page that is evicted later and found damaged when read again
// (the disk changed under a live process) is SIGBUS, as in C++.
#pragma once

#include <nanobind/nanobind.h>

#include <string>

#include "store.hpp"

namespace pyheap {

// Registers Datastore, Vector, create, open, info, remove, consistent.
void register_datastore(nanobind::module_& m);

}  // namespace pyheap
