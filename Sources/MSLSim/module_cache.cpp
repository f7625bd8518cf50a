// The loaded kernel objects (issue 20: a process that compiles many distinct kernels — fusion makes
// one per elementwise chain — kept every object loaded, growing without bound). A module is
// unloaded when its last reference goes; this cache is one such reference for the most recently
// used ones (so a library compiled again soon, e.g. after the runtime rebuilt an evicted pipeline,
// finds its object loaded), bounded in count and bytes, least recently used out first.
#include <dlfcn.h>

#include <cstdlib>
#include <list>
#include <map>
#include <mutex>
#include <string>
#include <vector>

#include "sim_internal.h"

namespace mgsim {

namespace {

std::atomic<int64_t> g_loaded_objects{0};
std::atomic<int64_t> g_loaded_bytes{0};
std::atomic<int64_t> g_unloaded_objects{0};

int64_t env_limit(const char *name, int64_t fallback, int64_t scale) {
  const char *v = getenv(name);
  if (!v || !*v) return fallback;
  char *end = nullptr;
  long long n = strtoll(v, &end, 10);
  return (end && *end == '\0' && n >= 1 ? int64_t(n) : fallback) * scale;
}

struct Cache {
  std::mutex mu;
  int64_t max_count = env_limit("MG_SIM_LIBRARY_CACHE", 128, 1);
  int64_t max_bytes = env_limit("MG_SIM_LIBRARY_CACHE_MB", 64, int64_t(1) << 20);
  // Most recently used first; `index` finds an entry's position, `live` any loaded module.
  std::list<std::shared_ptr<Module>> order;
  std::map<std::string, std::list<std::shared_ptr<Module>>::iterator> index;
  std::map<std::string, std::weak_ptr<Module>> live;
  int64_t bytes = 0;

  // Drops the least recently used beyond the limits into `victims`, which the caller releases
  // after unlocking: a module unloads when its last reference goes (dlclose takes the loader's
  // lock, never to be taken under this one), unless a library still uses it.
  void trim(std::vector<std::shared_ptr<Module>> &victims) {
    while (!order.empty() && (int64_t(order.size()) > max_count || bytes > max_bytes)) {
      victims.push_back(std::move(order.back()));
      order.pop_back();
      index.erase(victims.back()->key);
      bytes -= int64_t(victims.back()->bytes);
    }
  }
};

Cache &cache() {
  static Cache *c = new Cache();  // never destroyed: modules may outlive static destruction order
  return *c;
}

}  // namespace

Module::Module() = default;

Module::~Module() {
  if (handle) {
    dlclose(handle);
    g_loaded_objects.fetch_sub(1);
    g_loaded_bytes.fetch_sub(int64_t(bytes));
    g_unloaded_objects.fetch_add(1);
  }
}

std::shared_ptr<Module> cached_module(const std::string &key) {
  Cache &c = cache();
  std::vector<std::shared_ptr<Module>> victims;  // released after the lock (declared first)
  std::lock_guard<std::mutex> g(c.mu);
  auto it = c.index.find(key);
  if (it != c.index.end()) {
    c.order.splice(c.order.begin(), c.order, it->second);  // most recently used
    return *it->second;
  }
  auto l = c.live.find(key);
  if (l == c.live.end()) return nullptr;
  std::shared_ptr<Module> m = l->second.lock();
  if (!m) {
    c.live.erase(l);
    return nullptr;
  }
  // In use by a library but no longer cached: cache it again.
  c.order.push_front(m);
  c.index[key] = c.order.begin();
  c.bytes += int64_t(m->bytes);
  c.trim(victims);
  return m;
}

void cache_module(const std::shared_ptr<Module> &m) {
  g_loaded_objects.fetch_add(1);
  g_loaded_bytes.fetch_add(int64_t(m->bytes));
  Cache &c = cache();
  std::vector<std::shared_ptr<Module>> victims;  // released after the lock (declared first)
  std::lock_guard<std::mutex> g(c.mu);
  if (c.index.count(m->key)) return;
  c.order.push_front(m);
  c.index[m->key] = c.order.begin();
  c.live[m->key] = m;
  c.bytes += int64_t(m->bytes);
  // Forget keys whose modules are gone (the map would otherwise grow with every key ever loaded).
  if (c.live.size() > 2 * size_t(c.max_count) + 64) {
    for (auto i = c.live.begin(); i != c.live.end();) i = i->second.expired() ? c.live.erase(i) : std::next(i);
  }
  c.trim(victims);
}

}  // namespace mgsim

extern "C" void mgsim_library_cache_limits(int64_t count, int64_t bytes, mgsim_library_cache_state *out) {
  using namespace mgsim;
  Cache &c = cache();
  std::vector<std::shared_ptr<Module>> victims;  // released after the lock
  {
    std::lock_guard<std::mutex> g(c.mu);
    if (out) {
      out->previous_count = c.max_count;
      out->previous_bytes = c.max_bytes;
    }
    if (count >= 1) c.max_count = count;
    if (bytes >= 1) c.max_bytes = bytes;
    c.trim(victims);
    if (out) out->cached_objects = int64_t(c.order.size());
  }
  victims.clear();
  if (out) {
    out->loaded_objects = g_loaded_objects.load();
    out->loaded_bytes = g_loaded_bytes.load();
    out->unloaded_objects = g_unloaded_objects.load();
  }
}
