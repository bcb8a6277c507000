// Metall's container aliases, each constructed in the heap with the manager's allocator and
// used once; the Boost >= 1.81 / 1.82 ones only where Boost has them (as in Metall).
#include <iostream>

#include <metall/container/deque.hpp>
#include <metall/container/list.hpp>
#include <metall/container/map.hpp>
#include <metall/container/priority_queue.hpp>
#include <metall/container/queue.hpp>
#include <metall/container/scoped_allocator.hpp>
#include <metall/container/set.hpp>
#include <metall/container/stack.hpp>
#include <metall/container/string.hpp>
#include <metall/container/unordered_map.hpp>
#include <metall/container/unordered_set.hpp>
#include <metall/container/vector.hpp>
#include <metall/metall.hpp>
#if BOOST_VERSION >= 108100
#include <metall/container/unordered_flat_map.hpp>
#include <metall/container/unordered_flat_set.hpp>
#endif
#if BOOST_VERSION >= 108200
#include <metall/container/unordered_node_map.hpp>
#include <metall/container/unordered_node_set.hpp>
#endif

using namespace metall;
namespace mc = metall::container;

int main() {
  int n = 0;
  {
    manager mg(create_only, "datastore");
    auto* dq = mg.construct<mc::deque<int>>("deque")(mg.get_allocator());
    dq->push_back(1);
    n += mg.destroy_ptr(dq);
    n += mg.construct<mc::list<int>>("list")(mg.get_allocator())->emplace_back(1);
    n += (*mg.construct<mc::map<int, int>>("map")(mg.get_allocator()))[0] = 1;
    n += mg.construct<mc::multimap<int, int>>("multimap")(mg.get_allocator())->emplace(1, 1)->second;
    n += *mg.construct<mc::set<int>>("set")(mg.get_allocator())->insert(1).first;
    n += *mg.construct<mc::multiset<int>>("multiset")(mg.get_allocator())->insert(1);
    n += (*mg.construct<mc::unordered_map<int, int>>("unordered_map")(mg.get_allocator()))[0] = 1;
    n += mg.construct<mc::unordered_multimap<int, int>>("unordered_multimap")(mg.get_allocator())->emplace(1, 1)->second;
    n += *mg.construct<mc::unordered_set<int>>("unordered_set")(mg.get_allocator())->insert(1).first;
    n += *mg.construct<mc::unordered_multiset<int>>("unordered_multiset")(mg.get_allocator())->insert(1);
#if BOOST_VERSION >= 108100
    mg.construct<mc::unordered_flat_map<int, int>>("unordered_flat_map")(mg.get_allocator());
    mg.construct<mc::unordered_flat_set<int>>("unordered_flat_set")(mg.get_allocator());
#endif
#if BOOST_VERSION >= 108200
    mg.construct<mc::unordered_node_map<int, int>>("unordered_node_map")(mg.get_allocator());
    mg.construct<mc::unordered_node_set<int>>("unordered_node_set")(mg.get_allocator());
#endif
    n += mg.construct<mc::vector<int>>("vector")(mg.get_allocator())->emplace_back(1);
    auto* st = mg.construct<mc::stack<int>>("stack")(mg.get_allocator());
    st->push(1);
    n += st->top();
    auto* q = mg.construct<mc::queue<int>>("queue")(mg.get_allocator());
    q->push(1);
    n += q->front();
    auto* pq = mg.construct<mc::priority_queue<int>>("priority_queue")(mg.get_allocator());
    pq->push(0);
    pq->push(1);
    n += pq->top();
    n += static_cast<int>(mg.construct<mc::string>("string")("1", mg.get_allocator())->size());
    n += static_cast<int>(mg.construct<mc::wstring>("wstring")(L"1", mg.get_allocator())->size());
    using sets = mc::vector<mc::set<int>, manager::scoped_allocator_type<mc::set<int>>>;
    auto* vs = mg.construct<sets>("vector-of-sets")(mg.get_allocator());
    vs->resize(1);
    n += *vs->front().insert(1).first;
  }
  manager mg(open_read_only, "datastore");
  std::cout << n << " operations, " << mg.get_num_named_objects() << " containers after reopen" << std::endl;
  std::cout << mg.find<mc::priority_queue<int>>("priority_queue").first->top() << ' '
            << mg.find<mc::stack<int>>("stack").first->size() << std::endl;
  return 0;
}
