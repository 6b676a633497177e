// Profiler plugin bookkeeping: a recorded v5 event stream folded into per-collective layer times.
#include <string>

#include <doctest/doctest.h>

#include "approx.hpp"

#include "calibration/bench/profiler_events.hpp"
#include "common/error.hpp"

using namespace commstack::bench::prof;

namespace {

// One all_reduce (id 2) under a GroupApi (1): two kernel channels (GPU timers in ns), one proxy op
// with two steps whose states split their time into GPU wait, network wait and flush wait.
const char* kStream = R"({"k":"start","id":1,"t":0,"type":256}
{"k":"start","id":2,"parent":1,"t":1,"type":2,"func":"AllReduce","algo":"RING","proto":"SIMPLE","seq":7,"count":1048576,"nchannels":2}
{"k":"stop","id":2,"t":4}
{"k":"stop","id":1,"t":5}
{"k":"start","id":3,"parent":2,"t":10,"type":64,"channel":0,"ptimer":1000000}
{"k":"start","id":4,"parent":2,"t":11,"type":64,"channel":1,"ptimer":1002000}
{"k":"start","id":5,"parent":2,"t":12,"type":8,"channel":0,"peer":1,"send":true}
{"k":"start","id":6,"parent":5,"t":12,"type":16}
{"k":"state","id":6,"t":12,"state":8,"size":524288}
{"k":"state","id":6,"t":15,"state":9,"size":524288}
{"k":"stop","id":6,"t":30}
{"k":"start","id":7,"parent":5,"t":20,"type":16}
{"k":"state","id":7,"t":20,"state":10,"size":262144}
{"k":"state","id":7,"t":26,"state":11}
{"k":"stop","id":7,"t":28}
{"k":"stop","id":5,"t":32}
{"k":"state","id":3,"t":38,"state":22,"ptimer":1025000}
{"k":"stop","id":3,"t":40}
{"k":"state","id":4,"t":40,"state":22,"ptimer":1030000}
{"k":"stop","id":4,"t":41}
)";

}  // namespace

TEST_CASE("bench: profiler stream folds into per-collective layer times") {
  const auto events = parse_event_stream(kStream, "rank0.jsonl");
  REQUIRE(events.size() == 20);
  const Aggregate agg = aggregate(events);
  CHECK(agg.unmatched_stops == 0);
  CHECK(agg.open_events == 0);
  REQUIRE(agg.collectives.size() == 1);
  const CollectiveTimes& c = agg.collectives[0];
  CHECK(c.func == "AllReduce");
  CHECK(c.algo == "RING");
  CHECK(c.seq == 7);
  CHECK(c.n_channels == 2);
  CHECK(c.enqueue_us == 3.0);
  CHECK(c.kernel_us == 31.0);  // 10 -> 41 (host stamps)
  REQUIRE(c.channels.size() == 2);
  CHECK(c.channels[0].kernel_us == approx(25.0));  // (1025000 - 1000000) ns
  CHECK(c.channels[1].kernel_us == approx(28.0));
  CHECK(c.proxy_us == 20.0);       // 12 -> 32
  CHECK(c.proxy_steps == 2);
  CHECK(c.net_wait_us == 15.0 + 6.0);  // SendWait 15->30, RecvWait 20->26
  CHECK(c.gpu_wait_us == 3.0 + 2.0);   // SendGPUWait 12->15, RecvFlushWait 26->28
  CHECK(c.net_bytes == 524288 + 524288 + 262144);
  CHECK(c.end_us == 41.0);
  CHECK(c.total_us == 40.0);
}

TEST_CASE("bench: profiler bookkeeping counts unmatched and open events") {
  const char* stream = R"({"k":"start","id":1,"t":0,"type":2,"func":"AllGather"}
{"k":"stop","id":9,"t":1}
{"k":"start","id":2,"parent":1,"t":2,"type":64,"channel":3}
{"k":"stop","id":1,"t":3}
{"k":"stop","id":1,"t":4}
)";
  const Aggregate agg = aggregate(parse_event_stream(stream, "s"));
  CHECK(agg.unmatched_stops == 2);  // id 9 never started, id 1 stopped twice
  CHECK(agg.open_events == 1);      // the kernel channel never stopped
  REQUIRE(agg.collectives.size() == 1);
  CHECK(agg.collectives[0].kernel_us == 0.0);  // unfinished channels are not attributed
  CHECK(agg.collectives[0].total_us == 3.0);
}

TEST_CASE("bench: profiler stream round trip and malformed lines") {
  const auto events = parse_event_stream(kStream, "r");
  CHECK(parse_event_stream(dump_event_stream(events), "r").size() == events.size());
  CHECK(dump_event_stream(parse_event_stream(dump_event_stream(events), "r")) == dump_event_stream(events));
  CHECK_THROWS_WITH_AS(parse_event_stream("{\"k\":\"start\",\"id\":1,\"t\":0,\"type\":3}\n", "rank3.jsonl"),
                       doctest::Contains("rank3.jsonl: line 1: field 'type'"), commstack::InputError);
  CHECK_THROWS_WITH_AS(parse_event_stream("\n{\"k\":\"go\",\"id\":1,\"t\":0}\n", "x"), doctest::Contains("line 2"),
                       commstack::InputError);
  CHECK_THROWS_AS(parse_event_stream("not json\n", "x"), commstack::InputError);
  CHECK_THROWS_AS(parse_event_stream("{\"k\":\"stop\",\"id\":0,\"t\":0}\n", "x"), commstack::InputError);
}
