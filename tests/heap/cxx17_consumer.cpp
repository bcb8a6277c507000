// Compiled as C++17 by Build.ACxx17ConsumerOfThePublicHeadersGetsAClearError: the public
// headers must refuse it with pheap's #error (README "Requirements"), first.
#include <pheap/pheap.hpp>
#include <pheap/graph/store.hpp>

int main() { return 0; }
