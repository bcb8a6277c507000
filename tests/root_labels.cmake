# Tests that need root, labelled `root` (included at the end of tests/CMakeLists.txt).
#
# scripts/test.sh runs every test as root in its release stage, then the ASan+UBSan build's
# tests as uid/gid 65534 with vm.unprivileged_userfaultfd=0 (all but `root` and the labels the
# release stage alone runs, scripts/test.sh): a test
# belongs here only if it cannot work without root — loop mounts, sysctl writes, switching to
# uid 65534 — never because it fails as an ordinary user. Without root these tests skip outside
# CI and fail under CI=true (PHEAP_REQUIRE_FEATURE), so leaving one out shows up as a failure of
# the ASan+UBSan stage. TESTS are regexes on ctest names (see pheap_add_test_labels).

# Switches a child to uid 65534 (setuid) after reading vm.unprivileged_userfaultfd.
pheap_add_test_labels(pager_behaviour_test LABELS root
  TESTS "^PagerUffd\\.UnprivilegedUserGetsAWorkingRegion$")

# mkfs + mount -o loop of a small ext4 image (CAP_SYS_ADMIN).
if(TARGET rel_full_disk_test)
  pheap_add_test_labels(rel_full_disk_test LABELS root TESTS "^FullDisk\\.")
endif()

# Sets vm.unprivileged_userfaultfd=0 (sysctl write) and runs children as uid 65534 (setuid).
pheap_add_test_labels(rel_resource_limits_test LABELS root
  TESTS "^ResourceLimits\\.UnprivilegedUserWithoutUnprivilegedUserfaultfdRoundTripsAHeap$")

# Creates a memory cgroup v1 (a write under /sys/fs/cgroup/memory) and moves a child into it:
# every test of the GraphLimitsCgroup fixtures (96 MiB, and GraphLimitsCgroupOf192MiB).
if(TARGET rel_graph_limits_test)
  pheap_add_test_labels(rel_graph_limits_test LABELS root
    TESTS "^GraphLimitsCgroup\\." "^GraphLimitsCgroupOf192MiB\\.")
endif()

# mount -t ramfs (CAP_SYS_ADMIN): a file system that refuses O_DIRECT.
pheap_add_test_labels(io_direct_fallback_test LABELS root)

# Creates a v1/v2 memory cgroup (a write under /sys/fs/cgroup) and moves a child into it.
# Every test of the PagerBudget fixture does (its SetUp makes the cgroup).
pheap_add_test_labels(pager_budget_test LABELS root TESTS "^PagerBudget\\.")

# Also labelled `root`, where they are defined (CMake 3.25 sets test properties only in the
# defining directory): MetallCompat.InstalledPackageServesMetallPrograms (tests/compat) and
# MpiPackage.InstalledPackageServesMpiPrograms (tests/mpi). `cmake --install` writes
# install_manifest.txt into the build tree, which belongs to root in scripts/test.sh; uid 65534
# cannot write it. As the build tree's owner the install needs no privilege.
