#include <algorithm>
#include <map>
#include <set>
#include <tuple>

#include <doctest/doctest.h>
#include <boost/graph/adjacency_list.hpp>
#include <boost/graph/topological_sort.hpp>

#include <nlohmann/json.hpp>
#include "approx.hpp"

#include "common/error.hpp"
#include "workloads/flops.hpp"
#include "workloads/graph/generator.hpp"
#include "workloads/graph/schedule.hpp"
#include "workloads/model.hpp"
#include "workloads/rank_params.hpp"

using namespace commstack::workloads;

namespace {

ModelSpec tiny_gpt() {
  return parse_model(
      nlohmann::json::parse(R"({"name":"tiny-gpt","source":"test","layers":8,"hidden":256,"heads":8,
    "ffn_hidden":1024,"vocab":1024,"seq":128,"mlp":"gelu","norm":"layernorm","position":"learned","bias":true,
    "tied_embeddings":true,"dropout":true})"),
      "tiny");
}
ModelSpec tiny_moe() {
  return parse_model(
      nlohmann::json::parse(R"({"name":"tiny-moe","source":"test","layers":4,"hidden":128,"heads":4,
    "kv_heads":2,"ffn_hidden":512,"vocab":512,"seq":64,"mlp":"swiglu","norm":"rmsnorm","position":"rope","bias":false,
    "tied_embeddings":false,"dropout":false,"moe":{"experts":4,"top_k":2,"shared_experts":1,"ffn_hidden":256,
    "first_dense_layers":1}})"),
      "tiny");
}
ParallelConfig cfg(const ModelSpec& m, const char* text) {
  ParallelConfig p = parse_parallel(nlohmann::json::parse(text), "par");
  validate(m, p, -1, "par");
  return p;
}

// Whole-job dependency graph: op deps, send -> recv, and one vertex per collective instance that
// every participant's deps feed and that every participant waits for. A cycle = a deadlock.
bool job_is_acyclic(const OpGraph& g) {
  using G = boost::adjacency_list<boost::vecS, boost::vecS, boost::directedS>;
  std::map<std::pair<int, int>, int> instance_vertex;
  std::map<std::tuple<int, int, std::int64_t>, int> send_of;
  const int n = static_cast<int>(g.ops.size());
  int next = n;
  for (const Op& op : g.ops) {
    if (op.kind == OpKind::collective && !instance_vertex.contains({op.communicator, op.instance})) {
      instance_vertex[{op.communicator, op.instance}] = next++;
    }
    if (op.kind == OpKind::send) send_of[{op.rank, op.peer, op.tag}] = op.id;
  }
  G graph(static_cast<std::size_t>(next));
  for (const Op& op : g.ops) {
    const int target =
        op.kind == OpKind::collective ? instance_vertex[{op.communicator, op.instance}] : op.id;
    for (int d : op.deps)
      boost::add_edge(static_cast<std::size_t>(d), static_cast<std::size_t>(target), graph);
    if (op.kind == OpKind::collective)
      boost::add_edge(static_cast<std::size_t>(target), static_cast<std::size_t>(op.id), graph);
    if (op.kind == OpKind::recv) {
      auto it = send_of.find({op.peer, op.rank, op.tag});
      REQUIRE(it != send_of.end());
      boost::add_edge(static_cast<std::size_t>(it->second), static_cast<std::size_t>(op.id), graph);
    }
  }
  std::vector<std::size_t> order;
  try {
    boost::topological_sort(graph, std::back_inserter(order));
  } catch (const boost::not_a_dag&) {
    return false;
  }
  return true;
}

std::vector<const Op*> ops_named(const OpGraph& g, int rank, const std::string& name) {
  std::vector<const Op*> out;
  for (const Op& op : g.ops) {
    if (op.rank == rank && name == op.name) out.push_back(&op);
  }
  return out;
}

double compute_flops(const OpGraph& g) {
  double f = 0;
  for (const Op& op : g.ops) {
    if (op.kind == OpKind::compute && op.phase != Phase::optimizer) f += op.flops;
  }
  return f;
}

}  // namespace

TEST_CASE("work: 1F1B schedule runs one F and one B per micro-batch with warm-up depth pp-1-stage") {
  for (int m : {2, 4, 8}) {
    for (int s = 0; s < 4; ++s) {
      auto steps = pipeline_schedule(4, s, m, 1);
      CHECK(steps.size() == static_cast<std::size_t>(2 * m));
      std::set<std::pair<bool, int>> seen;
      for (const auto& st : steps) seen.insert({st.forward, st.micro_batch});
      CHECK(seen.size() == static_cast<std::size_t>(2 * m));
      CHECK(forwards_before_first_backward(steps) == std::min(4 - s, m));
      // Backward of micro-batch i never precedes its forward.
      for (std::size_t i = 0; i < steps.size(); ++i) {
        if (steps[i].forward) continue;
        auto f = std::find(steps.begin(), steps.end(), ScheduleStep{true, steps[i].micro_batch, 0});
        CHECK(f < steps.begin() + static_cast<long>(i));
      }
    }
  }
}

TEST_CASE("work: interleaved schedule follows Megatron's warm-up and chunk order") {
  const int p = 4, v = 2, m = 8;
  for (int s = 0; s < p; ++s) {
    auto steps = pipeline_schedule(p, s, m, v);
    CHECK(steps.size() == static_cast<std::size_t>(2 * m * v));
    std::set<std::tuple<bool, int, int>> seen;
    for (const auto& st : steps) seen.insert({st.forward, st.micro_batch, st.chunk});
    CHECK(seen.size() == static_cast<std::size_t>(2 * m * v));
    CHECK(forwards_before_first_backward(steps) == (p - s - 1) * 2 + (v - 1) * p + 1);
  }
  auto s0 = pipeline_schedule(p, 0, m, v);
  // Forward order: micro-batches 0-3 on chunk 0, then 0-3 on chunk 1, then 4-7 on chunk 0, ...
  CHECK(s0[0] == ScheduleStep{true, 0, 0});
  CHECK(s0[3] == ScheduleStep{true, 3, 0});
  CHECK(s0[4] == ScheduleStep{true, 0, 1});
  CHECK(s0[8] == ScheduleStep{true, 4, 0});
  // First backward is micro-batch 0 on the last chunk.
  CHECK(s0[11] == ScheduleStep{false, 0, 1});
  // m == p: all forwards first.
  CHECK(forwards_before_first_backward(pipeline_schedule(4, 3, 4, 2)) == 8);
}

TEST_CASE(
    "work: op graph has one F and B per micro-batch and layer, acyclic across ranks, FLOPs equal the closed "
    "form") {
  ModelSpec m = tiny_gpt();
  for (
      const char* text :
      {R"({"tp":2,"sequence_parallel":true,"pp":4,"dp":2,"micro_batch":2,"global_batch":16})",
       R"({"tp":2,"pp":2,"schedule":"interleaved","virtual_stages":2,"dp":2,"zero":1,"micro_batch":1,"global_batch":8,"recompute":"full"})",
       R"({"tp":2,"sequence_parallel":true,"cp":2,"dp":2,"zero":3,"micro_batch":1,"global_batch":4,"recompute":"selective"})",
       R"({"pp":4,"cp":2,"micro_batch":1,"global_batch":4,"overlap_grad_reduce":false,"bucket_params":100000})",
       // Uneven stages: 2 + 3 + 3 layers; the embedding and the loss counted as layers (4 + 4);
       // and model chunks with no transformer layer at all (the embedding's, the loss's).
       R"({"pp":3,"num_layers_in_first_pipeline_stage":2,"micro_batch":1,"global_batch":4})",
       R"({"pp":2,"dp":2,"zero":1,"overlap_param_gather":true,"account_for_embedding_in_pipeline_split":true,
               "account_for_loss_in_pipeline_split":true,"micro_batch":1,"global_batch":4,"bucket_params":100000})",
       R"({"pp":5,"schedule":"interleaved","virtual_stages":2,"account_for_embedding_in_pipeline_split":true,
               "account_for_loss_in_pipeline_split":true,"micro_batch":1,"global_batch":5})"}) {
    INFO(text);
    ParallelConfig p = cfg(m, text);
    OpGraph g = generate_op_graph(m, p);
    CHECK_NOTHROW(check_graph(g));
    CHECK(job_is_acyclic(g));
    const std::int64_t mb = p.micro_batches();
    RankLayout L(p);
    for (int r : g.ranks) {
      const int stage = L.coord(r).pp;
      std::int64_t layers = 0;
      for (int c = 0; c < p.virtual_stages; ++c) layers += stage_layers(m, p, stage, c).count();
      CHECK(static_cast<std::int64_t>(ops_named(g, r, "qkv").size()) ==
            layers * mb * (p.recompute == Recompute::full ? 2 : 1));
      CHECK(static_cast<std::int64_t>(ops_named(g, r, "qkv.bwd_input").size()) == layers * mb);
      CHECK(ops_named(g, r, "optimizer.adam").size() == 1);
    }
    const IterationFlops it = iteration_flops(m, p.global_batch, p.seq, p.recompute);
    CHECK(compute_flops(g) == approx(it.hardware).epsilon(1e-12));
  }
}

TEST_CASE("work: TP, PP and DP message sizes equal the closed forms") {
  ModelSpec m = tiny_gpt();
  const double b = 2, s = 128, h = 256, t = 2;
  ParallelConfig p = cfg(
      m,
      R"({"tp":2,"sequence_parallel":true,"pp":2,"dp":2,"micro_batch":2,"global_batch":8,"bucket_params":1000000000})");
  OpGraph g = generate_op_graph(m, p);
  for (const char* n : {"tp.all_gather.attn_in", "tp.reduce_scatter.attn_out", "tp.all_gather.mlp_in",
                        "tp.reduce_scatter.mlp_out"}) {
    auto ops = ops_named(g, 0, n);
    REQUIRE(!ops.empty());
    for (const Op* op : ops) CHECK(op->bytes == static_cast<std::uint64_t>(b * s * h * 2));
    CHECK(g.communicators[static_cast<std::size_t>(ops[0]->communicator)].ranks == std::vector<int>{0, 1});
  }
  // SP: PP messages are the sequence shard b*s*h*2/t.
  auto sends = ops_named(g, 0, "pp.send_activation");
  CHECK(sends.size() == 2);
  for (const Op* op : sends) CHECK(op->bytes == static_cast<std::uint64_t>(b * s * h * 2 / t));
  CHECK(sends[0]->peer == 4);
  // DP: one bucket (huge bucket size) holding every gradient of the stage, all-reduced in bf16 over dp ranks
  // {0, 2}.
  const ParamCount pc = count_params(m);
  auto dp = ops_named(g, 0, "dp.grad_bucket");
  REQUIRE(dp.size() == 1);
  CHECK(dp[0]->collective == Collective::all_reduce);
  // Megatron splits the GEMM weights and the column-parallel biases over TP but keeps whole copies
  // of the two LayerNorms (2h each) and the two row-parallel biases (h each): 12h^2 + 7h split,
  // 6h replicated per layer. The word embedding is split, the learned s x h position table is not.
  CHECK(static_cast<double>(pc.attention_per_layer + pc.dense_mlp_per_layer) == 12 * h * h + 13 * h);
  const double layer_on_rank = (12 * h * h + 7 * h) / t + 6 * h;
  const double embedding_on_rank = 1024 * h / t + s * h;
  const double stage0 = 4 * layer_on_rank + embedding_on_rank;
  CHECK(dp[0]->bytes == static_cast<std::uint64_t>(std::llround(2 * stage0)));
  CHECK(g.communicators[static_cast<std::size_t>(dp[0]->communicator)].ranks == std::vector<int>{0, 2});
  // Tied embeddings across stages 0 and 1: V*h/t gradient all-reduce between ranks 0 and 4.
  auto emb = ops_named(g, 0, "embedding.grad_all_reduce");
  REQUIRE(emb.size() == 1);
  CHECK(emb[0]->bytes == static_cast<std::uint64_t>(2 * 1024 * 256 / 2));
  CHECK(g.communicators[static_cast<std::size_t>(emb[0]->communicator)].ranks == std::vector<int>{0, 4});
  // Without SP: all-reduce of b*s*h*2 after attention and MLP; PP messages are still the 1/t slice
  // (Megatron's scatter/gather), all-gathered back to b*s*h*2 over the TP group after each receive.
  ParallelConfig q = cfg(m, R"({"tp":2,"pp":2,"dp":2,"zero":1,"micro_batch":2,"global_batch":8})");
  OpGraph g2 = generate_op_graph(m, q);
  for (const Op* op : ops_named(g2, 0, "tp.all_reduce.attn_out"))
    CHECK(op->bytes == static_cast<std::uint64_t>(b * s * h * 2));
  for (const Op* op : ops_named(g2, 0, "pp.send_activation"))
    CHECK(op->bytes == static_cast<std::uint64_t>(b * s * h * 2 / t));
  CHECK(ops_named(g2, 0, "pp.all_gather_activation").empty());  // stage 0 receives no activation
  const int stage1 = 4;                                         // rank of stage 1, tp 0, dp 0
  auto gathers = ops_named(g2, stage1, "pp.all_gather_activation");
  CHECK(gathers.size() == 2);  // one per micro-batch (8 / (2 x dp 2))
  for (const Op* op : gathers) CHECK(op->bytes == static_cast<std::uint64_t>(b * s * h * 2));
  CHECK(ops_named(g2, 0, "pp.all_gather_grad").size() == 2);
  CHECK(ops_named(g, stage1, "pp.all_gather_activation").empty());  // SP: nothing to gather
  // ZeRO-1: gradients reduce-scattered once per iteration, parameters all-gathered, same total bytes
  // (grads bf16, params bf16).
  double rs = 0, ag = 0;
  for (const Op* op : ops_named(g2, 0, "dp.grad_bucket")) {
    CHECK(op->collective == Collective::reduce_scatter);
    rs += static_cast<double>(op->bytes);
  }
  for (const Op* op : ops_named(g2, 0, "dp.param_gather")) ag += static_cast<double>(op->bytes);
  CHECK(rs == approx(2 * stage0).epsilon(1e-9));
  CHECK(ag == approx(rs));
  // ZeRO-2 keeps only its shard of the gradients, so each of the m = 8 / (2 x dp 2) = 2 micro-batches
  // reduce-scatters all of them (DeepSpeed stage 2); the parameters are gathered once after the step.
  ParallelConfig z2 = cfg(m, R"({"tp":2,"pp":1,"dp":2,"zero":2,"micro_batch":2,"global_batch":8})");
  OpGraph g3 = generate_op_graph(m, z2);
  CHECK(ops_named(g3, 0, "dp.grad_bucket").empty());
  double rs2 = 0, ag2 = 0;
  for (const Op& op : g3.ops) {
    if (op.rank != 0) continue;
    const std::string name = op.name;
    if (name.rfind("zero2.reduce_scatter", 0) == 0) {
      CHECK(op.collective == Collective::reduce_scatter);
      rs2 += static_cast<double>(op.bytes);
    }
    if (name == "dp.param_gather") ag2 += static_cast<double>(op.bytes);
  }
  const double all_params = 8 * layer_on_rank + embedding_on_rank + 2 * h;  // + the final LayerNorm
  CHECK(ag2 == approx(2 * all_params).epsilon(1e-6));
  CHECK(rs2 == approx(2 * 2 * all_params).epsilon(1e-6));
  // ZeRO-3 / FSDP: every micro-batch gathers all the bf16 weights it uses, forward and backward,
  // the embedding and the output layer (here the final norm: the output is the tied embedding)
  // included, and reduce-scatters all the gradients.
  ParallelConfig z3 = cfg(m, R"({"tp":2,"pp":1,"dp":2,"zero":3,"micro_batch":2,"global_batch":8})");
  OpGraph g4 = generate_op_graph(m, z3);
  double rs3 = 0, ag3 = 0;
  for (const Op& op : g4.ops) {
    if (op.rank != 0) continue;
    const std::string name = op.name;
    if (name.rfind("zero3.reduce_scatter", 0) == 0) rs3 += static_cast<double>(op.bytes);
    if (name.rfind("zero3.gather", 0) == 0) ag3 += static_cast<double>(op.bytes);
  }
  CHECK(ops_named(g4, 0, "zero3.gather_embedding").size() == 4);  // 2 micro-batches x (forward, backward)
  CHECK(ops_named(g4, 0, "zero3.reduce_scatter_embedding_grads").size() == 2);
  CHECK(rs3 == approx(2 * 2 * all_params).epsilon(1e-6));
  CHECK(ag3 == approx(2 * 2 * 2 * all_params).epsilon(1e-6));
  // Adam updates every parameter the rank holds, the embedding's included (12 FLOPs each): stage 0
  // without ZeRO, and 1/dp of all of them under ZeRO-3.
  auto adam = ops_named(g, 0, "optimizer.adam");
  REQUIRE(adam.size() == 1);
  CHECK(adam[0]->flops == approx(12 * stage0).epsilon(1e-9));
  auto adam3 = ops_named(g4, 0, "optimizer.adam");
  REQUIRE(adam3.size() == 1);
  CHECK(adam3[0]->flops == approx(12 * all_params / 2).epsilon(1e-9));
  // Sequence parallelism: the gradients of the whole copies (norms, row-parallel biases: 6h per
  // layer, and the final norm on the last stage) are all-reduced over the TP group once, in bf16.
  auto sp_ar0 = ops_named(g, 0, "tp.all_reduce.sequence_parallel_grads");
  auto sp_ar1 = ops_named(g, stage1, "tp.all_reduce.sequence_parallel_grads");
  REQUIRE(sp_ar0.size() == 1);
  REQUIRE(sp_ar1.size() == 1);
  CHECK(sp_ar0[0]->bytes == static_cast<std::uint64_t>(2 * 4 * 6 * h));
  CHECK(sp_ar1[0]->bytes == static_cast<std::uint64_t>(2 * (4 * 6 * h + 2 * h)));
  CHECK(g.communicators[static_cast<std::size_t>(sp_ar0[0]->communicator)].ranks == std::vector<int>{0, 1});
  CHECK(ops_named(g2, 0, "tp.all_reduce.sequence_parallel_grads").empty());  // without SP the copies agree
  // And ZeRO-2 with pipeline stages is refused, as DeepSpeed does.
  CHECK_THROWS_WITH_AS(cfg(m, R"({"tp":2,"pp":2,"dp":2,"zero":2,"micro_batch":2,"global_batch":8})"),
                       doctest::Contains("ZeRO-2 together with pipeline parallelism"), commstack::InputError);
}

TEST_CASE("work: CP ring exchanges K/V chunks and EP all-to-all moves top-k token copies") {
  ModelSpec m = tiny_moe();  // h 128, 4 heads, 2 kv heads (d 32), 4 experts top-2
  ParallelConfig p =
      cfg(m, R"({"tp":2,"sequence_parallel":true,"cp":2,"dp":2,"ep":4,"micro_batch":1,"global_batch":2})");
  OpGraph g = generate_op_graph(m, p);
  CHECK_NOTHROW(check_graph(g));
  CHECK(job_is_acyclic(g));
  const double sl = 64.0 / 2, kvw = 2 * 32, t = 2;
  // Forward: cp-1 = 1 step per layer of K and V for this rank's tokens: b*(s/cp)*2*kv*d/t*2 bytes.
  auto fwd = ops_named(g, 0, "cp.send_kv");
  std::size_t forward_steps = 0;
  for (const Op* op : fwd) {
    if (op->phase == Phase::forward) {
      ++forward_steps;
      CHECK(op->bytes == static_cast<std::uint64_t>(sl * 2 * kvw / t * 2));
    } else {
      CHECK(op->bytes == static_cast<std::uint64_t>(2 * sl * 2 * kvw / t * 2));  // K/V and their gradients
    }
  }
  CHECK(forward_steps == 4);  // 4 layers x 1 micro-batch x (cp - 1)
  RankLayout L(p);
  CHECK(fwd[0]->peer == L.group_of(GroupKind::cp, 0)[1]);
  // EP: dispatch = tokens of this rank (b*s/cp/t) x top_k x h x 2 bytes, on 4 ranks with the same tp rank.
  auto a2a = ops_named(g, 0, "ep.dispatch");
  CHECK(a2a.size() == 3);  // layers 1..3 are MoE
  for (const Op* op : a2a) CHECK(op->bytes == static_cast<std::uint64_t>(sl / t * 2 * 128 * 2));
  CHECK(g.communicators[static_cast<std::size_t>(a2a[0]->communicator)].ranks ==
        L.group_of(GroupKind::ep, 0));
  CHECK(g.communicators[static_cast<std::size_t>(a2a[0]->communicator)].ranks.size() == 4);
  // Expert TP = tp = 2 (Megatron's default): the TP pair all-gathers what the all-to-all brought
  // (2 x its bytes) before the experts and reduce-scatters it after; the backward mirrors both.
  const std::uint64_t a2a_bytes = a2a[0]->bytes;
  for (const auto& [name, op_kind] : {std::pair{"etp.dispatch_gather", Collective::all_gather},
                                      std::pair{"etp.combine_scatter", Collective::reduce_scatter},
                                      std::pair{"etp.combine_scatter.bwd", Collective::all_gather},
                                      std::pair{"etp.dispatch_gather.bwd", Collective::reduce_scatter}}) {
    auto ops = ops_named(g, 0, name);
    CHECK(ops.size() == 3);
    for (const Op* op : ops) {
      CHECK(op->collective == op_kind);
      CHECK(op->bytes == 2 * a2a_bytes);
      CHECK(g.communicators[static_cast<std::size_t>(op->communicator)].ranks ==
            L.group_of(GroupKind::tp, 0));
    }
  }
  // The shared expert is an MLP over the TP group (Megatron's SharedExpertMLP): SP gathers its input
  // and reduce-scatters its output, b*(s/cp)*h*2 bytes each; fc1 (SwiGLU gate + up) is
  // tokens x h x 2*256/t.
  auto shared_fc1 = ops_named(g, 0, "shared_experts_fc1");
  REQUIRE(shared_fc1.size() == 3);
  CHECK(shared_fc1[0]->flops == approx(2 * sl * 128 * 2 * 256 / t).epsilon(1e-12));
  for (const char* name :
       {"tp.all_gather.shared_experts_in", "tp.reduce_scatter.shared_experts_out",
        "tp.all_gather.shared_experts_out_grad", "tp.reduce_scatter.shared_experts_in_grad"}) {
    auto ops = ops_named(g, 0, name);
    CHECK(ops.size() >= 3);
    for (const Op* op : ops) {
      CHECK(op->bytes == static_cast<std::uint64_t>(sl * 128 * 2));
      CHECK(g.communicators[static_cast<std::size_t>(op->communicator)].ranks ==
            L.group_of(GroupKind::tp, 0));
    }
  }
  // FLOPs over all ranks still equal the whole-model count.
  CHECK(compute_flops(g) == approx(iteration_flops(m, 2, 64, Recompute::none).hardware).epsilon(1e-12));
  // Whole experts (etp 1): no expert-TP collectives, the same FLOPs.
  ParallelConfig whole = cfg(
      m,
      R"({"tp":2,"sequence_parallel":true,"cp":2,"dp":2,"ep":4,"etp":1,"micro_batch":1,"global_batch":2})");
  OpGraph g1 = generate_op_graph(m, whole);
  CHECK(ops_named(g1, 0, "etp.dispatch_gather").empty());
  CHECK(ops_named(g1, 0, "ep.dispatch").size() == 3);
  CHECK(compute_flops(g1) == approx(compute_flops(g)).epsilon(1e-12));
}

TEST_CASE("work: the all-gather token dispatcher moves every token of the expert-TP x EP group") {
  ModelSpec m = tiny_moe();  // h 128, 4 experts top-2 of width 256 + 1 shared, SwiGLU, layers 1-3 MoE
  const char* base = R"({"tp":2,"sequence_parallel":true,"dp":4,"ep":4,"micro_batch":1,"global_batch":4})";
  const ParallelConfig a2a = cfg(m, base);
  ParallelConfig ag = a2a;
  ag.moe_token_dispatcher = TokenDispatcher::allgather;
  const OpGraph ga = generate_op_graph(m, a2a);
  const OpGraph g = generate_op_graph(m, ag);
  CHECK_NOTHROW(check_graph(g));
  REQUIRE(job_is_acyclic(g));
  // Each rank holds 64 / tp = 32 tokens; the group is etp (= tp = 2) x ep 4 = 8 ranks: 256 tokens.
  const double gathered = 32.0 * 2 * 4, h = 128, experts = 4;
  const RankLayout L(ag);
  const std::vector<int> group = L.group_of(GroupKind::expert_tp_ep, 0);
  CHECK(group.size() == 8);
  // The union of the expert-TP groups of this rank's EP group.
  std::vector<int> expect;
  for (int r : L.group_of(GroupKind::ep, 0))
    for (int q : L.group_of(GroupKind::expert_tp, r)) expect.push_back(q);
  std::sort(expect.begin(), expect.end());
  CHECK(group == expect);
  struct Want {
    const char* name;
    Collective kind;
    double bytes;
    Phase phase;
  };
  for (const Want& w :
       {Want{"ep.dispatch_gather_map", Collective::all_gather, gathered * experts, Phase::forward},
        Want{"ep.dispatch_gather_probs", Collective::all_gather, gathered * experts * 2, Phase::forward},
        Want{"ep.dispatch_gather", Collective::all_gather, gathered * h * 2, Phase::forward},
        Want{"ep.combine_scatter", Collective::reduce_scatter, gathered * h * 2, Phase::forward},
        Want{"ep.combine_scatter.bwd", Collective::all_gather, gathered * h * 2, Phase::backward},
        Want{"ep.dispatch_gather.bwd", Collective::reduce_scatter, gathered * h * 2, Phase::backward},
        Want{"ep.dispatch_gather_probs.bwd", Collective::reduce_scatter, gathered * experts * 2,
             Phase::backward}}) {
    CAPTURE(w.name);
    const auto ops = ops_named(g, 0, w.name);
    CHECK(ops.size() == 3);  // one per MoE layer
    for (const Op* op : ops) {
      CHECK(op->collective == w.kind);
      CHECK(static_cast<double>(op->bytes) == w.bytes);
      CHECK(op->phase == w.phase);
      CHECK(op->stream == Stream::ep);
      CHECK(g.communicators[static_cast<std::size_t>(op->communicator)].ranks == group);
    }
  }
  // Neither the all-to-alls nor the expert-TP collectives run; the experts' work is the same.
  for (const char* gone : {"ep.dispatch", "ep.combine", "etp.dispatch_gather", "etp.combine_scatter"})
    CHECK(ops_named(g, 0, gone).empty());
  CHECK(ops_named(ga, 0, "ep.dispatch").size() == 3);
  for (const char* same : {"moe_experts", "moe_experts.bwd", "moe_router", "moe_router.bwd"}) {
    CAPTURE(same);
    const auto x = ops_named(ga, 0, same), y = ops_named(g, 0, same);
    REQUIRE(x.size() == y.size());
    for (std::size_t i = 0; i < x.size(); ++i) {
      CHECK(x[i]->flops == y[i]->flops);
      CHECK(x[i]->mem_bytes == y[i]->mem_bytes);
    }
  }
  // The outputs scattered back into the gathered order, and the permute's gradient, each write a
  // zero-filled tensor of every gathered token.
  for (const char* fill : {"moe_unpermute", "moe_permute.bwd"}) {
    const auto ops = ops_named(g, 0, fill);
    CHECK(ops.size() == 3);
    for (const Op* op : ops) CHECK(op->mem_bytes == gathered * h * 2);
    CHECK(ops_named(ga, 0, fill).empty());
  }
  // Whole experts (etp 1): the group is the EP group, 4 x 32 tokens.
  ParallelConfig ag1 = cfg(m, R"({"tp":2,"sequence_parallel":true,"dp":4,"ep":4,"etp":1,"micro_batch":1,
    "global_batch":4,"moe_token_dispatcher":"allgather"})");
  const OpGraph g1 = generate_op_graph(m, ag1);
  const auto d1 = ops_named(g1, 0, "ep.dispatch_gather");
  REQUIRE(d1.size() == 3);
  CHECK(static_cast<double>(d1[0]->bytes) == 32.0 * 4 * h * 2);
  CHECK(g1.communicators[static_cast<std::size_t>(d1[0]->communicator)].ranks ==
        RankLayout(ag1).group_of(GroupKind::ep, 0));
  // No expert TP and no EP: nothing to gather (Megatron skips the collectives).
  const OpGraph g0 = generate_op_graph(
      m,
      cfg(m,
          R"({"tp":1,"dp":2,"ep":1,"micro_batch":1,"global_batch":2,"moe_token_dispatcher":"allgather"})"));
  for (const Op& op : g0.ops) CHECK(op.stream != Stream::ep);
  CHECK(ops_named(g0, 0, "moe_unpermute").size() == 3);
  // Refused: Megatron's flex dispatcher (not modelled), a dense model, and the shared-expert overlap,
  // which Megatron allows only with the all-to-all.
  CHECK_THROWS_WITH_AS(
      cfg(m, R"({"tp":1,"dp":2,"micro_batch":1,"global_batch":2,"moe_token_dispatcher":"flex"})"),
      doctest::Contains("not modelled"), commstack::InputError);
  CHECK_THROWS_WITH_AS(
      cfg(tiny_gpt(),
          R"({"tp":1,"dp":2,"micro_batch":1,"global_batch":2,"moe_token_dispatcher":"allgather"})"),
      doctest::Contains("has no experts"), commstack::InputError);
  CHECK_THROWS_WITH_AS(cfg(m, R"({"tp":1,"dp":2,"ep":2,"micro_batch":1,"global_batch":2,
    "moe_token_dispatcher":"allgather","moe_shared_expert_overlap":true})"),
                       doctest::Contains("cannot overlap the shared experts"), commstack::InputError);
}

TEST_CASE("work: 1F1B posts each stage-boundary receive at its schedule point and waits for its sends") {
  ModelSpec m = tiny_gpt();
  auto is_compute = [](const OpGraph& g, int id) {
    return g.ops[static_cast<std::size_t>(id)].kind == OpKind::compute;
  };
  // Megatron's 1F1B: send_forward_recv_backward after a forward, send_backward_recv_forward after
  // a backward, and a wait on every request before the next compute.
  OpGraph g = generate_op_graph(m, cfg(m, R"({"tp":1,"pp":2,"dp":1,"micro_batch":1,"global_batch":4})"));
  REQUIRE(job_is_acyclic(g));
  for (const char* name : {"pp.recv_grad", "pp.recv_activation"}) {
    const int rank = std::string(name) == "pp.recv_grad" ? 0 : 1;
    for (const Op* r : ops_named(g, rank, name)) {
      bool after_compute = false;
      for (int d : r->deps) after_compute = after_compute || is_compute(g, d);
      // Stage 1's first activation arrives before it has computed anything.
      CHECK((after_compute || (rank == 1 && r->micro_batch == 0)));
    }
  }
  for (const Op* sd : ops_named(g, 0, "pp.send_activation")) {
    bool waited = false;
    for (const Op& op : g.ops) {
      if (op.rank != 0 || op.kind != OpKind::compute || op.id < sd->id) continue;
      waited = std::find(op.deps.begin(), op.deps.end(), sd->id) != op.deps.end();
      break;  // the first compute after the send
    }
    const bool last_forward = sd->micro_batch == 3;  // followed by the optimizer's wait instead
    CHECK((waited || last_forward));
  }
  // The interleaved schedule keeps its receives posted ahead (overlap_p2p_comm).
  OpGraph gi = generate_op_graph(
      m,
      cfg(m,
          R"({"tp":1,"pp":2,"schedule":"interleaved","virtual_stages":2,"dp":1,"micro_batch":1,"global_batch":4})"));
  for (const Op* r : ops_named(gi, 0, "pp.recv_grad")) CHECK(r->deps.empty());
}

double total_bytes(const std::vector<const Op*>& ops) {
  double sum = 0;
  for (const Op* op : ops) sum += static_cast<double>(op->bytes);
  return sum;
}

TEST_CASE("work: --fp8-param-gather moves the GEMM weights' bytes of the parameter all-gathers as FP8") {
  ModelSpec m = tiny_gpt();  // h 256, a 8 (q = kv = 256), f 1024, GELU, 8 layers
  const char* base = R"({"tp":2,"pp":2,"dp":2,"zero":1,"precision":"fp8","micro_batch":1,"global_batch":8,
    "bucket_params":100000})";
  const ParallelConfig bf16_gather = cfg(m, base);
  ParallelConfig fp8_gather = bf16_gather;
  fp8_gather.fp8_param_gather = true;
  const OpGraph before = generate_op_graph(m, bf16_gather);
  const OpGraph after = generate_op_graph(m, fp8_gather);
  REQUIRE(job_is_acyclic(after));
  // Per layer and TP rank the matrices are QKV + projection (2 h (q + kv) = 4 h^2 here) and fc1 + fc2
  // (2 h f), split over TP 2: 393216 entries; each stage holds 4 layers, whose gathers lose 1 byte each.
  const double gemm_per_layer = (2.0 * 256 * 256 + 2.0 * 256 * 256 + 2.0 * 256 * 1024) / 2;
  CHECK(gemm_per_layer == 393216);
  for (int rank : {0, 4}) {
    CAPTURE(rank);
    const auto a = ops_named(before, rank, "dp.param_gather");
    const auto b = ops_named(after, rank, "dp.param_gather");
    REQUIRE(a.size() > 1);
    REQUIRE(b.size() == a.size());
    CHECK(total_bytes(a) - total_bytes(b) == doctest::Approx(4 * gemm_per_layer).epsilon(1e-12));
    // The gradients still reduce in bf16.
    CHECK(total_bytes(ops_named(after, rank, "dp.grad_bucket")) ==
          total_bytes(ops_named(before, rank, "dp.grad_bucket")));
    // One amax per FP8 weight (QKV, projection, fc1, fc2 of each of the 4 layers), fp32, all-reduced
    // over DP after the step; the parameter gathers wait for it.
    const auto amax = ops_named(after, rank, "dp.fp8_amax_all_reduce");
    REQUIRE(amax.size() == 1);
    CHECK(amax[0]->bytes == 4 * 16);
    CHECK(amax[0]->collective == Collective::all_reduce);
    for (const Op* g : b) CHECK(std::find(g->deps.begin(), g->deps.end(), amax[0]->id) != g->deps.end());
    CHECK(ops_named(before, rank, "dp.fp8_amax_all_reduce").empty());
  }
  // ZeRO-3 / FSDP: each layer's gather moves 2 bytes per parameter less its matrices' entries.
  const char* fsdp = R"({"tp":2,"pp":1,"dp":4,"zero":3,"precision":"fp8","micro_batch":1,"global_batch":8})";
  ParallelConfig z3 = cfg(m, fsdp);
  ParallelConfig z3_fp8 = z3;
  z3_fp8.fp8_param_gather = true;
  const RankParams held(m, 2, 1, 1, 2);
  const OpGraph graph3 = generate_op_graph(m, z3);
  const OpGraph graph3_fp8 = generate_op_graph(m, z3_fp8);
  const auto g3 = ops_named(graph3, 0, "zero3.gather_weights");
  const auto g3_fp8 = ops_named(graph3_fp8, 0, "zero3.gather_weights");
  REQUIRE(!g3.empty());
  REQUIRE(g3.size() == g3_fp8.size());
  for (std::size_t i = 0; i < g3.size(); ++i) {
    CHECK(static_cast<double>(g3[i]->bytes) == doctest::Approx(2 * held.layer_dense(0)).epsilon(1e-12));
    CHECK(static_cast<double>(g3_fp8[i]->bytes) ==
          doctest::Approx(2 * held.layer_dense(0) - gemm_per_layer).epsilon(1e-12));
  }
  // Megatron's rules: FP8 weights need FP8 training and a sharded parameter all-gather.
  CHECK_THROWS_WITH_AS(
      cfg(m, R"({"tp":2,"dp":2,"zero":1,"fp8_param_gather":true,"micro_batch":1,"global_batch":8})"),
      doctest::Contains("fp8_param_gather"), commstack::InputError);
  CHECK_THROWS_WITH_AS(
      cfg(m,
          R"({"tp":2,"dp":2,"zero":0,"precision":"fp8","fp8_param_gather":true,"micro_batch":1,"global_batch":8})"),
      doctest::Contains("zero is 0"), commstack::InputError);
}

TEST_CASE("work: --fp8-param-gather on a MoE model: the experts' matrices and their amaxes over expert DP") {
  ModelSpec m = tiny_moe();  // h 128, 4 layers (first dense), 4 experts of width 256 + 1 shared, SwiGLU
  const char* base = R"({"tp":1,"pp":1,"dp":4,"ep":2,"zero":1,"precision":"fp8","micro_batch":1,
    "global_batch":8})";
  const ParallelConfig p = cfg(m, base);
  ParallelConfig q = p;
  q.fp8_param_gather = true;
  const OpGraph before = generate_op_graph(m, p);
  const OpGraph after = generate_op_graph(m, q);
  REQUIRE(job_is_acyclic(after));
  // 3 MoE layers x 2 local experts x 3 h f_e matrices entries, 1 byte less each.
  const double expert_gemm = 3 * 2 * 3.0 * 128 * 256;
  CHECK(total_bytes(ops_named(before, 0, "dp.expert_param_gather")) -
            total_bytes(ops_named(after, 0, "dp.expert_param_gather")) ==
        doctest::Approx(expert_gemm).epsilon(1e-12));
  // Dense matrices: attention 2 h (q + kv) = 2*128*(128 + 64); the dense layer's MLP 3 h f; each MoE
  // layer's shared expert 3 h f_e.
  const double dense_gemm = 4 * 2.0 * 128 * (128 + 64) + 3.0 * 128 * 512 + 3 * 3.0 * 128 * 256;
  CHECK(total_bytes(ops_named(before, 0, "dp.param_gather")) -
            total_bytes(ops_named(after, 0, "dp.param_gather")) ==
        doctest::Approx(dense_gemm).epsilon(1e-12));
  // Amaxes: 4 per layer (QKV, projection, fc1, fc2 or the shared expert's) over DP; 2 per local
  // expert over expert DP (tp*dp/ep = 2 ranks).
  const auto dense_amax = ops_named(after, 0, "dp.fp8_amax_all_reduce");
  const auto expert_amax = ops_named(after, 0, "dp.expert_fp8_amax_all_reduce");
  REQUIRE(dense_amax.size() == 1);
  REQUIRE(expert_amax.size() == 1);
  CHECK(dense_amax[0]->bytes == 4 * 16);
  CHECK(expert_amax[0]->bytes == 4 * 3 * 2 * 2);
}

TEST_CASE("work: --overlap-param-gather moves ZeRO-1's parameter all-gathers into the next forward") {
  ModelSpec m = tiny_gpt();
  const char* base =
      R"({"tp":2,"pp":2,"dp":2,"zero":1,"micro_batch":1,"global_batch":8,"bucket_params":1000000})";
  OpGraph after = generate_op_graph(m, cfg(m, base));
  ParallelConfig q = cfg(m, base);
  q.overlap_param_gather = true;
  OpGraph during = generate_op_graph(m, q);
  REQUIRE(job_is_acyclic(during));
  for (int rank : {0, 4}) {
    CAPTURE(rank);
    auto a = ops_named(after, rank, "dp.param_gather");
    auto d = ops_named(during, rank, "dp.param_gather");
    REQUIRE(a.size() > 1);  // several buckets
    REQUIRE(d.size() == a.size());
    double bytes_a = 0, bytes_d = 0;
    for (const Op* op : a) bytes_a += static_cast<double>(op->bytes);
    for (const Op* op : d) {
      bytes_d += static_cast<double>(op->bytes);
      CHECK(op->phase == Phase::forward);
    }
    CHECK(bytes_d == bytes_a);  // the same gathers, at another time
    // Each bucket's gather is waited for by a forward compute of micro-batch 0.
    for (const Op* gather : d) {
      bool waited = false;
      for (const Op& op : during.ops) {
        if (op.rank != rank || op.kind != OpKind::compute || op.phase != Phase::forward ||
            op.micro_batch != 0)
          continue;
        waited = waited || std::find(op.deps.begin(), op.deps.end(), gather->id) != op.deps.end();
      }
      CHECK(waited);
    }
  }
  // Megatron asserts the distributed optimizer.
  CHECK_THROWS_WITH_AS(
      cfg(m,
          R"({"tp":2,"pp":2,"dp":2,"zero":0,"overlap_param_gather":true,"micro_batch":1,"global_batch":8})"),
      doctest::Contains("overlap_param_gather"), commstack::InputError);
}

TEST_CASE("work: op graph generation is deterministic and representatives cover every stage") {
  ModelSpec m = tiny_gpt();
  ParallelConfig p = cfg(
      m,
      R"({"tp":2,"sequence_parallel":true,"pp":4,"schedule":"interleaved","virtual_stages":2,"dp":2,"micro_batch":1,"global_batch":8})");
  const std::string a = to_json(generate_op_graph(m, p)).dump();
  const std::string b = to_json(generate_op_graph(m, p)).dump();
  CHECK(a == b);
  RankLayout L(p);
  GraphOptions o;
  o.ranks = L.representative_ranks();
  OpGraph g = generate_op_graph(m, p, o);
  CHECK(g.ranks == std::vector<int>{0, 4, 8, 12});
  CHECK_NOTHROW(check_graph(g));
  // Each representative does 1/(tp*dp) of its stage's work: 4 of them = 1/4 of the total.
  CHECK(compute_flops(g) * 4 == approx(iteration_flops(m, 8, 128, Recompute::none).hardware).epsilon(1e-12));
}

TEST_CASE("work: the whole-job cycle check catches a send/recv deadlock") {
  // Two ranks that each wait for the other's message before sending their own.
  OpGraph g;
  g.world = 2;
  g.ranks = {0, 1};
  auto add = [&](int rank, OpKind kind, int peer, std::int64_t tag, std::vector<int> deps) {
    Op op;
    op.id = static_cast<int>(g.ops.size());
    op.rank = rank;
    op.kind = kind;
    op.stream = Stream::pp;
    op.peer = peer;
    op.tag = tag;
    op.deps = std::move(deps);
    g.ops.push_back(op);
    return op.id;
  };
  int r0 = add(0, OpKind::recv, 1, 1, {});
  add(0, OpKind::send, 1, 2, {r0});
  int r1 = add(1, OpKind::recv, 0, 2, {});
  add(1, OpKind::send, 0, 1, {r1});
  CHECK_NOTHROW(check_graph(g));
  CHECK_FALSE(job_is_acyclic(g));
}

TEST_CASE(
    "work: multi-token prediction runs on the last stage, FLOPs and message sizes equal the closed forms") {
  // tiny-moe with two MTP depths: each depth is an MoE layer (the last decoder layer's kind), its
  // 2h -> h projection and one more pass through the output layer.
  ModelSpec m = tiny_moe();
  m.mtp_layers = 2;
  const double b = 2, s = 64, h = 128, t = 2, V = 512;
  for (
      const char* text :
      {R"({"tp":2,"sequence_parallel":true,"pp":2,"ep":2,"dp":2,"zero":1,"micro_batch":2,"global_batch":8})",
       R"({"tp":2,"sequence_parallel":true,"pp":1,"ep":2,"dp":2,"micro_batch":2,"global_batch":8,"recompute":"full"})",
       R"({"tp":2,"sequence_parallel":true,"pp":1,"ep":2,"dp":2,"zero":3,"micro_batch":2,"global_batch":8})",
       R"({"tp":2,"sequence_parallel":true,"pp":2,"ep":2,"dp":2,"zero":1,"micro_batch":2,"global_batch":8,
            "pipeline_model_parallel_layout":"Et|t|t|tmmL"})"}) {
    INFO(text);
    ParallelConfig p = cfg(m, text);
    OpGraph g = generate_op_graph(m, p);
    CHECK_NOTHROW(check_graph(g));
    CHECK(job_is_acyclic(g));
    const IterationFlops it = iteration_flops(m, p.global_batch, p.seq, p.recompute);
    CHECK(compute_flops(g) == approx(it.hardware).epsilon(1e-12));
    const std::int64_t mb = p.micro_batches();
    RankLayout L(p);
    const bool sp = p.sequence_parallel;
    const std::size_t passes = p.recompute == Recompute::full ? 2 : 1;  // the checkpoint re-runs the block
    for (int r : g.ranks) {
      const bool last = L.coord(r).pp == p.pp - 1;
      CHECK(ops_named(g, r, "mtp.eh_proj").size() == (last ? passes * 2 * static_cast<std::size_t>(mb) : 0));
      CHECK(static_cast<std::int64_t>(ops_named(g, r, "logits").size()) == (last ? 3 * mb : 0));
      CHECK(static_cast<std::int64_t>(ops_named(g, r, "logits.bwd").size()) == (last ? 3 * mb : 0));
      if (!last) continue;
      // The projection's input is the 2h-wide concatenation: SP gathers it (forward, and again for
      // the weight gradient) and reduce-scatters its gradient; its output is gathered over TP.
      for (const Op* op : ops_named(g, r, "tp.all_gather.mtp_eh_proj_in"))
        CHECK(op->bytes == static_cast<std::uint64_t>(b * s * 2 * h * 2));
      CHECK(ops_named(g, r, "tp.all_gather.mtp_eh_proj_in").size() ==
            (passes + 1) * 2 * static_cast<std::size_t>(mb));
      for (const Op* op : ops_named(
               g, r, sp ? "tp.reduce_scatter.mtp_eh_proj_in_grad" : "tp.all_reduce.mtp_eh_proj_in_grad"))
        CHECK(op->bytes == static_cast<std::uint64_t>(b * s * 2 * h * 2));
      for (const Op* op : ops_named(g, r, "tp.all_gather.mtp_eh_proj_out"))
        CHECK(op->bytes == static_cast<std::uint64_t>(b * s * h * 2));
      CHECK(ops_named(g, r, "tp.all_gather.mtp_eh_proj_out").size() ==
            passes * 2 * static_cast<std::size_t>(mb));
      for (const Op* op : ops_named(g, r, "mtp.eh_proj"))
        CHECK(op->flops == approx(2 * b * s * 2 * h * h / t).epsilon(1e-12));
      // With pp > 1 the last stage holds an embedding copy for the MTP layers and sums its
      // gradient with the first stage's (untied embeddings: no such all-reduce without MTP).
      CHECK(ops_named(g, r, "embedding.grad_all_reduce").size() == (p.pp > 1 ? 1u : 0u));
      for (const Op* op : ops_named(g, r, "embedding.grad_all_reduce"))
        CHECK(op->bytes == static_cast<std::uint64_t>(2 * V * h / t));
    }
  }
  // A dense model without SP: the projection's input gradient is all-reduced, nothing gathers its
  // input; with tied embeddings the last stage's output matrix is the MTP embedding, no copy.
  {
    ModelSpec gpt = tiny_gpt();
    gpt.mtp_layers = 1;
    ParallelConfig q = cfg(gpt, R"({"tp":2,"pp":2,"dp":2,"micro_batch":2,"global_batch":8})");
    OpGraph g = generate_op_graph(gpt, q);
    CHECK(job_is_acyclic(g));
    CHECK(compute_flops(g) ==
          approx(iteration_flops(gpt, q.global_batch, q.seq, q.recompute).hardware).epsilon(1e-12));
    const int last_rank = RankLayout(q).rank({0, 0, 0, 1, 0, 0, 0});
    CHECK(ops_named(g, last_rank, "tp.all_gather.mtp_eh_proj_in").empty());
    CHECK(ops_named(g, last_rank, "tp.all_reduce.mtp_eh_proj_in_grad").size() == 2);
    for (const Op* op : ops_named(g, last_rank, "tp.all_reduce.mtp_eh_proj_in_grad"))
      CHECK(op->bytes == static_cast<std::uint64_t>(2 * 128 * 2 * 256 * 2));
    CHECK(RankParams(gpt, 2, 2, 1, 2).mtp_embedding_copy() == 0);
  }
  // The last stage's parameters: its decoder layers, the output layer, the embedding copy and the
  // MTP layers (an MoE layer each plus 2h^2/t projection and three whole norms); the optimizer
  // updates all of them (ZeRO-1 shard over dp 2).
  ParallelConfig p = cfg(
      m,
      R"({"tp":2,"sequence_parallel":true,"pp":2,"ep":2,"dp":2,"zero":1,"micro_batch":2,"global_batch":8})");
  const RankParams held(m, 2, 2, 2, 2);
  m.mtp_layers = 0;
  const RankParams no_mtp(m, 2, 2, 2, 2);
  m.mtp_layers = 2;
  CHECK(held.layer_dense(4) == approx(no_mtp.layer_dense(3) + 2 * h * h / t + 3 * h).epsilon(1e-12));
  CHECK(held.layer_expert(4) == no_mtp.layer_expert(3));
  CHECK(held.layer_tp_replicated(4) == no_mtp.layer_tp_replicated(3) + 3 * h);
  CHECK(held.mtp_embedding_copy() == V * h / t);
  OpGraph g = generate_op_graph(m, p);
  RankLayout L(p);
  for (int r : g.ranks) {
    if (L.coord(r).pp != 1) continue;
    double dense = held.output() + held.mtp_embedding_copy(), expert = 0;
    for (std::int64_t l = 2; l < 6; ++l) {
      dense += held.layer_dense(l);
      expert += held.layer_expert(l);
    }
    const Op* adam = ops_named(g, r, "optimizer.adam").at(0);
    CHECK(adam->flops == approx(12 * (dense / 2 + expert / p.expert_dp())).epsilon(1e-12));
  }
}
