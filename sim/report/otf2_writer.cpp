#include "sim/report/otf2_writer.hpp"

#include <otf2/otf2.h>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <map>
#include <memory>
#include <stdexcept>
#include <system_error>
#include <tuple>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "common/error.hpp"
#include "sim/report/otf2_errors.hpp"
#include "sim/train/train.hpp"

namespace commstack::sim {
namespace {

void check(OTF2_ErrorCode code, const std::string& dir, const char* what) {
  if (code == OTF2_SUCCESS) return;
  throw InputError(fmt::format("--otf2 {}: {} failed: {} ({}{})", dir, what, OTF2_Error_GetName(code),
                               OTF2_Error_GetDescription(code),
                               last_otf2_message().empty() ? "" : "; " + last_otf2_message()));
}

OTF2_FlushType pre_flush(void*, OTF2_FileType, OTF2_LocationRef, void*, bool) { return OTF2_FLUSH; }
// A flush inside the run would record a BufferFlush event stamped with this time; buffers are
// only flushed when a writer closes, after its last event, so a constant keeps archives
// reproducible.
OTF2_TimeStamp post_flush(void*, OTF2_FileType, OTF2_LocationRef) { return 0; }

std::uint64_t ticks(double seconds) { return static_cast<std::uint64_t>(std::llround(std::max(0.0, seconds) * 1e9)); }

OTF2_CollectiveOp otf2_op(Otf2Collective c) {
  switch (c) {
    case Otf2Collective::all_reduce: return OTF2_COLLECTIVE_OP_ALLREDUCE;
    case Otf2Collective::all_gather: return OTF2_COLLECTIVE_OP_ALLGATHER;
    // NCCL's reduce-scatter gives every rank an equal block: MPI_Reduce_scatter_block.
    case Otf2Collective::reduce_scatter: return OTF2_COLLECTIVE_OP_REDUCE_SCATTER_BLOCK;
    case Otf2Collective::all_to_all: return OTF2_COLLECTIVE_OP_ALLTOALL;
    case Otf2Collective::broadcast: return OTF2_COLLECTIVE_OP_BCAST;
    case Otf2Collective::reduce: return OTF2_COLLECTIVE_OP_REDUCE;
    case Otf2Collective::none: break;
  }
  throw std::logic_error("otf2_op: not a collective");
}

OTF2_RegionRole region_role(const Otf2Interval& iv) {
  switch (iv.collective) {
    case Otf2Collective::broadcast: return OTF2_REGION_ROLE_COLL_ONE2ALL;
    case Otf2Collective::reduce: return OTF2_REGION_ROLE_COLL_ALL2ONE;
    case Otf2Collective::none: break;
    default: return OTF2_REGION_ROLE_COLL_ALL2ALL;
  }
  if (iv.kind == "send" || iv.kind == "recv") return OTF2_REGION_ROLE_POINT2POINT;
  return OTF2_REGION_ROLE_FUNCTION;
}

// Strings get ids in order of first use, so the definitions are the same on every run.
class StringTable {
public:
  OTF2_StringRef operator()(const std::string& s) {
    auto [it, added] = ids_.try_emplace(s, static_cast<OTF2_StringRef>(order_.size()));
    if (added) order_.push_back(s);
    return it->second;
  }
  const std::vector<std::string>& strings() const { return order_; }

private:
  std::map<std::string, OTF2_StringRef> ids_;
  std::vector<std::string> order_;
};

enum class EvKind { enter, leave, coll_begin, coll_end, send, recv };
struct Ev {
  std::uint64_t ts = 0;
  EvKind kind = EvKind::enter;
  std::size_t index = 0;  // interval or message
};

struct Location {
  int rank_index = 0;
  int stream = 0;
  int lane = 0;
  std::vector<Ev> events;
};

constexpr const char* kCreator = "commstack (simulated timeline)";

// OTF2 3.0.2 stamps the anchor file with a random trace identifier. Replace it with a hash
// (FNV-1a) of the global definitions so that equal timelines give byte-identical archives. The
// identifier's place follows from the anchor layout (OTF2_AnchorFile.c: chunk header and
// endianness, "OTF2", format byte, 38 bytes of sizes, machine, creator and description strings,
// a 32-bit property count (0 here), then the 64-bit identifier); when the file does not look
// like that (another OTF2 version), it is left alone and the determinism test says so.
void make_trace_id_deterministic(const std::filesystem::path& dir, const std::string& machine,
                                 const std::string& description) {
  const auto anchor = dir / "traces.otf2";
  std::ifstream def_in(dir / "traces.def", std::ios::binary);
  std::uint64_t hash = 0xcbf29ce484222325ULL;
  for (char c = 0; def_in.get(c);) hash = (hash ^ static_cast<unsigned char>(c)) * 0x100000001b3ULL;
  std::fstream f(anchor, std::ios::binary | std::ios::in | std::ios::out);
  std::string bytes((std::istreambuf_iterator<char>(f)), std::istreambuf_iterator<char>());
  std::string expect;
  expect += std::string("OTF2\0", 5);
  const std::size_t strings_at = 2 + 5 + 1 + 38;
  const std::string strings = machine + '\0' + kCreator + '\0' + description + '\0';
  const std::size_t id_at = strings_at + strings.size() + 4;
  if (bytes.size() < id_at + 8 || (bytes[1] != 0x42 && bytes[1] != 0x23) || bytes.compare(2, 5, expect) != 0 ||
      bytes.compare(strings_at, strings.size(), strings) != 0 || bytes.compare(id_at - 4, 4, std::string(4, '\0')) != 0) {
    return;
  }
  const bool little = bytes[1] == 0x42;
  for (std::size_t i = 0; i < 8; ++i) {
    bytes[id_at + (little ? i : 7 - i)] = static_cast<char>((hash >> (8 * i)) & 0xff);
  }
  f.seekp(0);
  f.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
}

std::string stream_lane_name(const std::string& stream, int lane) {
  return lane == 0 ? stream : fmt::format("{} #{}", stream, lane + 1);
}

// Attributes of compute and communication regions (written on Enter).
constexpr OTF2_AttributeRef kAttrMicroBatch = 0;
constexpr OTF2_AttributeRef kAttrLayer = 1;
constexpr OTF2_AttributeRef kAttrOp = 2;
constexpr OTF2_AttributeRef kAttrAfter = 3;
constexpr OTF2_AttributeRef kAttrPhase = 4;

// The timeline's ranks by their index in `t.ranks` (a location group each).
class RankIndex {
 public:
  explicit RankIndex(const Otf2Timeline& t) {
    for (std::size_t i = 0; i < t.ranks.size(); ++i) index_of_rank_[t.ranks[i]] = static_cast<int>(i);
  }
  int operator()(int rank) const {
    auto it = index_of_rank_.find(rank);
    if (it == index_of_rank_.end())
      throw std::logic_error(fmt::format("write_otf2: rank {} has no location", rank));
    return it->second;
  }
  bool has(int rank) const { return index_of_rank_.count(rank) != 0; }

 private:
  std::map<int, int> index_of_rank_;
};

// A member's rank in communicator `comm` (the group members are the ranks that have locations).
std::uint32_t comm_rank(const Otf2Timeline& t, const RankIndex& ranks, int comm, int global_rank) {
  const auto& r = t.comms[static_cast<std::size_t>(comm)].ranks;
  std::uint32_t k = 0;
  for (int member : r) {
    if (member == global_rank) return k;
    if (ranks.has(member)) ++k;
  }
  return OTF2_UNDEFINED_UINT32;
}

// Where every interval and message goes: one location per (rank, stream, lane), each with its
// events in time order, and the locations' ids in (rank, stream, lane) order.
struct LocationPlan {
  std::map<std::tuple<int, int, int>, std::size_t> location_of;  // (rank index, stream, lane)
  std::vector<Location> locations;
  std::vector<std::size_t> order;    // locations in (rank, stream, lane) order
  std::vector<OTF2_LocationRef> id;  // per location
  std::uint64_t last_tick = 0;

  std::size_t location(int ri, int stream, int lane) {
    auto [it, added] = location_of.try_emplace({ri, stream, lane}, 0);
    if (added) {
      it->second = locations.size();
      locations.push_back({ri, stream, lane, {}});
    }
    return it->second;
  }
};

LocationPlan plan_locations(const Otf2Timeline& t, const RankIndex& rank_index) {
  LocationPlan plan;
  // Every rank has a location on the message stream: its COMM_LOCATIONS entry.
  for (std::size_t ri = 0; ri < t.ranks.size(); ++ri)
    plan.location(static_cast<int>(ri), t.message_stream, 0);

  // Lanes: a stream whose ops overlap (batched pipeline send/recv) is split into as many
  // locations as it needs, since regions on one location must nest.
  std::vector<std::size_t> order(t.intervals.size());
  for (std::size_t i = 0; i < order.size(); ++i) order[i] = i;
  std::sort(order.begin(), order.end(), [&](std::size_t a, std::size_t b) {
    const auto& x = t.intervals[a];
    const auto& y = t.intervals[b];
    return std::tuple(rank_index(x.rank), x.stream, ticks(x.start_s), ticks(x.end_s), a) <
           std::tuple(rank_index(y.rank), y.stream, ticks(y.start_s), ticks(y.end_s), b);
  });
  std::map<std::pair<int, int>, std::vector<std::uint64_t>> lane_end;  // (rank index, stream) -> end tick per lane
  for (std::size_t i : order) {
    const auto& iv = t.intervals[i];
    if (iv.stream < 0 || iv.stream >= static_cast<int>(t.streams.size())) throw std::logic_error("write_otf2: bad stream");
    const int ri = rank_index(iv.rank);
    const std::uint64_t b = ticks(iv.start_s);
    const std::uint64_t e = std::max(b, ticks(iv.end_s));
    auto& ends = lane_end[{ri, iv.stream}];
    std::size_t lane = 0;
    while (lane < ends.size() && ends[lane] > b) ++lane;
    if (lane == ends.size()) ends.push_back(e);
    else ends[lane] = e;
    auto& evs = plan.locations[plan.location(ri, iv.stream, static_cast<int>(lane))].events;
    evs.push_back({b, EvKind::enter, i});
    if (iv.collective != Otf2Collective::none) {
      evs.push_back({b, EvKind::coll_begin, i});
      evs.push_back({e, EvKind::coll_end, i});
    }
    evs.push_back({e, EvKind::leave, i});
  }
  for (std::size_t m = 0; m < t.messages.size(); ++m) {
    const auto& msg = t.messages[m];
    plan.locations[plan.location(rank_index(msg.rank), t.message_stream, 0)].events.push_back(
        {ticks(msg.time_s), msg.send ? EvKind::send : EvKind::recv, m});
  }
  // Region events of a lane are already in time order; messages go after region events of the
  // same tick (stable sort), which keeps every Enter/Leave pair nested.
  for (auto& loc : plan.locations) {
    std::stable_sort(loc.events.begin(), loc.events.end(), [](const Ev& a, const Ev& b) { return a.ts < b.ts; });
    if (!loc.events.empty()) plan.last_tick = std::max(plan.last_tick, loc.events.back().ts);
  }
  // Locations in (rank, stream, lane) order so that the ids read like the system tree.
  const auto& locations = plan.locations;
  plan.order.resize(locations.size());
  for (std::size_t i = 0; i < plan.order.size(); ++i) plan.order[i] = i;
  std::sort(plan.order.begin(), plan.order.end(), [&](std::size_t a, std::size_t b) {
    return std::tuple(locations[a].rank_index, locations[a].stream, locations[a].lane) <
           std::tuple(locations[b].rank_index, locations[b].stream, locations[b].lane);
  });
  plan.id.resize(locations.size());
  for (std::size_t k = 0; k < plan.order.size(); ++k) plan.id[plan.order[k]] = k;
  return plan;
}

// Regions by (name, kind, collective role), and each interval's dependency list and phase as
// string attributes.
struct RegionDef {
  OTF2_StringRef name, kind;
  OTF2_RegionRole role;
  OTF2_Paradigm paradigm;
};
struct RegionPlan {
  std::vector<RegionDef> defs;
  std::vector<OTF2_RegionRef> region_of;  // per interval
  std::vector<OTF2_StringRef> after_of;   // per interval
  std::vector<OTF2_StringRef> phase_of;   // per interval
};

RegionPlan plan_regions(const Otf2Timeline& t, StringTable& str) {
  RegionPlan rp;
  std::map<std::tuple<std::string, std::string, int>, OTF2_RegionRef> region_ids;
  rp.region_of.resize(t.intervals.size());
  for (std::size_t i = 0; i < t.intervals.size(); ++i) {
    const auto& iv = t.intervals[i];
    const OTF2_RegionRole role = region_role(iv);
    auto [it, added] = region_ids.try_emplace({iv.region, iv.kind, static_cast<int>(role)},
                                              static_cast<OTF2_RegionRef>(rp.defs.size()));
    if (added) {
      // Compute ops are GPU kernels (CUDA paradigm); communication is written with OTF2's MPI
      // records, so it belongs to the MPI paradigm for Vampir's message and collective views.
      const OTF2_Paradigm paradigm = iv.kind == "compute" ? OTF2_PARADIGM_CUDA : OTF2_PARADIGM_MPI;
      rp.defs.push_back({str(iv.region), str(iv.kind), role, paradigm});
    }
    rp.region_of[i] = it->second;
  }
  // Dependency lists as strings (attribute commstack_after), one definition per distinct list.
  rp.after_of.assign(t.intervals.size(), OTF2_UNDEFINED_STRING);
  for (std::size_t i = 0; i < t.intervals.size(); ++i) {
    if (!t.intervals[i].after.empty())
      rp.after_of[i] = str(fmt::format("{}", fmt::join(t.intervals[i].after, ",")));
  }
  // Phases (attribute phase): with the micro-batch they place each op in its pipeline step, which
  // `replay --scale-pp` needs to re-order a stage into the 1F1B order of a deeper pipeline.
  rp.phase_of.assign(t.intervals.size(), OTF2_UNDEFINED_STRING);
  for (std::size_t i = 0; i < t.intervals.size(); ++i) {
    if (!t.intervals[i].phase.empty()) rp.phase_of[i] = str(t.intervals[i].phase);
  }
  return rp;
}

struct ArchiveCloser {
  void operator()(OTF2_Archive* a) const { OTF2_Archive_Close(a); }
};
using ArchivePtr = std::unique_ptr<OTF2_Archive, ArchiveCloser>;

// The archive, with its creator, description and machine. Only the three OTF2 paths of an earlier
// archive are removed.
ArchivePtr open_archive(const Otf2Timeline& t, const std::string& dir) {
  namespace fs = std::filesystem;
  std::error_code ec;
  fs::create_directories(dir, ec);
  if (ec || !fs::is_directory(dir)) throw InputError(fmt::format("--otf2 {}: cannot create the directory", dir));
  for (const char* name : {"traces.otf2", "traces.def", "traces"}) fs::remove_all(fs::path(dir) / name, ec);
  constexpr std::uint64_t kEventChunkBytes = std::uint64_t{1} << 20;  // OTF2's chunk sizes: 1 MiB, 4 MiB
  constexpr std::uint64_t kDefChunkBytes = std::uint64_t{4} << 20;
  ArchivePtr archive(OTF2_Archive_Open(dir.c_str(), "traces", OTF2_FILEMODE_WRITE, kEventChunkBytes,
                                       kDefChunkBytes, OTF2_SUBSTRATE_POSIX, OTF2_COMPRESSION_NONE));
  if (archive == nullptr) {
    throw InputError(fmt::format("--otf2 {}: cannot create an OTF2 archive there ({})", dir, last_otf2_message()));
  }
  static OTF2_FlushCallbacks flush{pre_flush, post_flush};
  check(OTF2_Archive_SetFlushCallbacks(archive.get(), &flush, nullptr), dir, "setting flush callbacks");
  check(OTF2_Archive_SetSerialCollectiveCallbacks(archive.get()), dir, "setting collective callbacks");
  check(OTF2_Archive_SetCreator(archive.get(), kCreator), dir, "setting the creator");
  check(OTF2_Archive_SetDescription(archive.get(), t.title.c_str()), dir, "setting the description");
  check(OTF2_Archive_SetMachineName(archive.get(), t.machine.c_str()), dir, "setting the machine name");
  return archive;
}

// One event on a location's writer; `attrs` is the reused attribute list.
void write_event(OTF2_EvtWriter* w, const Ev& ev, const Otf2Timeline& t, const RankIndex& ranks,
                 const RegionPlan& rp, OTF2_AttributeList* attrs, const std::string& dir) {
  switch (ev.kind) {
    case EvKind::enter: {
      const auto& iv = t.intervals[ev.index];
      OTF2_AttributeList* list = nullptr;
      if (iv.micro_batch >= 0 || iv.layer >= 0 || iv.op >= 0) {
        if (iv.micro_batch >= 0) OTF2_AttributeList_AddInt32(attrs, kAttrMicroBatch, iv.micro_batch);
        if (iv.layer >= 0) OTF2_AttributeList_AddInt32(attrs, kAttrLayer, iv.layer);
        if (iv.op >= 0) OTF2_AttributeList_AddUint64(attrs, kAttrOp, static_cast<std::uint64_t>(iv.op));
        if (rp.after_of[ev.index] != OTF2_UNDEFINED_STRING)
          OTF2_AttributeList_AddStringRef(attrs, kAttrAfter, rp.after_of[ev.index]);
        if (rp.phase_of[ev.index] != OTF2_UNDEFINED_STRING)
          OTF2_AttributeList_AddStringRef(attrs, kAttrPhase, rp.phase_of[ev.index]);
        list = attrs;
      }
      check(OTF2_EvtWriter_Enter(w, list, ev.ts, rp.region_of[ev.index]), dir, "writing an Enter event");
      break;
    }
    case EvKind::leave:
      check(OTF2_EvtWriter_Leave(w, nullptr, ev.ts, rp.region_of[ev.index]), dir, "writing a Leave event");
      break;
    case EvKind::coll_begin:
      check(OTF2_EvtWriter_MpiCollectiveBegin(w, nullptr, ev.ts), dir, "writing a collective begin");
      break;
    case EvKind::coll_end: {
      const auto& iv = t.intervals[ev.index];
      const std::uint32_t root = iv.root < 0 ? OTF2_UNDEFINED_UINT32 : comm_rank(t, ranks, iv.comm, iv.root);
      check(OTF2_EvtWriter_MpiCollectiveEnd(w, nullptr, ev.ts, otf2_op(iv.collective),
                                            static_cast<OTF2_CommRef>(iv.comm), root, iv.bytes_sent,
                                            iv.bytes_received),
            dir, "writing a collective end");
      break;
    }
    case EvKind::send:
    case EvKind::recv: {
      const auto& m = t.messages[ev.index];
      const std::uint32_t peer = comm_rank(t, ranks, 0, m.peer);
      if (peer == OTF2_UNDEFINED_UINT32)
        throw std::logic_error(fmt::format("write_otf2: peer {} has no location", m.peer));
      // The op id tells readers which region a message belongs to: a pipeline op on an
      // overlap location (`pp #2`) has its message on the `pp` location.
      OTF2_AttributeList* list = nullptr;
      if (m.op >= 0) {
        OTF2_AttributeList_AddUint64(attrs, kAttrOp, static_cast<std::uint64_t>(m.op));
        list = attrs;
      }
      if (ev.kind == EvKind::send) {
        check(OTF2_EvtWriter_MpiSend(w, list, ev.ts, peer, 0, m.tag, m.bytes), dir, "writing an MpiSend");
      } else {
        check(OTF2_EvtWriter_MpiRecv(w, list, ev.ts, peer, 0, m.tag, m.bytes), dir, "writing an MpiRecv");
      }
      break;
    }
  }
}

// Every location's events (freed as they are written: bounded memory on big timelines), then the
// empty local definition files (every location's identifiers are already global). Returns the
// event count per location.
std::vector<std::uint64_t> write_events(OTF2_Archive* archive, const Otf2Timeline& t, const RankIndex& ranks,
                                        LocationPlan& plan, const RegionPlan& rp, const std::string& dir) {
  OTF2_AttributeList* attrs = OTF2_AttributeList_New();
  struct AttrFree {
    OTF2_AttributeList* l;
    ~AttrFree() { OTF2_AttributeList_Delete(l); }
  } attr_free{attrs};
  std::vector<std::uint64_t> event_count(plan.locations.size(), 0);
  check(OTF2_Archive_OpenEvtFiles(archive), dir, "opening the event files");
  for (std::size_t li : plan.order) {
    auto& loc = plan.locations[li];
    OTF2_EvtWriter* w = OTF2_Archive_GetEvtWriter(archive, plan.id[li]);
    if (w == nullptr) check(OTF2_ERROR_MEM_ALLOC_FAILED, dir, "creating an event writer");
    for (const Ev& ev : loc.events) write_event(w, ev, t, ranks, rp, attrs, dir);
    event_count[li] = loc.events.size();
    loc.events = {};
    check(OTF2_Archive_CloseEvtWriter(archive, w), dir, "closing an event writer");
  }
  check(OTF2_Archive_CloseEvtFiles(archive), dir, "closing the event files");
  check(OTF2_Archive_OpenDefFiles(archive), dir, "opening the local definition files");
  for (std::size_t li : plan.order) {
    OTF2_DefWriter* dw = OTF2_Archive_GetDefWriter(archive, plan.id[li]);
    if (dw == nullptr) check(OTF2_ERROR_MEM_ALLOC_FAILED, dir, "creating a definition writer");
    check(OTF2_Archive_CloseDefWriter(archive, dw), dir, "closing a definition writer");
  }
  check(OTF2_Archive_CloseDefFiles(archive), dir, "closing the local definition files");
  return event_count;
}

// The global definitions' names, collected before the strings are written (ids in order of first
// use, after the regions').
struct GlobalNames {
  struct SysNode {
    OTF2_StringRef name, cls;
    OTF2_SystemTreeNodeRef parent;
  };
  std::vector<SysNode> sys_nodes;
  std::map<int, OTF2_SystemTreeNodeRef> node_ref;
  std::vector<OTF2_StringRef> group_names, loc_names, comm_names;
  OTF2_StringRef empty = 0, mpi = 0, cuda = 0;
  struct Attr {
    OTF2_AttributeRef ref;
    OTF2_StringRef name, description;
    OTF2_Type type;
  };
  std::vector<Attr> attrs;
};

GlobalNames global_names(const Otf2Timeline& t, const LocationPlan& plan, StringTable& str) {
  GlobalNames n;
  n.sys_nodes.push_back(
      {str(t.machine.empty() ? "cluster" : t.machine), str("machine"), OTF2_UNDEFINED_SYSTEM_TREE_NODE});
  for (int node : t.node_of_rank) {
    if (n.node_ref.count(node) == 0) {
      n.node_ref[node] = static_cast<OTF2_SystemTreeNodeRef>(n.sys_nodes.size());
      n.sys_nodes.push_back({str(fmt::format("node {}", node)), str("node"), 0});
    }
  }
  n.group_names.resize(t.ranks.size());
  for (std::size_t ri = 0; ri < t.ranks.size(); ++ri)
    n.group_names[ri] = str(fmt::format("GPU rank {}", t.ranks[ri]));
  n.loc_names.resize(plan.locations.size());
  for (std::size_t li : plan.order) {
    const auto& loc = plan.locations[li];
    n.loc_names[li] = str(stream_lane_name(t.streams[static_cast<std::size_t>(loc.stream)], loc.lane));
  }
  n.comm_names.resize(t.comms.size());
  for (std::size_t c = 0; c < t.comms.size(); ++c) n.comm_names[c] = str(t.comms[c].name);
  n.empty = str("");
  n.mpi = str("MPI");
  n.cuda = str("CUDA");
  const auto attr = [&](OTF2_AttributeRef ref, const char* name, const char* description, OTF2_Type type) {
    const OTF2_StringRef name_id = str(name);
    n.attrs.push_back({ref, name_id, str(description), type});
  };
  attr(kAttrMicroBatch, "micro_batch", "Micro-batch of the training op", OTF2_TYPE_INT32);
  attr(kAttrLayer, "layer", "Global transformer layer of the training op", OTF2_TYPE_INT32);
  attr(kAttrOp, "commstack_op", "Id of the op in the simulated op graph", OTF2_TYPE_UINT64);
  attr(kAttrAfter, "commstack_after", "Ids of the ops this op waited for (its dependencies), comma separated",
       OTF2_TYPE_STRING);
  attr(kAttrPhase, "phase", "Phase of the training op: forward, backward, recompute or optimizer",
       OTF2_TYPE_STRING);
  return n;
}

// Clock, strings, paradigms, attributes and regions.
void write_header_defs(OTF2_GlobalDefWriter* g, const LocationPlan& plan, const RegionPlan& rp,
                       const StringTable& str, const GlobalNames& n, const std::string& dir) {
  check(OTF2_GlobalDefWriter_WriteClockProperties(g, 1000000000, 0, plan.last_tick + 1,
                                                  OTF2_UNDEFINED_TIMESTAMP),
        dir, "writing the clock properties");
  for (std::size_t s = 0; s < str.strings().size(); ++s) {
    check(OTF2_GlobalDefWriter_WriteString(g, static_cast<OTF2_StringRef>(s), str.strings()[s].c_str()), dir,
          "writing a string");
  }
  check(OTF2_GlobalDefWriter_WriteParadigm(g, OTF2_PARADIGM_MPI, n.mpi, OTF2_PARADIGM_CLASS_PROCESS), dir,
        "writing a paradigm");
  check(OTF2_GlobalDefWriter_WriteParadigm(g, OTF2_PARADIGM_CUDA, n.cuda, OTF2_PARADIGM_CLASS_ACCELERATOR),
        dir, "writing a paradigm");
  for (const auto& a : n.attrs)
    check(OTF2_GlobalDefWriter_WriteAttribute(g, a.ref, a.name, a.description, a.type), dir,
          "writing an attribute");
  for (std::size_t r = 0; r < rp.defs.size(); ++r) {
    const auto& d = rp.defs[r];
    check(OTF2_GlobalDefWriter_WriteRegion(g, static_cast<OTF2_RegionRef>(r), d.name, d.name, d.kind, d.role,
                                           d.paradigm, OTF2_REGION_FLAG_NONE, n.empty, 0, 0),
          dir, "writing a region");
  }
}

// The system tree (machine, nodes), a location group per rank and its locations.
void write_system_defs(OTF2_GlobalDefWriter* g, const Otf2Timeline& t, const LocationPlan& plan,
                       const std::vector<std::uint64_t>& event_count, const GlobalNames& n,
                       const std::string& dir) {
  for (std::size_t k = 0; k < n.sys_nodes.size(); ++k) {
    check(OTF2_GlobalDefWriter_WriteSystemTreeNode(g, static_cast<OTF2_SystemTreeNodeRef>(k),
                                                   n.sys_nodes[k].name, n.sys_nodes[k].cls,
                                                   n.sys_nodes[k].parent),
          dir, "writing a system tree node");
    check(OTF2_GlobalDefWriter_WriteSystemTreeNodeDomain(
              g, static_cast<OTF2_SystemTreeNodeRef>(k),
              k == 0 ? OTF2_SYSTEM_TREE_DOMAIN_MACHINE : OTF2_SYSTEM_TREE_DOMAIN_SHARED_MEMORY),
          dir, "writing a system tree domain");
  }
  for (std::size_t ri = 0; ri < t.ranks.size(); ++ri) {
    check(OTF2_GlobalDefWriter_WriteLocationGroup(
              g, static_cast<OTF2_LocationGroupRef>(ri), n.group_names[ri], OTF2_LOCATION_GROUP_TYPE_PROCESS,
              n.node_ref.at(t.node_of_rank[ri]), OTF2_UNDEFINED_LOCATION_GROUP),
          dir, "writing a location group");
  }
  // Streams are written as threads of the rank's process: OTF2 3.0 puts accelerator streams in
  // accelerator location groups that cannot be MPI communication endpoints.
  for (std::size_t li : plan.order) {
    check(OTF2_GlobalDefWriter_WriteLocation(
              g, plan.id[li], n.loc_names[li], OTF2_LOCATION_TYPE_CPU_THREAD, event_count[li],
              static_cast<OTF2_LocationGroupRef>(plan.locations[li].rank_index)),
          dir, "writing a location");
  }
}

// Group 0: COMM_LOCATIONS (communicator rank i of the world = location of ranks[i]); group c + 1:
// the members of communicator c as indices into it; the communicators.
void write_comm_defs(OTF2_GlobalDefWriter* g, const Otf2Timeline& t, const RankIndex& ranks,
                     const LocationPlan& plan, const GlobalNames& n, const std::string& dir) {
  std::vector<std::uint64_t> comm_locations(t.ranks.size());
  for (std::size_t ri = 0; ri < t.ranks.size(); ++ri) {
    comm_locations[ri] = plan.id[plan.location_of.at({static_cast<int>(ri), t.message_stream, 0})];
  }
  check(OTF2_GlobalDefWriter_WriteGroup(
            g, 0, n.empty, OTF2_GROUP_TYPE_COMM_LOCATIONS, OTF2_PARADIGM_MPI, OTF2_GROUP_FLAG_NONE,
            static_cast<std::uint32_t>(comm_locations.size()), comm_locations.data()),
        dir, "writing the communication locations");
  for (std::size_t c = 0; c < t.comms.size(); ++c) {
    std::vector<std::uint64_t> members;
    for (int rank : t.comms[c].ranks)
      if (ranks.has(rank)) members.push_back(static_cast<std::uint64_t>(ranks(rank)));
    check(OTF2_GlobalDefWriter_WriteGroup(g, static_cast<OTF2_GroupRef>(c + 1), n.comm_names[c],
                                          OTF2_GROUP_TYPE_COMM_GROUP, OTF2_PARADIGM_MPI, OTF2_GROUP_FLAG_NONE,
                                          static_cast<std::uint32_t>(members.size()), members.data()),
          dir, "writing a communicator group");
    check(OTF2_GlobalDefWriter_WriteComm(g, static_cast<OTF2_CommRef>(c), n.comm_names[c],
                                         static_cast<OTF2_GroupRef>(c + 1), OTF2_UNDEFINED_COMM,
                                         OTF2_COMM_FLAG_NONE),
          dir, "writing a communicator");
  }
}

}  // namespace

Otf2WriteSummary write_otf2(const Otf2Timeline& t, const std::string& dir) {
  capture_otf2_errors();
  if (t.ranks.size() != t.node_of_rank.size())
    throw std::logic_error("write_otf2: node_of_rank does not match ranks");
  if (t.comms.empty() || t.comms[0].ranks != t.ranks)
    throw std::logic_error("write_otf2: comms[0] must be the world of ranks");
  if (t.message_stream < 0 || t.message_stream >= static_cast<int>(t.streams.size())) {
    throw std::logic_error("write_otf2: message_stream out of range");
  }
  const RankIndex ranks(t);
  LocationPlan plan = plan_locations(t, ranks);
  StringTable str;
  const RegionPlan rp = plan_regions(t, str);
  ArchivePtr archive = open_archive(t, dir);
  const std::vector<std::uint64_t> event_count = write_events(archive.get(), t, ranks, plan, rp, dir);
  long long total_events = 0;
  for (const std::uint64_t c : event_count) total_events += static_cast<long long>(c);

  const GlobalNames names = global_names(t, plan, str);
  OTF2_GlobalDefWriter* g = OTF2_Archive_GetGlobalDefWriter(archive.get());
  if (g == nullptr) check(OTF2_ERROR_MEM_ALLOC_FAILED, dir, "creating the global definition writer");
  write_header_defs(g, plan, rp, str, names, dir);
  write_system_defs(g, t, plan, event_count, names, dir);
  write_comm_defs(g, t, ranks, plan, names, dir);
  check(OTF2_Archive_Close(archive.release()), dir, "closing the archive");
  make_trace_id_deterministic(dir, t.machine, t.title);

  Otf2WriteSummary s;
  s.anchor = (std::filesystem::path(dir) / "traces.otf2").string();
  s.locations = static_cast<long long>(plan.locations.size());
  s.events = total_events;
  s.regions = static_cast<long long>(rp.defs.size());
  return s;
}

namespace {

Otf2Collective from_workloads(workloads::Collective c) {
  switch (c) {
    case workloads::Collective::all_reduce: return Otf2Collective::all_reduce;
    case workloads::Collective::all_gather: return Otf2Collective::all_gather;
    case workloads::Collective::reduce_scatter: return Otf2Collective::reduce_scatter;
    case workloads::Collective::all_to_all: return Otf2Collective::all_to_all;
    case workloads::Collective::broadcast: return Otf2Collective::broadcast;
    case workloads::Collective::reduce: return Otf2Collective::reduce;
    case workloads::Collective::none: break;
  }
  return Otf2Collective::none;
}

// Bytes one rank sends and receives, from the nccl-tests size (op_graph.hpp's convention) and
// the communicator size: what MPI's send and receive buffers of the same call would hold.
std::pair<std::uint64_t, std::uint64_t> sent_received(Otf2Collective c, std::uint64_t bytes, std::size_t n,
                                                      bool is_root) {
  const std::uint64_t share = n == 0 ? bytes : bytes / n;
  switch (c) {
    case Otf2Collective::all_gather: return {share, bytes};
    case Otf2Collective::reduce_scatter: return {bytes, share};
    case Otf2Collective::broadcast: return {is_root ? bytes : 0, is_root ? 0 : bytes};
    case Otf2Collective::reduce: return {bytes, is_root ? bytes : 0};
    default: return {bytes, bytes};
  }
}

std::string comm_name(const std::string& kind, const std::vector<int>& ranks) {
  if (ranks.empty()) return kind;
  return fmt::format("{} {}..{} ({} ranks)", kind, ranks.front(), ranks.back(), ranks.size());
}

}  // namespace

Otf2Timeline otf2_timeline(const workloads::OpGraph& g, const train::Schedule& schedule, const topologies::Topology& topo,
                           const std::string& title) {
  Otf2Timeline t;
  t.title = title;
  t.machine = topo.name;
  t.ranks = g.ranks;
  std::sort(t.ranks.begin(), t.ranks.end());
  for (int rank : t.ranks) t.node_of_rank.push_back(topo.vertex(topo.gpu_vertex(rank)).node);
  // Streams: the generator's (compute, tp, cp, ep, dp, pp), or for imported traces the traced
  // CUDA stream / CPU thread of each op.
  for (int s = 0; s <= static_cast<int>(workloads::Stream::pp); ++s) t.streams.push_back(to_string(static_cast<workloads::Stream>(s)));
  std::map<std::string, int> stream_index;
  for (std::size_t s = 0; s < t.streams.size(); ++s) stream_index[t.streams[s]] = static_cast<int>(s);
  const auto stream_of = [&](const workloads::Op& op) {
    const std::string name = op.lane < 0 ? to_string(op.stream) : fmt::format("{} {}", op.host ? "cpu thread" : "cuda stream", op.lane);
    auto [it, added] = stream_index.try_emplace(name, static_cast<int>(t.streams.size()));
    if (added) t.streams.push_back(name);
    return it->second;
  };
  bool any_p2p = false;
  for (const auto& op : g.ops) any_p2p = any_p2p || op.kind == workloads::OpKind::send || op.kind == workloads::OpKind::recv;
  t.message_stream = any_p2p ? static_cast<int>(workloads::Stream::pp) : static_cast<int>(workloads::Stream::compute);
  t.comms.push_back({comm_name("world", t.ranks), t.ranks});
  for (const auto& c : g.communicators) {
    t.comms.push_back({comm_name(c.imported ? c.label : to_string(c.kind), c.ranks), c.ranks});
  }
  const std::vector<int>& present = t.ranks;
  std::map<std::int64_t, std::uint32_t> tag_ids;  // op-graph tags are 64-bit; OTF2's are 32-bit
  for (const auto& op : g.ops) {
    const auto i = static_cast<std::size_t>(op.id);
    Otf2Interval iv;
    iv.rank = op.rank;
    iv.stream = stream_of(op);
    iv.region = op.name;
    iv.kind = to_string(op.kind);
    iv.start_s = schedule.start[i];
    iv.end_s = schedule.finish[i];
    iv.micro_batch = op.micro_batch;
    iv.layer = op.layer;
    // Generated ops always have a phase; imported ones only when their trace said (micro-batch known).
    if (op.lane < 0 || op.micro_batch >= 0) iv.phase = to_string(op.phase);
    iv.op = op.id;
    iv.after.assign(op.deps.begin(), op.deps.end());
    if (op.kind == workloads::OpKind::collective) {
      iv.collective = from_workloads(op.collective);
      iv.comm = op.communicator + 1;
      const std::size_t n = g.communicators[static_cast<std::size_t>(op.communicator)].ranks.size();
      bool is_root = false;
      if (op.collective == workloads::Collective::broadcast || op.collective == workloads::Collective::reduce) {
        // The op graph's root of a broadcast / reduce is its group's first rank (op_graph.hpp).
        iv.root = g.communicators[static_cast<std::size_t>(op.communicator)].ranks.front();
        is_root = op.rank == iv.root;
      }
      std::tie(iv.bytes_sent, iv.bytes_received) = sent_received(iv.collective, op.bytes, n, is_root);
    } else if (op.kind == workloads::OpKind::send || op.kind == workloads::OpKind::recv) {
      // A peer that was not generated (folded graphs) has no location: the region stays, the message is left out.
      if (std::binary_search(present.begin(), present.end(), op.peer)) {
        const auto tag = tag_ids.try_emplace(op.tag, static_cast<std::uint32_t>(tag_ids.size())).first->second;
        const bool send = op.kind == workloads::OpKind::send;
        t.messages.push_back({op.rank, send, op.peer, tag, op.bytes, send ? iv.start_s : iv.end_s, op.id});
      }
    }
    t.intervals.push_back(std::move(iv));
  }
  return t;
}

Otf2Timeline otf2_timeline(const train::TrainResult& r, const topologies::Topology& topo, const std::string& title) {
  return otf2_timeline(r.graph, r.schedule, topo, title);
}

Otf2Timeline otf2_sweep_timeline(const topologies::Topology& topo, CollectiveOp op, const std::vector<SweepPoint>& points,
                                 const std::vector<FlowRecord>& flows, const std::string& title) {
  Otf2Timeline t;
  t.title = title;
  t.machine = topo.name;
  const int n = topo.gpu_count();
  for (int rank = 0; rank < n; ++rank) {
    t.ranks.push_back(rank);
    t.node_of_rank.push_back(topo.vertex(topo.gpu_vertex(rank)).node);
  }
  t.streams = {"gpu"};
  t.comms.push_back({comm_name("world", t.ranks), t.ranks});
  Otf2Collective c = Otf2Collective::none;
  switch (op) {
    case CollectiveOp::allreduce: c = Otf2Collective::all_reduce; break;
    case CollectiveOp::allgather: c = Otf2Collective::all_gather; break;
    case CollectiveOp::reducescatter: c = Otf2Collective::reduce_scatter; break;
    case CollectiveOp::alltoall: c = Otf2Collective::all_to_all; break;
    case CollectiveOp::broadcast: c = Otf2Collective::broadcast; break;
    case CollectiveOp::reduce: c = Otf2Collective::reduce; break;
    case CollectiveOp::sendrecv: c = Otf2Collective::none; break;
  }
  const int root = (c == Otf2Collective::broadcast || c == Otf2Collective::reduce) ? 0 : -1;
  double offset = 0;
  for (std::size_t p = 0; p < points.size(); ++p) {
    const auto& pt = points[p];
    for (int rank = 0; rank < n; ++rank) {
      Otf2Interval iv;
      iv.rank = rank;
      iv.region = fmt::format("{} {} B", to_string(op), pt.size.bytes);
      iv.kind = c == Otf2Collective::none ? "send" : "collective";
      iv.start_s = offset;
      iv.end_s = offset + pt.time_s;
      iv.collective = c;
      iv.comm = 0;
      iv.root = root;
      std::tie(iv.bytes_sent, iv.bytes_received) =
          sent_received(c, pt.size.bytes, static_cast<std::size_t>(n), rank == root);
      t.intervals.push_back(std::move(iv));
    }
    // The recorded flows belong to the last size: messages inside its region.
    if (p + 1 == points.size()) {
      for (const auto& f : flows) {
        const auto tag = static_cast<std::uint32_t>(f.id);
        const auto bytes = static_cast<std::uint64_t>(std::llround(f.bytes));
        const double send_at = offset + std::clamp(f.start_s, 0.0, pt.time_s);
        const double recv_at = offset + std::clamp(f.end_s, 0.0, pt.time_s);
        t.messages.push_back({f.src, true, f.dst, tag, bytes, send_at});
        t.messages.push_back({f.dst, false, f.src, tag, bytes, recv_at});
      }
    }
    offset += pt.time_s;
  }
  return t;
}

}  // namespace commstack::sim
