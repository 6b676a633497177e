#include "workloads/importers/otf2_reader.hpp"

#include <otf2/otf2.h>

#include <cstdio>  // EOF
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <memory>

#include <fmt/format.h>

#include "common/error.hpp"
#include "sim/report/otf2_errors.hpp"

#if defined(__SANITIZE_ADDRESS__)
// OTF2 3.0.2 leaks on its error paths: OTF2_Reader_Open returns NULL on a malformed anchor file
// without freeing the archive and its anchor file handle (otf2_archive_open, otf2_file_posix_open),
// and a damaged local definition or event file leaves an id map or a partly read record behind
// (OTF2_IdMap_Create, otf2_evt_reader_read) that OTF2_Reader_Close does not free. Found by the
// mutation test in tests/unit/test_otf2_reader.cpp; each leak is a few hundred bytes per rejected
// file. The leak checker of sanitizer builds skips allocations made there (the Debian library has
// no frame pointers, so only the allocating function is known). A reader we forget to close
// still shows up (its OTF2_Reader is allocated elsewhere).
extern "C" const char* __lsan_default_suppressions() {
  return "leak:OTF2_Reader_Open\nleak:otf2_archive_open\nleak:otf2_file_posix_open\nleak:OTF2_IdMap_Create\n"
         "leak:otf2_evt_reader_read\n";
}
#endif

namespace commstack::workloads {
namespace {

struct GroupDef {
  OTF2_GroupType type = OTF2_GROUP_TYPE_UNKNOWN;
  OTF2_Paradigm paradigm = OTF2_PARADIGM_UNKNOWN;
  OTF2_GroupFlag flags = OTF2_GROUP_FLAG_NONE;
  std::vector<std::uint64_t> members;
};
struct SystemNode {
  std::string name, cls;
  OTF2_SystemTreeNodeRef parent = OTF2_UNDEFINED_SYSTEM_TREE_NODE;
};
struct LocationGroup {
  std::string name;
  OTF2_LocationGroupType type = OTF2_LOCATION_GROUP_TYPE_UNKNOWN;
  OTF2_SystemTreeNodeRef parent = OTF2_UNDEFINED_SYSTEM_TREE_NODE;
};
struct RawComm {
  std::string name;
  OTF2_GroupRef group = OTF2_UNDEFINED_GROUP;
};

// Everything the callbacks fill; they never throw (C frames in between), they set `error` and
// ask OTF2 to stop.
struct ReadState {
  Otf2Archive* out = nullptr;
  long long max_events = 0;
  std::string error;
  std::map<OTF2_StringRef, std::string> strings;
  std::map<OTF2_SystemTreeNodeRef, SystemNode> system_nodes;
  std::map<OTF2_LocationGroupRef, LocationGroup> location_groups;
  std::map<OTF2_GroupRef, GroupDef> groups;
  std::map<OTF2_CommRef, RawComm> comms;
  std::map<std::uint64_t, std::size_t> location_index;
  std::map<OTF2_AttributeRef, std::string> attribute_names;

  std::string str(OTF2_StringRef ref) const {
    auto it = strings.find(ref);
    return it == strings.end() ? std::string() : it->second;
  }
  bool add(Otf2Event e) {
    if (static_cast<long long>(out->events.size()) >= max_events) {
      error = fmt::format("the trace has more than {} events (the import limit); record fewer (Score-P filtering, "
                          "fewer iterations) or import a shorter run",
                          max_events);
      return false;
    }
    if (e.time < out->global_offset) {
      error = fmt::format("event at tick {} on location {} is before the clock's global offset {}", e.time, e.location,
                          out->global_offset);
      return false;
    }
    e.time -= out->global_offset;
    out->events.push_back(std::move(e));
    return true;
  }
  OTF2_CallbackCode ignore(const char* kind) {
    ++out->ignored[kind];
    return OTF2_CALLBACK_SUCCESS;
  }
};

ReadState& st(void* p) { return *static_cast<ReadState*>(p); }
OTF2_CallbackCode done(ReadState&, bool ok) { return ok ? OTF2_CALLBACK_SUCCESS : OTF2_CALLBACK_INTERRUPT; }

std::string paradigm_name(OTF2_Paradigm p) {
  switch (p) {
    case OTF2_PARADIGM_MPI: return "mpi";
    case OTF2_PARADIGM_CUDA: return "cuda";
    case OTF2_PARADIGM_USER: return "user";
    case OTF2_PARADIGM_COMPILER: return "compiler";
    case OTF2_PARADIGM_MEASUREMENT_SYSTEM: return "measurement";
    case OTF2_PARADIGM_OPENMP: return "openmp";
    case OTF2_PARADIGM_PTHREAD: return "pthread";
    default: return "other";
  }
}

std::string role_name(OTF2_RegionRole r) {
  switch (r) {
    case OTF2_REGION_ROLE_FUNCTION: return "function";
    case OTF2_REGION_ROLE_WRAPPER: return "wrapper";
    case OTF2_REGION_ROLE_POINT2POINT: return "point2point";
    case OTF2_REGION_ROLE_COLL_ONE2ALL:
    case OTF2_REGION_ROLE_COLL_ALL2ONE:
    case OTF2_REGION_ROLE_COLL_ALL2ALL:
    case OTF2_REGION_ROLE_COLL_OTHER: return "collective";
    case OTF2_REGION_ROLE_BARRIER:
    case OTF2_REGION_ROLE_IMPLICIT_BARRIER: return "barrier";
    case OTF2_REGION_ROLE_DATA_TRANSFER: return "data_transfer";
    default: return "other";
  }
}

std::string collective_name(OTF2_CollectiveOp op) {
  switch (op) {
    case OTF2_COLLECTIVE_OP_BARRIER: return "barrier";
    case OTF2_COLLECTIVE_OP_BCAST: return "broadcast";
    case OTF2_COLLECTIVE_OP_GATHER:
    case OTF2_COLLECTIVE_OP_GATHERV: return "gather";
    case OTF2_COLLECTIVE_OP_SCATTER:
    case OTF2_COLLECTIVE_OP_SCATTERV: return "scatter";
    case OTF2_COLLECTIVE_OP_ALLGATHER:
    case OTF2_COLLECTIVE_OP_ALLGATHERV: return "all_gather";
    case OTF2_COLLECTIVE_OP_ALLTOALL:
    case OTF2_COLLECTIVE_OP_ALLTOALLV:
    case OTF2_COLLECTIVE_OP_ALLTOALLW: return "all_to_all";
    case OTF2_COLLECTIVE_OP_ALLREDUCE: return "all_reduce";
    case OTF2_COLLECTIVE_OP_REDUCE: return "reduce";
    case OTF2_COLLECTIVE_OP_REDUCE_SCATTER:
    case OTF2_COLLECTIVE_OP_REDUCE_SCATTER_BLOCK: return "reduce_scatter";
    case OTF2_COLLECTIVE_OP_SCAN: return "scan";
    case OTF2_COLLECTIVE_OP_EXSCAN: return "exscan";
    case OTF2_COLLECTIVE_OP_CREATE_HANDLE:
    case OTF2_COLLECTIVE_OP_DESTROY_HANDLE:
    case OTF2_COLLECTIVE_OP_CREATE_HANDLE_AND_ALLOCATE:
    case OTF2_COLLECTIVE_OP_DESTROY_HANDLE_AND_DEALLOCATE: return "handle";
    default: return "other";
  }
}

// --- global definitions ---
OTF2_CallbackCode def_clock(void* d, uint64_t resolution, uint64_t offset, uint64_t, uint64_t) {
  auto& s = st(d);
  if (resolution == 0) {
    s.error = "the clock properties give a timer resolution of 0 ticks per second";
    return OTF2_CALLBACK_INTERRUPT;
  }
  s.out->ticks_per_second = resolution;
  s.out->global_offset = offset;
  return OTF2_CALLBACK_SUCCESS;
}
OTF2_CallbackCode def_string(void* d, OTF2_StringRef self, const char* text) {
  st(d).strings[self] = text == nullptr ? "" : text;
  return OTF2_CALLBACK_SUCCESS;
}
OTF2_CallbackCode def_system_node(void* d, OTF2_SystemTreeNodeRef self, OTF2_StringRef name, OTF2_StringRef cls,
                                  OTF2_SystemTreeNodeRef parent) {
  auto& s = st(d);
  s.system_nodes[self] = {s.str(name), s.str(cls), parent};
  return OTF2_CALLBACK_SUCCESS;
}
OTF2_CallbackCode def_location_group(void* d, OTF2_LocationGroupRef self, OTF2_StringRef name, OTF2_LocationGroupType type,
                                     OTF2_SystemTreeNodeRef parent, OTF2_LocationGroupRef) {
  auto& s = st(d);
  s.location_groups[self] = {s.str(name), type, parent};
  return OTF2_CALLBACK_SUCCESS;
}
OTF2_CallbackCode def_location(void* d, OTF2_LocationRef self, OTF2_StringRef name, OTF2_LocationType type,
                               uint64_t events, OTF2_LocationGroupRef group) {
  auto& s = st(d);
  if (s.location_index.count(self) != 0) {
    s.error = fmt::format("location {} is defined twice", self);
    return OTF2_CALLBACK_INTERRUPT;
  }
  Otf2LocationDef l;
  l.id = self;
  l.name = s.str(name);
  l.type = type == OTF2_LOCATION_TYPE_CPU_THREAD           ? "cpu_thread"
           : type == OTF2_LOCATION_TYPE_ACCELERATOR_STREAM ? "accelerator_stream"
           : type == OTF2_LOCATION_TYPE_METRIC             ? "metric"
                                                           : "unknown";
  l.events = events;
  l.group = group;
  s.location_index[self] = s.out->locations.size();
  s.out->locations.push_back(std::move(l));
  return OTF2_CALLBACK_SUCCESS;
}
OTF2_CallbackCode def_region(void* d, OTF2_RegionRef self, OTF2_StringRef name, OTF2_StringRef, OTF2_StringRef description,
                             OTF2_RegionRole role, OTF2_Paradigm paradigm, OTF2_RegionFlag, OTF2_StringRef, uint32_t,
                             uint32_t) {
  auto& s = st(d);
  s.out->regions[self] = {s.str(name), s.str(description), paradigm_name(paradigm), role_name(role)};
  return OTF2_CALLBACK_SUCCESS;
}
OTF2_CallbackCode def_group(void* d, OTF2_GroupRef self, OTF2_StringRef, OTF2_GroupType type, OTF2_Paradigm paradigm,
                            OTF2_GroupFlag flags, uint32_t n, const uint64_t* members) {
  auto& s = st(d);
  GroupDef g{type, paradigm, flags, {}};
  if (members != nullptr) g.members.assign(members, members + n);
  s.groups[self] = std::move(g);
  return OTF2_CALLBACK_SUCCESS;
}
OTF2_CallbackCode def_comm(void* d, OTF2_CommRef self, OTF2_StringRef name, OTF2_GroupRef group, OTF2_CommRef,
                           OTF2_CommFlag) {
  auto& s = st(d);
  s.comms[self] = {s.str(name), group};
  return OTF2_CALLBACK_SUCCESS;
}

OTF2_CallbackCode def_attribute(void* d, OTF2_AttributeRef self, OTF2_StringRef name, OTF2_StringRef, OTF2_Type) {
  auto& s = st(d);
  s.attribute_names[self] = s.str(name);
  return OTF2_CALLBACK_SUCCESS;
}

// commstack's own op ids and dependencies (other writers' attributes are ignored).
void read_commstack_attributes(const ReadState& s, OTF2_AttributeList* attrs, Otf2Event& e) {
  const std::uint32_t n = attrs == nullptr ? 0 : OTF2_AttributeList_GetNumberOfElements(attrs);
  for (std::uint32_t i = 0; i < n; ++i) {
    OTF2_AttributeRef id = 0;
    OTF2_Type type = OTF2_TYPE_NONE;
    OTF2_AttributeValue value;
    if (OTF2_AttributeList_GetAttributeByIndex(attrs, i, &id, &type, &value) != OTF2_SUCCESS) continue;
    const auto name = s.attribute_names.find(id);
    if (name == s.attribute_names.end()) continue;
    if (name->second == "commstack_op" && type == OTF2_TYPE_UINT64 && value.uint64 < (1ULL << 62)) {
      e.op = static_cast<std::int64_t>(value.uint64);
    } else if (name->second == "commstack_after" && type == OTF2_TYPE_STRING) {
      e.after = s.str(value.stringRef);
    } else if (name->second == "micro_batch" && type == OTF2_TYPE_INT32 && value.int32 >= 0) {
      e.micro_batch = value.int32;
    } else if (name->second == "layer" && type == OTF2_TYPE_INT32 && value.int32 >= 0) {
      e.layer = value.int32;
    } else if (name->second == "phase" && type == OTF2_TYPE_STRING) {
      e.phase = s.str(value.stringRef);
    }
  }
}

// --- events ---
OTF2_CallbackCode ev_enter(OTF2_LocationRef loc, OTF2_TimeStamp t, void* d, OTF2_AttributeList* attrs,
                           OTF2_RegionRef region) {
  auto& s = st(d);
  Otf2Event e;
  e.location = loc;
  e.time = t;
  e.kind = Otf2EventKind::enter;
  e.region = region;
  read_commstack_attributes(s, attrs, e);
  return done(s, s.add(std::move(e)));
}
OTF2_CallbackCode ev_leave(OTF2_LocationRef loc, OTF2_TimeStamp t, void* d, OTF2_AttributeList*, OTF2_RegionRef region) {
  auto& s = st(d);
  Otf2Event e;
  e.location = loc;
  e.time = t;
  e.kind = Otf2EventKind::leave;
  e.region = region;
  return done(s, s.add(std::move(e)));
}
Otf2Event message(OTF2_LocationRef loc, OTF2_TimeStamp t, Otf2EventKind kind, uint32_t peer, OTF2_CommRef comm, uint32_t tag,
                  uint64_t bytes) {
  Otf2Event e;
  e.location = loc;
  e.time = t;
  e.kind = kind;
  e.peer = peer;
  e.comm = comm;
  e.tag = tag;
  e.bytes = bytes;
  return e;
}
// The four point-to-point callbacks differ only in the event kind (libotf2 wants one C function each).
OTF2_CallbackCode add_message(void* d, OTF2_LocationRef loc, OTF2_TimeStamp t, OTF2_AttributeList* attrs,
                              Otf2EventKind kind, uint32_t peer, OTF2_CommRef comm, uint32_t tag, uint64_t bytes) {
  auto& s = st(d);
  Otf2Event e = message(loc, t, kind, peer, comm, tag, bytes);
  read_commstack_attributes(s, attrs, e);
  return done(s, s.add(std::move(e)));
}
OTF2_CallbackCode ev_send(OTF2_LocationRef loc, OTF2_TimeStamp t, void* d, OTF2_AttributeList* attrs, uint32_t receiver,
                          OTF2_CommRef comm, uint32_t tag, uint64_t bytes) {
  return add_message(d, loc, t, attrs, Otf2EventKind::send, receiver, comm, tag, bytes);
}
OTF2_CallbackCode ev_recv(OTF2_LocationRef loc, OTF2_TimeStamp t, void* d, OTF2_AttributeList* attrs, uint32_t sender,
                          OTF2_CommRef comm, uint32_t tag, uint64_t bytes) {
  return add_message(d, loc, t, attrs, Otf2EventKind::recv, sender, comm, tag, bytes);
}
OTF2_CallbackCode ev_isend(OTF2_LocationRef loc, OTF2_TimeStamp t, void* d, OTF2_AttributeList* attrs, uint32_t receiver,
                           OTF2_CommRef comm, uint32_t tag, uint64_t bytes, uint64_t) {
  return add_message(d, loc, t, attrs, Otf2EventKind::isend, receiver, comm, tag, bytes);
}
OTF2_CallbackCode ev_irecv(OTF2_LocationRef loc, OTF2_TimeStamp t, void* d, OTF2_AttributeList* attrs, uint32_t sender,
                           OTF2_CommRef comm, uint32_t tag, uint64_t bytes, uint64_t) {
  return add_message(d, loc, t, attrs, Otf2EventKind::irecv, sender, comm, tag, bytes);
}
OTF2_CallbackCode ev_coll_begin(OTF2_LocationRef loc, OTF2_TimeStamp t, void* d, OTF2_AttributeList*) {
  auto& s = st(d);
  Otf2Event e;
  e.location = loc;
  e.time = t;
  e.kind = Otf2EventKind::collective_begin;
  return done(s, s.add(std::move(e)));
}
OTF2_CallbackCode ev_coll_end(OTF2_LocationRef loc, OTF2_TimeStamp t, void* d, OTF2_AttributeList*, OTF2_CollectiveOp op,
                              OTF2_CommRef comm, uint32_t root, uint64_t sent, uint64_t received) {
  auto& s = st(d);
  Otf2Event e;
  e.location = loc;
  e.time = t;
  e.kind = Otf2EventKind::collective_end;
  e.collective = collective_name(op);
  e.comm = comm;
  e.root = root;
  e.bytes = sent;
  e.bytes_received = received;
  return done(s, s.add(std::move(e)));
}
OTF2_CallbackCode ev_rma_put(OTF2_LocationRef loc, OTF2_TimeStamp t, void* d, OTF2_AttributeList*, OTF2_RmaWinRef,
                             uint32_t remote, uint64_t bytes, uint64_t) {
  auto& s = st(d);
  Otf2Event e = message(loc, t, Otf2EventKind::rma_put, remote, 0, 0, bytes);
  return done(s, s.add(std::move(e)));
}
OTF2_CallbackCode ev_rma_get(OTF2_LocationRef loc, OTF2_TimeStamp t, void* d, OTF2_AttributeList*, OTF2_RmaWinRef,
                             uint32_t remote, uint64_t bytes, uint64_t) {
  auto& s = st(d);
  Otf2Event e = message(loc, t, Otf2EventKind::rma_get, remote, 0, 0, bytes);
  return done(s, s.add(std::move(e)));
}
// Record kinds that are read but not used: counted for the warning.
OTF2_CallbackCode ev_metric(OTF2_LocationRef, OTF2_TimeStamp, void* d, OTF2_AttributeList*, OTF2_MetricRef, uint8_t,
                            const OTF2_Type*, const OTF2_MetricValue*) {
  return st(d).ignore("metric");
}
OTF2_CallbackCode ev_program_begin(OTF2_LocationRef, OTF2_TimeStamp, void* d, OTF2_AttributeList*, OTF2_StringRef,
                                   uint32_t, const OTF2_StringRef*) {
  return st(d).ignore("program_begin");
}
OTF2_CallbackCode ev_program_end(OTF2_LocationRef, OTF2_TimeStamp, void* d, OTF2_AttributeList*, int64_t) {
  return st(d).ignore("program_end");
}
OTF2_CallbackCode ev_param_string(OTF2_LocationRef, OTF2_TimeStamp, void* d, OTF2_AttributeList*, OTF2_ParameterRef,
                                  OTF2_StringRef) {
  return st(d).ignore("parameter");
}
OTF2_CallbackCode ev_param_int(OTF2_LocationRef, OTF2_TimeStamp, void* d, OTF2_AttributeList*, OTF2_ParameterRef, int64_t) {
  return st(d).ignore("parameter");
}
OTF2_CallbackCode ev_param_uint(OTF2_LocationRef, OTF2_TimeStamp, void* d, OTF2_AttributeList*, OTF2_ParameterRef,
                                uint64_t) {
  return st(d).ignore("parameter");
}
OTF2_CallbackCode ev_isend_complete(OTF2_LocationRef, OTF2_TimeStamp, void* d, OTF2_AttributeList*, uint64_t) {
  return st(d).ignore("mpi_isend_complete");
}
OTF2_CallbackCode ev_irecv_request(OTF2_LocationRef, OTF2_TimeStamp, void* d, OTF2_AttributeList*, uint64_t) {
  return st(d).ignore("mpi_irecv_request");
}
OTF2_CallbackCode ev_unknown(OTF2_LocationRef, OTF2_TimeStamp, void* d, OTF2_AttributeList*) {
  return st(d).ignore("unknown record kind (newer OTF2 than this reader)");
}

// The system-tree node of class "node" above a location group (Score-P: the host name).
std::string node_of(const ReadState& s, OTF2_SystemTreeNodeRef ref) {
  std::string first;
  for (int depth = 0; depth < 64 && ref != OTF2_UNDEFINED_SYSTEM_TREE_NODE; ++depth) {
    auto it = s.system_nodes.find(ref);
    if (it == s.system_nodes.end()) break;
    if (first.empty()) first = it->second.name;
    if (it->second.cls == "node") return it->second.name;
    ref = it->second.parent;
  }
  return first;
}

class Reader {
public:
  Reader(const std::string& anchor) : anchor_(anchor) {
    sim::capture_otf2_errors();
    r_ = OTF2_Reader_Open(anchor.c_str());
    if (r_ == nullptr) fail("opening the archive", OTF2_ERROR_FILE_CAN_NOT_OPEN);
  }
  ~Reader() {
    if (r_ != nullptr) OTF2_Reader_Close(r_);
  }
  Reader(const Reader&) = delete;
  Reader& operator=(const Reader&) = delete;
  OTF2_Reader* get() const { return r_; }

  void check(OTF2_ErrorCode code, const char* what, const ReadState& s) const {
    if (!s.error.empty()) throw InputError(fmt::format("{}: {}", anchor_, s.error));
    if (code != OTF2_SUCCESS) fail(what, code);
  }
  [[noreturn]] void fail(const char* what, OTF2_ErrorCode code) const {
    const std::string& detail = sim::last_otf2_message();
    throw InputError(fmt::format("{}: not a readable OTF2 archive: {} failed ({}{}{}); expected a complete archive "
                                 "(anchor .otf2, .def, and the traces/ directory) as Score-P or commstack --otf2 writes it",
                                 anchor_, what, OTF2_Error_GetDescription(code), detail.empty() ? "" : ": ", detail));
  }

private:
  std::string anchor_;
  OTF2_Reader* r_ = nullptr;
};

// OTF2 3.0.2 trusts the anchor file's property count and allocates two pointers per property
// before reading any: one flipped byte asks for tens of GB. The fixed layout up to that count
// (OTF2_AnchorFile.c: chunk header, endianness, "OTF2", format, 38 bytes of sizes, machine,
// creator and description strings, then a 32-bit count) is checked here first; anything this
// check does not understand is left to OTF2 to report.
void check_anchor_properties(const std::string& anchor) {
  std::ifstream in(anchor, std::ios::binary);
  std::string bytes(4096, '\0');
  in.read(bytes.data(), static_cast<std::streamsize>(bytes.size()));
  bytes.resize(static_cast<std::size_t>(in.gcount()));
  if (in.gcount() == 4096 && in.peek() != EOF) {
    throw InputError(fmt::format("{}: not an OTF2 anchor file (larger than 4 kB; anchor files hold a few hundred bytes)", anchor));
  }
  const std::size_t size = bytes.size();
  if (size < 2 || (bytes[1] != 0x42 && bytes[1] != 0x23)) return;
  const bool little = bytes[1] == 0x42;
  std::size_t pos = 2;
  const auto skip_string = [&] {
    const auto end = bytes.find('\0', pos);
    if (end == std::string::npos) return false;
    pos = end + 1;
    return true;
  };
  if (bytes.compare(pos, 5, std::string("OTF2\0", 5)) != 0) return;
  pos += 5;
  if (pos >= size) return;
  const auto format = static_cast<unsigned char>(bytes[pos++]);
  pos += 38;
  if (pos > size || !skip_string() || !skip_string() || !skip_string() || format < 2 || pos + 4 > size) return;
  std::uint32_t count = 0;
  for (int i = 0; i < 4; ++i) {
    const auto b = static_cast<std::uint32_t>(static_cast<unsigned char>(bytes[pos + static_cast<std::size_t>(little ? 3 - i : i)]));
    count = (count << 8) | b;
  }
  const std::size_t room = (size - pos - 4) / 2;  // a property is two strings of at least their terminator
  if (count > room) {
    throw InputError(fmt::format("{}: damaged OTF2 anchor file: it declares {} properties but has room for at most {}; "
                                 "expected the anchor file as Score-P or commstack --otf2 wrote it",
                                 anchor, count, room));
  }
}

std::string resolve_anchor(const std::string& path) {
  namespace fs = std::filesystem;
  std::error_code ec;
  if (fs::is_directory(path, ec)) {
    const fs::path anchor = fs::path(path) / "traces.otf2";
    if (fs::is_regular_file(anchor, ec)) return anchor.string();
    std::vector<std::string> found;
    for (const auto& e : fs::directory_iterator(path, ec)) {
      if (e.path().extension() == ".otf2") found.push_back(e.path().string());
    }
    if (found.size() == 1) return found[0];
    throw InputError(fmt::format("{}: expected an OTF2 anchor file (traces.otf2) in this directory, found {}", path,
                                 found.empty() ? "none" : fmt::format("{} .otf2 files", found.size())));
  }
  if (!fs::is_regular_file(path, ec)) throw InputError(fmt::format("{}: no such OTF2 anchor file or directory", path));
  return path;
}

}  // namespace

namespace {

// The global definitions: clock, strings, system tree, location groups and locations, regions,
// groups, communicators, attributes.
void read_global_definitions(Reader& reader, OTF2_Reader* r, ReadState& s, Otf2Archive& out) {
  OTF2_GlobalDefReader* gdr = OTF2_Reader_GetGlobalDefReader(r);
  if (gdr == nullptr) reader.fail("opening the global definitions", OTF2_ERROR_FILE_CAN_NOT_OPEN);
  {
    std::unique_ptr<OTF2_GlobalDefReaderCallbacks, decltype(&OTF2_GlobalDefReaderCallbacks_Delete)> cb(
        OTF2_GlobalDefReaderCallbacks_New(), OTF2_GlobalDefReaderCallbacks_Delete);
    OTF2_GlobalDefReaderCallbacks_SetClockPropertiesCallback(cb.get(), def_clock);
    OTF2_GlobalDefReaderCallbacks_SetStringCallback(cb.get(), def_string);
    OTF2_GlobalDefReaderCallbacks_SetSystemTreeNodeCallback(cb.get(), def_system_node);
    OTF2_GlobalDefReaderCallbacks_SetLocationGroupCallback(cb.get(), def_location_group);
    OTF2_GlobalDefReaderCallbacks_SetLocationCallback(cb.get(), def_location);
    OTF2_GlobalDefReaderCallbacks_SetRegionCallback(cb.get(), def_region);
    OTF2_GlobalDefReaderCallbacks_SetGroupCallback(cb.get(), def_group);
    OTF2_GlobalDefReaderCallbacks_SetCommCallback(cb.get(), def_comm);
    OTF2_GlobalDefReaderCallbacks_SetAttributeCallback(cb.get(), def_attribute);
    reader.check(OTF2_Reader_RegisterGlobalDefCallbacks(r, gdr, cb.get(), &s), "registering definition callbacks", s);
  }
  uint64_t n_defs = 0;
  reader.check(OTF2_Reader_ReadAllGlobalDefinitions(r, gdr, &n_defs), "reading the global definitions", s);
  reader.check(OTF2_Reader_CloseGlobalDefReader(r, gdr), "closing the global definitions", s);
  if (out.ticks_per_second == 0) {
    throw InputError(fmt::format("{}: the global definitions have no clock properties; expected a complete archive",
                                 out.anchor));
  }
  if (out.locations.empty()) throw InputError(fmt::format("{}: the archive defines no locations", out.anchor));
}

// Names of groups and nodes, and the communicators' member locations.
void resolve_groups(ReadState& s, Otf2Archive& out) {
  for (auto& l : out.locations) {
    auto it = s.location_groups.find(l.group);
    if (it == s.location_groups.end()) {
      out.warnings.push_back(fmt::format("location {} ({}) names location group {}, which is not defined", l.id, l.name, l.group));
      continue;
    }
    l.group_name = it->second.name;
    l.group_type = it->second.type == OTF2_LOCATION_GROUP_TYPE_PROCESS       ? "process"
                   : it->second.type == OTF2_LOCATION_GROUP_TYPE_ACCELERATOR ? "accelerator"
                                                                            : "unknown";
    l.node = node_of(s, it->second.parent);
  }
  std::map<OTF2_Paradigm, const GroupDef*> comm_locations;
  for (const auto& [id, g] : s.groups) {
    if (g.type == OTF2_GROUP_TYPE_COMM_LOCATIONS) comm_locations[g.paradigm] = &g;
  }
  for (const auto& [id, c] : s.comms) {
    Otf2CommDef def;
    def.name = c.name;
    auto g = s.groups.find(c.group);
    if (g == s.groups.end()) {
      out.warnings.push_back(fmt::format("communicator {} ({}) names group {}, which is not defined", id, c.name, c.group));
    } else if (g->second.type == OTF2_GROUP_TYPE_COMM_GROUP) {
      auto cl = comm_locations.find(g->second.paradigm);
      for (std::uint64_t m : g->second.members) {
        if (g->second.flags & OTF2_GROUP_FLAG_GLOBAL_MEMBERS) {
          def.locations.push_back(m);
        } else if (cl != comm_locations.end() && m < cl->second->members.size()) {
          def.locations.push_back(cl->second->members[m]);
        } else {
          out.warnings.push_back(fmt::format("communicator {} ({}): member {} is not in the paradigm's location list",
                                             id, c.name, m));
          break;
        }
      }
    } else if (g->second.type == OTF2_GROUP_TYPE_COMM_SELF) {
      // MPI_COMM_SELF: one member, the calling location; nothing to resolve globally.
    } else {
      def.locations = g->second.members;
    }
    out.comms[id] = std::move(def);
  }
}

// Local definitions (Score-P's per-location id mappings) of every location, and its event reader.
void read_local_definitions(Reader& reader, OTF2_Reader* r, ReadState& s, const Otf2Archive& out) {
  for (const auto& l : out.locations) {
    reader.check(OTF2_Reader_SelectLocation(r, l.id), "selecting a location", s);
  }
  const bool def_files = OTF2_Reader_OpenDefFiles(r) == OTF2_SUCCESS;
  reader.check(OTF2_Reader_OpenEvtFiles(r), "opening the event files", s);
  for (const auto& l : out.locations) {
    if (def_files) {
      OTF2_DefReader* dr = OTF2_Reader_GetDefReader(r, l.id);
      if (dr != nullptr) {
        uint64_t n = 0;
        reader.check(OTF2_Reader_ReadAllLocalDefinitions(r, dr, &n), "reading a location's local definitions", s);
        reader.check(OTF2_Reader_CloseDefReader(r, dr), "closing a location's local definitions", s);
      }
    }
    if (OTF2_Reader_GetEvtReader(r, l.id) == nullptr) reader.fail("opening a location's events", OTF2_ERROR_FILE_CAN_NOT_OPEN);
  }
  if (def_files) reader.check(OTF2_Reader_CloseDefFiles(r), "closing the local definition files", s);
}

// Every location's events, merged in time order.
void read_events(Reader& reader, OTF2_Reader* r, ReadState& s) {
  OTF2_GlobalEvtReader* ger = OTF2_Reader_GetGlobalEvtReader(r);
  if (ger == nullptr) reader.fail("opening the events", OTF2_ERROR_FILE_CAN_NOT_OPEN);
  {
    std::unique_ptr<OTF2_GlobalEvtReaderCallbacks, decltype(&OTF2_GlobalEvtReaderCallbacks_Delete)> cb(
        OTF2_GlobalEvtReaderCallbacks_New(), OTF2_GlobalEvtReaderCallbacks_Delete);
    OTF2_GlobalEvtReaderCallbacks_SetEnterCallback(cb.get(), ev_enter);
    OTF2_GlobalEvtReaderCallbacks_SetLeaveCallback(cb.get(), ev_leave);
    OTF2_GlobalEvtReaderCallbacks_SetMpiSendCallback(cb.get(), ev_send);
    OTF2_GlobalEvtReaderCallbacks_SetMpiRecvCallback(cb.get(), ev_recv);
    OTF2_GlobalEvtReaderCallbacks_SetMpiIsendCallback(cb.get(), ev_isend);
    OTF2_GlobalEvtReaderCallbacks_SetMpiIrecvCallback(cb.get(), ev_irecv);
    OTF2_GlobalEvtReaderCallbacks_SetMpiCollectiveBeginCallback(cb.get(), ev_coll_begin);
    OTF2_GlobalEvtReaderCallbacks_SetMpiCollectiveEndCallback(cb.get(), ev_coll_end);
    OTF2_GlobalEvtReaderCallbacks_SetRmaPutCallback(cb.get(), ev_rma_put);
    OTF2_GlobalEvtReaderCallbacks_SetRmaGetCallback(cb.get(), ev_rma_get);
    OTF2_GlobalEvtReaderCallbacks_SetMetricCallback(cb.get(), ev_metric);
    OTF2_GlobalEvtReaderCallbacks_SetProgramBeginCallback(cb.get(), ev_program_begin);
    OTF2_GlobalEvtReaderCallbacks_SetProgramEndCallback(cb.get(), ev_program_end);
    OTF2_GlobalEvtReaderCallbacks_SetParameterStringCallback(cb.get(), ev_param_string);
    OTF2_GlobalEvtReaderCallbacks_SetParameterIntCallback(cb.get(), ev_param_int);
    OTF2_GlobalEvtReaderCallbacks_SetParameterUnsignedIntCallback(cb.get(), ev_param_uint);
    OTF2_GlobalEvtReaderCallbacks_SetMpiIsendCompleteCallback(cb.get(), ev_isend_complete);
    OTF2_GlobalEvtReaderCallbacks_SetMpiIrecvRequestCallback(cb.get(), ev_irecv_request);
    OTF2_GlobalEvtReaderCallbacks_SetUnknownCallback(cb.get(), ev_unknown);
    reader.check(OTF2_Reader_RegisterGlobalEvtCallbacks(r, ger, cb.get(), &s), "registering event callbacks", s);
  }
  uint64_t n_events = 0;
  reader.check(OTF2_Reader_ReadAllGlobalEvents(r, ger, &n_events), "reading the events", s);
  reader.check(OTF2_Reader_CloseGlobalEvtReader(r, ger), "closing the events", s);
  reader.check(OTF2_Reader_CloseEvtFiles(r), "closing the event files", s);
}

}  // namespace

std::string to_string(Otf2EventKind k) {
  switch (k) {
    case Otf2EventKind::enter: return "enter";
    case Otf2EventKind::leave: return "leave";
    case Otf2EventKind::send: return "mpi_send";
    case Otf2EventKind::recv: return "mpi_recv";
    case Otf2EventKind::isend: return "mpi_isend";
    case Otf2EventKind::irecv: return "mpi_irecv";
    case Otf2EventKind::collective_begin: return "mpi_collective_begin";
    case Otf2EventKind::collective_end: return "mpi_collective_end";
    case Otf2EventKind::rma_put: return "rma_put";
    case Otf2EventKind::rma_get: return "rma_get";
  }
  return "?";
}

const Otf2LocationDef* Otf2Archive::location(std::uint64_t id) const {
  for (const auto& l : locations) {
    if (l.id == id) return &l;
  }
  return nullptr;
}

Otf2Archive read_otf2_archive(const std::string& path, long long max_events) {
  Otf2Archive out;
  out.anchor = resolve_anchor(path);
  check_anchor_properties(out.anchor);
  ReadState s;
  s.out = &out;
  s.max_events = max_events;
  Reader reader(out.anchor);
  OTF2_Reader* r = reader.get();
  reader.check(OTF2_Reader_SetSerialCollectiveCallbacks(r), "setting up a serial reader", s);
  char* creator = nullptr;
  if (OTF2_Reader_GetCreator(r, &creator) == OTF2_SUCCESS && creator != nullptr) {
    out.creator = creator;
    std::free(creator);
  }
  read_global_definitions(reader, r, s, out);
  resolve_groups(s, out);
  read_local_definitions(reader, r, s, out);
  read_events(reader, r, s);
  for (const auto& [kind, count] : out.ignored) {
    out.warnings.push_back(fmt::format("ignored {} {} event{}", count, kind, count == 1 ? "" : "s"));
  }
  return out;
}

}  // namespace commstack::workloads
