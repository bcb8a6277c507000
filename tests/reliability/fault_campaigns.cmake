# Owned by the fault-campaign work (see fault_campaigns section in CMakeLists.txt).
# Read errors during page faults and during open/recovery (fault-injecting engine through
# PHEAP_FAULT_EIO_AT, victim rel_heap_child --fault-engine). Kill during close and chained
# kills during recovery live in rel_heap_kill_test.
pheap_add_test(rel_fault_read_error_test fault_read_error_test.cpp LABELS reliability)
add_dependencies(rel_fault_read_error_test rel_heap_child)
if(TARGET pheap_tool)
  target_compile_definitions(rel_fault_read_error_test PRIVATE PHEAP_TOOL_BIN="$<TARGET_FILE:pheap_tool>")
  add_dependencies(rel_fault_read_error_test pheap_tool)
endif()

# Write and sync errors (EIO / ENOSPC through PHEAP_FAULT_EIO_AT / PHEAP_FAULT_ENOSPC_AT)
# during eviction, flush, snapshot and recovery of the heap mix workload.
pheap_add_test(rel_fault_write_error_test fault_write_error_test.cpp LABELS reliability)
add_dependencies(rel_fault_write_error_test rel_heap_child)
if(TARGET pheap_tool)
  target_compile_definitions(rel_fault_write_error_test PRIVATE PHEAP_TOOL_BIN="$<TARGET_FILE:pheap_tool>")
  add_dependencies(rel_fault_write_error_test pheap_tool)
endif()
