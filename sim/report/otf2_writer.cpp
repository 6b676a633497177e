#include "sim/report/otf2_writer.hpp"

#include <otf2/otf2.h>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <map>
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

}  // namespace

Otf2WriteSummary write_otf2(const Otf2Timeline& t, const std::string& dir) {
  capture_otf2_errors();
  if (t.ranks.size() != t.node_of_rank.size()) throw std::logic_error("write_otf2: node_of_rank does not match ranks");
  if (t.comms.empty() || t.comms[0].ranks != t.ranks) throw std::logic_error("write_otf2: comms[0] must be the world of ranks");
  if (t.message_stream < 0 || t.message_stream >= static_cast<int>(t.streams.size())) {
    throw std::logic_error("write_otf2: message_stream out of range");
  }
  std::map<int, int> index_of_rank;
  for (std::size_t i = 0; i < t.ranks.size(); ++i) index_of_rank[t.ranks[i]] = static_cast<int>(i);
  const auto rank_index = [&](int rank) {
    auto it = index_of_rank.find(rank);
    if (it == index_of_rank.end()) throw std::logic_error(fmt::format("write_otf2: rank {} has no location", rank));
    return it->second;
  };

  // Lanes: a stream whose ops overlap (batched pipeline send/recv) is split into as many
  // locations as it needs, since regions on one location must nest.
  std::map<std::tuple<int, int, int>, std::size_t> location_of;  // (rank index, stream, lane)
  std::vector<Location> locations;
  const auto location = [&](int ri, int stream, int lane) {
    auto [it, added] = location_of.try_emplace({ri, stream, lane}, 0);
    if (added) {
      it->second = locations.size();
      locations.push_back({ri, stream, lane, {}});
    }
    return it->second;
  };
  // Every rank has a location on the message stream: its COMM_LOCATIONS entry.
  for (std::size_t ri = 0; ri < t.ranks.size(); ++ri) location(static_cast<int>(ri), t.message_stream, 0);

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
    auto& evs = locations[location(ri, iv.stream, static_cast<int>(lane))].events;
    evs.push_back({b, EvKind::enter, i});
    if (iv.collective != Otf2Collective::none) {
      evs.push_back({b, EvKind::coll_begin, i});
      evs.push_back({e, EvKind::coll_end, i});
    }
    evs.push_back({e, EvKind::leave, i});
  }
  for (std::size_t m = 0; m < t.messages.size(); ++m) {
    const auto& msg = t.messages[m];
    locations[location(rank_index(msg.rank), t.message_stream, 0)].events.push_back(
        {ticks(msg.time_s), msg.send ? EvKind::send : EvKind::recv, m});
  }
  // Region events of a lane are already in time order; messages go after region events of the
  // same tick (stable sort), which keeps every Enter/Leave pair nested.
  std::uint64_t last_tick = 0;
  for (auto& loc : locations) {
    std::stable_sort(loc.events.begin(), loc.events.end(), [](const Ev& a, const Ev& b) { return a.ts < b.ts; });
    if (!loc.events.empty()) last_tick = std::max(last_tick, loc.events.back().ts);
  }
  // Locations in (rank, stream, lane) order so that the ids read like the system tree.
  std::vector<std::size_t> loc_order(locations.size());
  for (std::size_t i = 0; i < loc_order.size(); ++i) loc_order[i] = i;
  std::sort(loc_order.begin(), loc_order.end(), [&](std::size_t a, std::size_t b) {
    return std::tuple(locations[a].rank_index, locations[a].stream, locations[a].lane) <
           std::tuple(locations[b].rank_index, locations[b].stream, locations[b].lane);
  });
  std::vector<OTF2_LocationRef> loc_id(locations.size());
  for (std::size_t k = 0; k < loc_order.size(); ++k) loc_id[loc_order[k]] = k;

  // Regions, by (name, kind, collective role).
  StringTable str;
  std::map<std::tuple<std::string, std::string, int>, OTF2_RegionRef> region_ids;
  std::vector<OTF2_RegionRef> region_of(t.intervals.size());
  struct RegionDef {
    OTF2_StringRef name, kind;
    OTF2_RegionRole role;
    OTF2_Paradigm paradigm;
  };
  std::vector<RegionDef> region_defs;
  for (std::size_t i = 0; i < t.intervals.size(); ++i) {
    const auto& iv = t.intervals[i];
    const OTF2_RegionRole role = region_role(iv);
    auto [it, added] = region_ids.try_emplace({iv.region, iv.kind, static_cast<int>(role)},
                                              static_cast<OTF2_RegionRef>(region_defs.size()));
    if (added) {
      // Compute ops are GPU kernels (CUDA paradigm); communication is written with OTF2's MPI
      // records, so it belongs to the MPI paradigm for Vampir's message and collective views.
      const OTF2_Paradigm paradigm = iv.kind == "compute" ? OTF2_PARADIGM_CUDA : OTF2_PARADIGM_MPI;
      region_defs.push_back({str(iv.region), str(iv.kind), role, paradigm});
    }
    region_of[i] = it->second;
  }
  // Dependency lists as strings (attribute commstack_after), one definition per distinct list.
  std::vector<OTF2_StringRef> after_of(t.intervals.size(), OTF2_UNDEFINED_STRING);
  for (std::size_t i = 0; i < t.intervals.size(); ++i) {
    if (!t.intervals[i].after.empty()) after_of[i] = str(fmt::format("{}", fmt::join(t.intervals[i].after, ",")));
  }
  // Phases (attribute phase): with the micro-batch they place each op in its pipeline step, which
  // `replay --scale-pp` needs to re-order a stage into the 1F1B order of a deeper pipeline.
  std::vector<OTF2_StringRef> phase_of(t.intervals.size(), OTF2_UNDEFINED_STRING);
  for (std::size_t i = 0; i < t.intervals.size(); ++i) {
    if (!t.intervals[i].phase.empty()) phase_of[i] = str(t.intervals[i].phase);
  }

  // The archive. Only the three OTF2 paths of an earlier archive are removed.
  namespace fs = std::filesystem;
  std::error_code ec;
  fs::create_directories(dir, ec);
  if (ec || !fs::is_directory(dir)) throw InputError(fmt::format("--otf2 {}: cannot create the directory", dir));
  for (const char* name : {"traces.otf2", "traces.def", "traces"}) fs::remove_all(fs::path(dir) / name, ec);
  OTF2_Archive* archive = OTF2_Archive_Open(dir.c_str(), "traces", OTF2_FILEMODE_WRITE, 1024 * 1024, 4 * 1024 * 1024,
                                            OTF2_SUBSTRATE_POSIX, OTF2_COMPRESSION_NONE);
  if (archive == nullptr) {
    throw InputError(fmt::format("--otf2 {}: cannot create an OTF2 archive there ({})", dir, last_otf2_message()));
  }
  struct Closer {
    OTF2_Archive* a;
    ~Closer() {
      if (a != nullptr) OTF2_Archive_Close(a);
    }
  } closer{archive};
  OTF2_FlushCallbacks flush{pre_flush, post_flush};
  check(OTF2_Archive_SetFlushCallbacks(archive, &flush, nullptr), dir, "setting flush callbacks");
  check(OTF2_Archive_SetSerialCollectiveCallbacks(archive), dir, "setting collective callbacks");
  check(OTF2_Archive_SetCreator(archive, kCreator), dir, "setting the creator");
  check(OTF2_Archive_SetDescription(archive, t.title.c_str()), dir, "setting the description");
  check(OTF2_Archive_SetMachineName(archive, t.machine.c_str()), dir, "setting the machine name");

  // Attributes of compute and communication regions (written on Enter).
  const OTF2_AttributeRef attr_micro_batch = 0;
  const OTF2_AttributeRef attr_layer = 1;
  const OTF2_AttributeRef attr_op = 2;
  const OTF2_AttributeRef attr_after = 3;
  const OTF2_AttributeRef attr_phase = 4;
  OTF2_AttributeList* attrs = OTF2_AttributeList_New();
  struct AttrFree {
    OTF2_AttributeList* l;
    ~AttrFree() { OTF2_AttributeList_Delete(l); }
  } attr_free{attrs};

  // Events.
  const auto comm_rank = [&](int comm, int global_rank) -> std::uint32_t {
    const auto& r = t.comms[static_cast<std::size_t>(comm)].ranks;
    std::uint32_t k = 0;
    for (int member : r) {
      if (member == global_rank) return k;
      if (index_of_rank.count(member) != 0) ++k;  // group members are the ranks that have locations
    }
    return OTF2_UNDEFINED_UINT32;
  };
  std::vector<std::uint64_t> event_count(locations.size(), 0);
  long long total_events = 0;
  check(OTF2_Archive_OpenEvtFiles(archive), dir, "opening the event files");
  for (std::size_t li : loc_order) {
    auto& loc = locations[li];
    OTF2_EvtWriter* w = OTF2_Archive_GetEvtWriter(archive, loc_id[li]);
    if (w == nullptr) check(OTF2_ERROR_MEM_ALLOC_FAILED, dir, "creating an event writer");
    for (const Ev& ev : loc.events) {
      switch (ev.kind) {
        case EvKind::enter: {
          const auto& iv = t.intervals[ev.index];
          OTF2_AttributeList* list = nullptr;
          if (iv.micro_batch >= 0 || iv.layer >= 0 || iv.op >= 0) {
            if (iv.micro_batch >= 0) OTF2_AttributeList_AddInt32(attrs, attr_micro_batch, iv.micro_batch);
            if (iv.layer >= 0) OTF2_AttributeList_AddInt32(attrs, attr_layer, iv.layer);
            if (iv.op >= 0) OTF2_AttributeList_AddUint64(attrs, attr_op, static_cast<std::uint64_t>(iv.op));
            if (after_of[ev.index] != OTF2_UNDEFINED_STRING) OTF2_AttributeList_AddStringRef(attrs, attr_after, after_of[ev.index]);
            if (phase_of[ev.index] != OTF2_UNDEFINED_STRING) OTF2_AttributeList_AddStringRef(attrs, attr_phase, phase_of[ev.index]);
            list = attrs;
          }
          check(OTF2_EvtWriter_Enter(w, list, ev.ts, region_of[ev.index]), dir, "writing an Enter event");
          break;
        }
        case EvKind::leave:
          check(OTF2_EvtWriter_Leave(w, nullptr, ev.ts, region_of[ev.index]), dir, "writing a Leave event");
          break;
        case EvKind::coll_begin:
          check(OTF2_EvtWriter_MpiCollectiveBegin(w, nullptr, ev.ts), dir, "writing a collective begin");
          break;
        case EvKind::coll_end: {
          const auto& iv = t.intervals[ev.index];
          const std::uint32_t root = iv.root < 0 ? OTF2_UNDEFINED_UINT32 : comm_rank(iv.comm, iv.root);
          check(OTF2_EvtWriter_MpiCollectiveEnd(w, nullptr, ev.ts, otf2_op(iv.collective),
                                                static_cast<OTF2_CommRef>(iv.comm), root, iv.bytes_sent,
                                                iv.bytes_received),
                dir, "writing a collective end");
          break;
        }
        case EvKind::send:
        case EvKind::recv: {
          const auto& m = t.messages[ev.index];
          const std::uint32_t peer = comm_rank(0, m.peer);
          if (peer == OTF2_UNDEFINED_UINT32) throw std::logic_error(fmt::format("write_otf2: peer {} has no location", m.peer));
          // The op id tells readers which region a message belongs to: a pipeline op on an
          // overlap location (`pp #2`) has its message on the `pp` location.
          OTF2_AttributeList* list = nullptr;
          if (m.op >= 0) {
            OTF2_AttributeList_AddUint64(attrs, attr_op, static_cast<std::uint64_t>(m.op));
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
    event_count[li] = loc.events.size();
    total_events += static_cast<long long>(loc.events.size());
    loc.events = {};  // bounded memory on big timelines
    check(OTF2_Archive_CloseEvtWriter(archive, w), dir, "closing an event writer");
  }
  check(OTF2_Archive_CloseEvtFiles(archive), dir, "closing the event files");
  // Empty local definition files: every location's identifiers are already global.
  check(OTF2_Archive_OpenDefFiles(archive), dir, "opening the local definition files");
  for (std::size_t li : loc_order) {
    OTF2_DefWriter* dw = OTF2_Archive_GetDefWriter(archive, loc_id[li]);
    if (dw == nullptr) check(OTF2_ERROR_MEM_ALLOC_FAILED, dir, "creating a definition writer");
    check(OTF2_Archive_CloseDefWriter(archive, dw), dir, "closing a definition writer");
  }
  check(OTF2_Archive_CloseDefFiles(archive), dir, "closing the local definition files");

  // Global definitions. Strings are collected first (ids in order of first use), then written.
  struct SysNode {
    OTF2_StringRef name, cls;
    OTF2_SystemTreeNodeRef parent;
  };
  std::vector<SysNode> sys_nodes;
  sys_nodes.push_back({str(t.machine.empty() ? "cluster" : t.machine), str("machine"), OTF2_UNDEFINED_SYSTEM_TREE_NODE});
  std::map<int, OTF2_SystemTreeNodeRef> node_ref;
  for (int node : t.node_of_rank) {
    if (node_ref.count(node) == 0) {
      node_ref[node] = static_cast<OTF2_SystemTreeNodeRef>(sys_nodes.size());
      sys_nodes.push_back({str(fmt::format("node {}", node)), str("node"), 0});
    }
  }
  std::vector<OTF2_StringRef> group_names(t.ranks.size());
  for (std::size_t ri = 0; ri < t.ranks.size(); ++ri) group_names[ri] = str(fmt::format("GPU rank {}", t.ranks[ri]));
  std::vector<OTF2_StringRef> loc_names(locations.size());
  for (std::size_t li : loc_order) {
    const auto& loc = locations[li];
    loc_names[li] = str(stream_lane_name(t.streams[static_cast<std::size_t>(loc.stream)], loc.lane));
  }
  std::vector<OTF2_StringRef> comm_names(t.comms.size());
  for (std::size_t c = 0; c < t.comms.size(); ++c) comm_names[c] = str(t.comms[c].name);
  const OTF2_StringRef s_empty = str("");
  const OTF2_StringRef s_mpi = str("MPI");
  const OTF2_StringRef s_cuda = str("CUDA");
  const OTF2_StringRef s_mb = str("micro_batch");
  const OTF2_StringRef s_mb_desc = str("Micro-batch of the training op");
  const OTF2_StringRef s_layer = str("layer");
  const OTF2_StringRef s_layer_desc = str("Global transformer layer of the training op");
  const OTF2_StringRef s_op = str("commstack_op");
  const OTF2_StringRef s_op_desc = str("Id of the op in the simulated op graph");
  const OTF2_StringRef s_after = str("commstack_after");
  const OTF2_StringRef s_after_desc = str("Ids of the ops this op waited for (its dependencies), comma separated");
  const OTF2_StringRef s_phase = str("phase");
  const OTF2_StringRef s_phase_desc = str("Phase of the training op: forward, backward, recompute or optimizer");

  OTF2_GlobalDefWriter* g = OTF2_Archive_GetGlobalDefWriter(archive);
  if (g == nullptr) check(OTF2_ERROR_MEM_ALLOC_FAILED, dir, "creating the global definition writer");
  check(OTF2_GlobalDefWriter_WriteClockProperties(g, 1000000000, 0, last_tick + 1, OTF2_UNDEFINED_TIMESTAMP), dir,
        "writing the clock properties");
  for (std::size_t s = 0; s < str.strings().size(); ++s) {
    check(OTF2_GlobalDefWriter_WriteString(g, static_cast<OTF2_StringRef>(s), str.strings()[s].c_str()), dir,
          "writing a string");
  }
  check(OTF2_GlobalDefWriter_WriteParadigm(g, OTF2_PARADIGM_MPI, s_mpi, OTF2_PARADIGM_CLASS_PROCESS), dir,
        "writing a paradigm");
  check(OTF2_GlobalDefWriter_WriteParadigm(g, OTF2_PARADIGM_CUDA, s_cuda, OTF2_PARADIGM_CLASS_ACCELERATOR), dir,
        "writing a paradigm");
  check(OTF2_GlobalDefWriter_WriteAttribute(g, attr_micro_batch, s_mb, s_mb_desc, OTF2_TYPE_INT32), dir,
        "writing an attribute");
  check(OTF2_GlobalDefWriter_WriteAttribute(g, attr_layer, s_layer, s_layer_desc, OTF2_TYPE_INT32), dir,
        "writing an attribute");
  check(OTF2_GlobalDefWriter_WriteAttribute(g, attr_op, s_op, s_op_desc, OTF2_TYPE_UINT64), dir, "writing an attribute");
  check(OTF2_GlobalDefWriter_WriteAttribute(g, attr_after, s_after, s_after_desc, OTF2_TYPE_STRING), dir,
        "writing an attribute");
  check(OTF2_GlobalDefWriter_WriteAttribute(g, attr_phase, s_phase, s_phase_desc, OTF2_TYPE_STRING), dir,
        "writing an attribute");
  for (std::size_t r = 0; r < region_defs.size(); ++r) {
    const auto& d = region_defs[r];
    check(OTF2_GlobalDefWriter_WriteRegion(g, static_cast<OTF2_RegionRef>(r), d.name, d.name, d.kind, d.role, d.paradigm,
                                           OTF2_REGION_FLAG_NONE, s_empty, 0, 0),
          dir, "writing a region");
  }
  for (std::size_t n = 0; n < sys_nodes.size(); ++n) {
    check(OTF2_GlobalDefWriter_WriteSystemTreeNode(g, static_cast<OTF2_SystemTreeNodeRef>(n), sys_nodes[n].name,
                                                   sys_nodes[n].cls, sys_nodes[n].parent),
          dir, "writing a system tree node");
    check(OTF2_GlobalDefWriter_WriteSystemTreeNodeDomain(
              g, static_cast<OTF2_SystemTreeNodeRef>(n),
              n == 0 ? OTF2_SYSTEM_TREE_DOMAIN_MACHINE : OTF2_SYSTEM_TREE_DOMAIN_SHARED_MEMORY),
          dir, "writing a system tree domain");
  }
  for (std::size_t ri = 0; ri < t.ranks.size(); ++ri) {
    check(OTF2_GlobalDefWriter_WriteLocationGroup(g, static_cast<OTF2_LocationGroupRef>(ri), group_names[ri],
                                                  OTF2_LOCATION_GROUP_TYPE_PROCESS, node_ref[t.node_of_rank[ri]],
                                                  OTF2_UNDEFINED_LOCATION_GROUP),
          dir, "writing a location group");
  }
  // Streams are written as threads of the rank's process: OTF2 3.0 puts accelerator streams in
  // accelerator location groups that cannot be MPI communication endpoints.
  for (std::size_t li : loc_order) {
    check(OTF2_GlobalDefWriter_WriteLocation(g, loc_id[li], loc_names[li], OTF2_LOCATION_TYPE_CPU_THREAD, event_count[li],
                                             static_cast<OTF2_LocationGroupRef>(locations[li].rank_index)),
          dir, "writing a location");
  }
  // Group 0: COMM_LOCATIONS (communicator rank i of the world = location of ranks[i]); group
  // c + 1: the members of communicator c as indices into it.
  std::vector<std::uint64_t> comm_locations(t.ranks.size());
  for (std::size_t ri = 0; ri < t.ranks.size(); ++ri) {
    comm_locations[ri] = loc_id[location_of.at({static_cast<int>(ri), t.message_stream, 0})];
  }
  check(OTF2_GlobalDefWriter_WriteGroup(g, 0, s_empty, OTF2_GROUP_TYPE_COMM_LOCATIONS, OTF2_PARADIGM_MPI,
                                        OTF2_GROUP_FLAG_NONE, static_cast<std::uint32_t>(comm_locations.size()),
                                        comm_locations.data()),
        dir, "writing the communication locations");
  for (std::size_t c = 0; c < t.comms.size(); ++c) {
    std::vector<std::uint64_t> members;
    for (int rank : t.comms[c].ranks) {
      auto it = index_of_rank.find(rank);
      if (it != index_of_rank.end()) members.push_back(static_cast<std::uint64_t>(it->second));
    }
    check(OTF2_GlobalDefWriter_WriteGroup(g, static_cast<OTF2_GroupRef>(c + 1), comm_names[c], OTF2_GROUP_TYPE_COMM_GROUP,
                                          OTF2_PARADIGM_MPI, OTF2_GROUP_FLAG_NONE,
                                          static_cast<std::uint32_t>(members.size()), members.data()),
          dir, "writing a communicator group");
    check(OTF2_GlobalDefWriter_WriteComm(g, static_cast<OTF2_CommRef>(c), comm_names[c], static_cast<OTF2_GroupRef>(c + 1),
                                         OTF2_UNDEFINED_COMM, OTF2_COMM_FLAG_NONE),
          dir, "writing a communicator");
  }
  closer.a = nullptr;
  check(OTF2_Archive_Close(archive), dir, "closing the archive");
  make_trace_id_deterministic(dir, t.machine, t.title);

  Otf2WriteSummary s;
  s.anchor = (fs::path(dir) / "traces.otf2").string();
  s.locations = static_cast<long long>(locations.size());
  s.events = total_events;
  s.regions = static_cast<long long>(region_defs.size());
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
