#include "sim/engine/simulator.hpp"

#include <algorithm>
#include <atomic>
#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <map>
#include <numeric>
#include <stdexcept>
#include <string>
#include <tuple>
#include <unordered_map>

#include <simgrid/kernel/Timer.hpp>
#include <simgrid/s4u/Activity.hpp>
#include <simgrid/s4u/Comm.hpp>
#include <simgrid/s4u/Actor.hpp>
#include <simgrid/s4u/Engine.hpp>
#include <simgrid/s4u/Mailbox.hpp>
#include <xbt/log.h>

#include "sim/fabric/topology_zone.hpp"

namespace commstack::sim {
namespace {

// The mailbox every actor-started comm to a GPU goes through (roots and actor pairs alike): any
// receive posted there is on that GPU's host, so which one meets a send does not change its route.
simgrid::s4u::Mailbox* receive_box(int gpu) {
  return simgrid::s4u::Mailbox::by_name("rx" + std::to_string(gpu));
}

// A flow travels as its comm's opaque data: id + 1, so that no flow's tag is null (a mailbox send
// needs a non-null payload). The integer is never dereferenced; flow_id reads it back.
void* flow_tag(int id) {
  return reinterpret_cast<void*>(static_cast<std::intptr_t>(id) + 1);  // NOLINT(performance-no-int-to-ptr)
}
int flow_id(const void* tag) {
  return static_cast<int>(reinterpret_cast<std::intptr_t>(tag) - 1);
}

// SimGrid 3.32 cannot start a second engine in a process, even after the first one is gone.
std::atomic<bool> g_simulator_created{false};

// Actor stack size (see engine_args); sanitizers' larger frames need more.
#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)
constexpr int kActorStackKiB = 64;
#else
constexpr int kActorStackKiB = 16;
#endif

// SimGrid options that make its network model the exact alpha-beta model with max-min fair
// sharing (measured in shared research notes, pinned by test_sim_closed_form.cpp):
//  - CM02: no latency/bandwidth correction factors (LV08 inflates small messages 13x);
//  - crosstraffic off: otherwise 5% of every flow is charged to the reverse direction;
//  - TCP-gamma huge: otherwise each flow is capped at gamma / (2 * route latency);
//  - log thresholds: users see only commstack's output.
std::vector<std::string> engine_args() {
  return {"commstack", "--log=root.thresh:critical", "--log=xbt_cfg.thresh:critical",
          "--cfg=network/model:CM02", "--cfg=network/crosstraffic:0", "--cfg=network/TCP-gamma:1e18",
          "--cfg=surf/precision:1e-12",
          // Actors (used for large batches of independent flows, see launch_roots_with_actors)
          // need little stack: they run put_init / start / wait_any and SimGrid's maestro does the
          // rest on its own stack; 4 KiB overflows, 8 KiB runs the 4096- and 16384-GPU rings, so
          // 16 KiB leaves twice that (sanitizers' larger frames get 64). SimGrid calloc's every
          // stack: at 16384 GPUs (32768 actors) this is 512 MiB of the RSS. No guard page keeps
          // thousands of actors under vm.max_map_count.
          std::string("--cfg=contexts/stack-size:") + std::to_string(kActorStackKiB),
          "--cfg=contexts/guard-size:0"};
}

}  // namespace

struct Simulator::Impl {
  std::unique_ptr<simgrid::s4u::Engine> engine;
  TopologyZone* zone = nullptr;  // owned by the engine (it is the root zone)

  // State of the run in progress.
  const FlowGraph* graph = nullptr;
  FlowGraph::Adjacency adj;
  std::vector<simgrid::s4u::CommPtr> live;       // keeps each comm alive until it completes
  std::vector<simgrid::s4u::CommPtr> graveyard;  // completed comms, freed at the next completion
  std::vector<bool> by_actor;  // flow started by launch_roots_with_actors
  // Coalesced flows (see coalesce_identical_flows): fold_of[id] indexes folds for the flow whose
  // comm carries the fold (its first member), -1 for every other flow.
  std::vector<int> fold_of;
  std::vector<std::vector<int>> folds;
  std::vector<double> ready_s;
  std::vector<double> start_s;
  std::vector<double> sent_s;
  std::vector<double> group_end_s;
  std::vector<FlowRecord>* records = nullptr;
  long long finished = 0;
  long long maestro_in_flight = 0;  // comms the maestro started that have not completed
  long long maestro_limit = 0;      // Simulator::set_maestro_comms_limit
  double t0 = 0;

  void launch(int id, double now);
  std::uint64_t payload(int id) const;  // bytes of the SimGrid comm that carries flow id
  // Fills folds and fold_of; with nothing to coalesce every flow has its own comm (fold_of -1).
  bool coalesce_identical_flows();
  bool find_folds();           // groups of identical flows, or false where sharing a comm is not exact
  void transfer_done(int id);  // id's comm finished: every flow it carries is sent
  void launch_roots_with_actors(const std::vector<int>& roots);
  void start_transfer(int id);
  void sent(int id);     // transfer done: release Dep::sent successors, start the latency
  void arrived(int id);  // latency done: release Dep::arrival successors
  void release(int id, int kind_bit, double now);
};

void Simulator::Impl::launch(int id, double now) {
  const Flow& f = graph->flow(id);
  ready_s[static_cast<std::size_t>(id)] = now;
  if (f.delay_s > 0) {
    simgrid::kernel::timer::Timer::set(now + f.delay_s, [this, id] { start_transfer(id); });
  } else {
    start_transfer(id);
  }
}

// SimGrid 3.32 appends every host-to-host (detached) comm to one list of the maestro and removes
// it with std::list::remove on completion: O(flows in flight) per completion, quadratic overall
// (32k concurrent flows of a 4096-GPU ring at edge fidelity took 150 s). Comms between mailboxes
// are listed on their sender and receiver actors instead, a few each. So a large batch of flows
// that are ready at the start of a run (no predecessors) is started and received by one actor per
// GPU (its own flows out, the flows addressed to it in); completions go through the
// same on_completion callback (only the sender's comm carries the flow id) and everything after
// the transfer (latency timers, successors) is unchanged.
void Simulator::Impl::launch_roots_with_actors(const std::vector<int>& roots) {
  // One actor per GPU both sends that GPU's flows and receives the flows addressed to it (a comm
  // runs from its sender's host to its receiver's host, so each side must live on its GPU): half
  // the actors, and stacks, of one sender plus one receiver per GPU.
  struct Work {
    std::vector<int> sends;
    int receives = 0;
  };
  std::map<int, Work> by_gpu;
  for (int id : roots) {
    const Flow& f = graph->flow(id);
    by_gpu[f.src].sends.push_back(id);
    ++by_gpu[f.dst].receives;
  }
  for (auto& entry : by_gpu) {
    const int gpu = entry.first;
    simgrid::s4u::Actor::create(
        "gpu" + std::to_string(gpu), zone->host(gpu),
        [this, gpu, mine = std::move(entry.second.sends), expected = entry.second.receives] {
          // Receives first, so no send waits on a receiver that has not posted yet.
          auto* own = receive_box(gpu);
          std::vector<simgrid::s4u::CommPtr> gets;
          std::vector<void*> received(static_cast<std::size_t>(expected), nullptr);  // the senders' tags
          gets.reserve(received.size());
          for (auto& slot : received) gets.push_back(own->get_async<void>(&slot));
          std::vector<simgrid::s4u::CommPtr> comms;
          comms.reserve(mine.size());
          for (int id : mine) {
            const Flow& f = graph->flow(id);
            start_s[static_cast<std::size_t>(id)] = simgrid::s4u::Engine::get_clock();
            auto* box = receive_box(f.dst);
            // The flow's tag is both the send's (non-null) payload and the comm's data.
            void* tag = flow_tag(id);
            auto comm = box->put_init(tag, payload(id));
            comm->set_data(tag);
            comm->start();
            comms.push_back(std::move(comm));
          }
          // wait_any reports each comm (on_completion) at the time it finished; wait_all would
          // report them in vector order, some late.
          while (!comms.empty()) {
            const auto k = simgrid::s4u::Comm::wait_any(comms);
            comms.erase(comms.begin() + k);
          }
          simgrid::s4u::Comm::wait_all(gets);
        });
  }
}

std::uint64_t Simulator::Impl::payload(int id) const {
  const auto one = static_cast<std::uint64_t>(std::llround(graph->flow(id).bytes));
  const int fold = fold_of[static_cast<std::size_t>(id)];
  return fold < 0 ? one : one * folds[static_cast<std::size_t>(fold)].size();
}

// A run whose flows are all independent and start together (a collective at edge fidelity: one
// flow per ring edge and channel) often has k identical flows: same endpoints, so the same
// route, same bytes, same latency. When every link is crossed only by groups of one size k, the
// max-min shares of the k copies are equal at all times and their sum is what one flow of k times
// the bytes gets (each link's flows are all k-copies, so scaling every one by k changes no
// share): one comm carries them all, and each copy finishes when it does. Exact, and 4x fewer
// comms for a ring on 8-GPU nodes (7 of 8 channels cross each NVLink edge). Any dependency or
// delay could start other traffic on a fold's links mid-way, so those runs are left alone.
bool Simulator::Impl::coalesce_identical_flows() {
  const auto n = static_cast<std::size_t>(graph->size());
  fold_of.assign(n, -1);
  folds.clear();
  const bool done = find_folds();
  if (!done) folds.clear();
  for (std::size_t k = 0; k < folds.size(); ++k)
    fold_of[static_cast<std::size_t>(folds[k].front())] = static_cast<int>(k);
  return done;
}

bool Simulator::Impl::find_folds() {
  const auto n = static_cast<std::size_t>(graph->size());
  for (std::size_t i = 0; i < n; ++i) {
    const Flow& f = graph->flow(static_cast<int>(i));
    if (adj.predecessor_count[i] != 0 || adj.offsets[i] != adj.offsets[i + 1] || f.delay_s > 0 ||
        f.src == f.dst || std::llround(f.bytes) <= 0)
      return false;
  }
  using Key = std::tuple<int, int, long long, double, bool>;
  std::map<Key, int> fold_by_key;
  for (std::size_t i = 0; i < n; ++i) {
    const Flow& f = graph->flow(static_cast<int>(i));
    const Key key{f.src, f.dst, std::llround(f.bytes), f.extra_latency_s, f.add_route_latency};
    auto [it, fresh] = fold_by_key.try_emplace(key, static_cast<int>(folds.size()));
    if (fresh) folds.emplace_back();
    folds[static_cast<std::size_t>(it->second)].push_back(static_cast<int>(i));
  }
  if (folds.size() == n) return false;
  std::unordered_map<const void*, std::size_t> size_on_link;
  bool uniform = true;
  for (const auto& fold : folds) {
    const Flow& f = graph->flow(fold.front());
    for (const auto* link : zone->route_links(f.src, f.dst)) {
      auto [it, fresh] = size_on_link.try_emplace(link, fold.size());
      if (!fresh && it->second != fold.size()) uniform = false;
    }
  }
  if (uniform) return true;
  // Links with folds of different sizes (a ring's node crossing relayed over the NVLink links of
  // the channels' flows inside the node, clos.cpp): cut every fold into folds of g flows, g the
  // greatest common divisor of all sizes. Then every comm stands for g copies everywhere, which
  // scales every share by g and changes none (exact); with g = 1 nothing is gained.
  std::size_t g = 0;
  for (const auto& fold : folds) g = std::gcd(g, fold.size());
  if (g < 2) return false;
  std::vector<std::vector<int>> cut;
  for (const auto& fold : folds)
    for (std::size_t at = 0; at < fold.size(); at += g)
      cut.emplace_back(fold.begin() + static_cast<std::ptrdiff_t>(at),
                       fold.begin() + static_cast<std::ptrdiff_t>(at + g));
  folds = std::move(cut);
  return true;
}

void Simulator::Impl::transfer_done(int id) {
  const int fold = fold_of[static_cast<std::size_t>(id)];
  if (fold < 0) {
    sent(id);
    return;
  }
  for (int member : folds[static_cast<std::size_t>(fold)]) {
    ready_s[static_cast<std::size_t>(member)] = ready_s[static_cast<std::size_t>(id)];
    start_s[static_cast<std::size_t>(member)] = start_s[static_cast<std::size_t>(id)];
    sent(member);
  }
}

void Simulator::Impl::start_transfer(int id) {
  const Flow& f = graph->flow(id);
  const double now = simgrid::s4u::Engine::get_clock();
  start_s[static_cast<std::size_t>(id)] = now;
  // SimGrid payloads are whole bytes; fractional bytes (coarse fidelity of tiny messages) round.
  const std::uint64_t bytes = payload(id);
  if (f.src == f.dst || bytes == 0) {
    // Nothing crosses a link. Deferred through a timer so that chains of empty flows do not recurse.
    simgrid::kernel::timer::Timer::set(now, [this, id] { sent(id); });
    return;
  }
  if (maestro_in_flight >= maestro_limit) {
    // The maestro's list of comms is long (launch_roots_with_actors): this flow goes as a mailbox
    // comm between two actors of its own, a sender on its source GPU and a receiver on its
    // destination, both started at this date (the comm is listed on them alone). The receiver
    // takes whichever comm to its GPU comes first; only the sender's comm carries the flow id, and
    // SimGrid reports it inside the sender's wait, handed over to the maestro as the roots' are.
    by_actor[static_cast<std::size_t>(id)] = true;
    auto* box = receive_box(f.dst);
    simgrid::s4u::Actor::create("rx", zone->host(f.dst), [box] {
      void* tag = nullptr;
      box->get_async<void>(&tag)->wait();
    });
    simgrid::s4u::Actor::create("tx", zone->host(f.src), [box, id, bytes] {
      void* tag = flow_tag(id);
      auto comm = box->put_init(tag, bytes);
      comm->set_data(tag);
      comm->start();
      comm->wait();
    });
    return;
  }
  ++maestro_in_flight;
  auto comm = simgrid::s4u::Comm::sendto_init(zone->host(f.src), zone->host(f.dst));
  comm->set_payload_size(bytes);
  comm->set_data(flow_tag(id));
  live[static_cast<std::size_t>(id)] = comm;
  comm->start();
}

void Simulator::Impl::release(int id, int kind_bit, double now) {
  const int b = adj.offsets[static_cast<std::size_t>(id)];
  const int e = adj.offsets[static_cast<std::size_t>(id) + 1];
  for (int k = b; k < e; ++k) {
    const int code = adj.successors[static_cast<std::size_t>(k)];
    if ((code & 1) != kind_bit) continue;
    const int s = code >> 1;
    if (--adj.predecessor_count[static_cast<std::size_t>(s)] == 0) launch(s, now);
  }
}

void Simulator::Impl::sent(int id) {
  const double now = simgrid::s4u::Engine::get_clock();
  const Flow& f = graph->flow(id);
  sent_s[static_cast<std::size_t>(id)] = now;
  release(id, 1, now);
  double latency = f.extra_latency_s;
  if (f.add_route_latency && f.src != f.dst) latency += zone->route_latency(f.src, f.dst);
  if (latency > 0) {
    simgrid::kernel::timer::Timer::set(now + latency, [this, id] { arrived(id); });
  } else {
    arrived(id);
  }
}

void Simulator::Impl::arrived(int id) {
  const double now = simgrid::s4u::Engine::get_clock();
  const Flow& f = graph->flow(id);
  ++finished;
  auto& gend = group_end_s[static_cast<std::size_t>(f.group)];
  if (now > gend) gend = now;
  if (records != nullptr) {
    const auto i = static_cast<std::size_t>(id);
    records->push_back(FlowRecord{id, f.src, f.dst, f.bytes, ready_s[i] - t0, start_s[i] - t0, sent_s[i] - t0,
                                  now - t0, f.group});
  }
  release(id, 0, now);
}

Simulator::Simulator(const topologies::Topology& topo) : topo_(topo), impl_(std::make_unique<Impl>()) {
  if (topo.gpu_count() == 0) throw std::logic_error("Simulator: the topology has no GPU");
  if (g_simulator_created.exchange(true)) {
    throw std::logic_error("only one commstack::sim::Simulator may be created per process (SimGrid's engine is a singleton)");
  }
  std::vector<std::string> args = engine_args();
  std::vector<char*> argv;
  argv.reserve(args.size() + 1);
  for (auto& a : args) argv.push_back(a.data());
  argv.push_back(nullptr);
  int argc = static_cast<int>(args.size());
  impl_->engine = std::make_unique<simgrid::s4u::Engine>(&argc, argv.data());
  // The first zone created becomes SimGrid's root zone; the engine deletes it.
  impl_->zone = new TopologyZone("commstack", topo);
  impl_->zone->seal();
  Impl* impl = impl_.get();
  simgrid::s4u::Activity::on_completion_cb([impl](const simgrid::s4u::Activity& a) {
    if (impl->graph == nullptr) return;
    impl->graveyard.clear();
    const int id = flow_id(a.get_data<void>());
    if (id < 0 || id >= impl->graph->size()) return;
    auto& slot = impl->live[static_cast<std::size_t>(id)];
    impl->graveyard.push_back(std::move(slot));
    slot = nullptr;
    if (impl->by_actor[static_cast<std::size_t>(id)]) {
      // Reported inside the sender actor's wait_any. Comms that sent() starts from here would
      // belong to that actor, and SimGrid reports the completion of actor-owned host-to-host comms
      // to nobody: hand over to the maestro through a timer at the same date.
      simgrid::kernel::timer::Timer::set(simgrid::s4u::Engine::get_clock(),
                                         [impl, id] { impl->transfer_done(id); });
    } else {
      --impl->maestro_in_flight;
      impl->transfer_done(id);
    }
  });
}

Simulator::~Simulator() {
  impl_->graveyard.clear();
  impl_->live.clear();
  impl_->engine.reset();
}

double Simulator::route_latency(int src_gpu, int dst_gpu) const { return impl_->zone->route_latency(src_gpu, dst_gpu); }

RunResult Simulator::run(const FlowGraph& graph, bool record_flows) {
  for (const Flow& f : graph.flows()) {
    if (f.src < 0 || f.dst < 0 || f.src >= topo_.endpoint_count() || f.dst >= topo_.endpoint_count()) {
      throw std::logic_error(
          "Simulator::run: flow endpoint is not a GPU rank or switch endpoint of the topology");
    }
  }
  Impl& s = *impl_;
  const auto n = static_cast<std::size_t>(graph.size());
  s.graph = &graph;
  s.adj = graph.adjacency();
  s.live.assign(n, nullptr);
  s.by_actor.assign(n, false);
  s.ready_s.assign(n, 0);
  s.start_s.assign(n, 0);
  s.sent_s.assign(n, 0);
  s.group_end_s.assign(static_cast<std::size_t>(graph.group_count()), 0);
  std::vector<FlowRecord> records;
  s.records = record_flows ? &records : nullptr;
  if (record_flows) records.reserve(n);
  s.finished = 0;
  s.maestro_in_flight = 0;
  s.maestro_limit = maestro_comms_limit_;
  s.t0 = simgrid::s4u::Engine::get_clock();
  for (auto& g : s.group_end_s) g = s.t0;
  // Flows a fold carries start with their fold's comm, not on their own.
  std::vector<bool> carried(n, false);
  s.fold_of.assign(n, -1);
  s.folds.clear();
  if (coalesce_ && s.coalesce_identical_flows()) {
    for (const auto& fold : s.folds)
      for (std::size_t k = 1; k < fold.size(); ++k) carried[static_cast<std::size_t>(fold[k])] = true;
  }
  std::vector<int> actor_roots;
  for (std::size_t i = 0; i < n; ++i) {
    if (s.adj.predecessor_count[i] != 0 || carried[i]) continue;
    const Flow& f = graph.flow(static_cast<int>(i));
    // Delayed flows keep their timer (maestro path); the actors start their flows at once.
    if (f.src != f.dst && std::llround(f.bytes) > 0 && f.delay_s <= 0) actor_roots.push_back(static_cast<int>(i));
  }
  if (static_cast<long long>(actor_roots.size()) >= actor_threshold_) {
    for (int id : actor_roots) s.ready_s[static_cast<std::size_t>(id)] = s.t0;
    s.launch_roots_with_actors(actor_roots);
    for (int id : actor_roots) s.by_actor[static_cast<std::size_t>(id)] = true;
    for (std::size_t i = 0; i < n; ++i) {
      if (s.adj.predecessor_count[i] == 0 && !s.by_actor[i] && !carried[i])
        s.launch(static_cast<int>(i), s.t0);
    }
  } else {
    for (std::size_t i = 0; i < n; ++i) {
      if (s.adj.predecessor_count[i] == 0 && !carried[i]) s.launch(static_cast<int>(i), s.t0);
    }
  }
  s.engine->run();
  const bool complete = s.finished == static_cast<long long>(n);
  long long comms = 0;
  for (std::size_t i = 0; i < n; ++i) {
    const Flow& f = graph.flow(static_cast<int>(i));
    if (!carried[i] && f.src != f.dst && std::llround(f.bytes) > 0) ++comms;
  }
  s.graveyard.clear();
  s.live.clear();
  s.fold_of.clear();
  s.folds.clear();
  s.graph = nullptr;
  s.records = nullptr;
  if (!complete) throw std::logic_error("Simulator::run: some flows never became ready (cyclic dependencies)");

  RunResult res;
  res.flow_count = static_cast<long long>(n);
  res.comm_count = comms;
  res.duration_s = 0;
  for (double g : s.group_end_s) {
    res.group_duration_s.push_back(g - s.t0);
    res.duration_s = std::max(res.duration_s, g - s.t0);
  }
  res.flows = std::move(records);
  return res;
}

}  // namespace commstack::sim
