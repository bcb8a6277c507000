// metall/metall.hpp (pheap's Metall compatibility layer) — what Metall's single include gives:
// metall::manager, the tags, offset_ptr / to_raw_pointer, the logger, the version.
//
// Switching a Metall program to pheap: add pheap's compatibility include directory instead of
// Metall's (CMake: target_link_libraries(app PRIVATE pheap::metall) after find_package(pheap)).
// The program then stores its data in a pheap datastore (crash-safe at every flush); the
// datastore format is pheap's, not Metall's: existing Metall datastores are not read.
// Differences from Metall are listed in metall/basic_manager.hpp and metall/object_attribute.hpp.
#pragma once

#include <metall/basic_manager.hpp>
#include <metall/logger.hpp>
#include <metall/offset_ptr.hpp>
#include <metall/tags.hpp>
#include <metall/version.hpp>
