// A request's pipeline as a schedule (pipeline_request.hpp).
#include "pipeline_request.hpp"

#include <algorithm>

#include <weft/exec/moe_model.hpp>
#include <weft/generators/registry.hpp>

weft::ampipe_layout weft::cli::ampipe_of(const request& q, std::ostream* warnings) {
  const weft::exec::moe_config demo = weft::exec::demo_config();
  const int ep = q.ep == 0 ? 2 : q.ep;
  weft::ampipe_layout lay = weft::resolve({.seq = q.command == "run" ? demo.tokens : 0,
                                           .local_experts = std::max(1, demo.experts / ep),
                                           .degree = q.degree(),
                                           .tp_sp_overlap = q.tp_sp_overlap,
                                           .pipe_experts = q.pipe_experts(),
                                           .multi_data = q.multi_data,
                                           .multi_stream = q.multi_stream});
  if (warnings && !lay.warning.empty()) *warnings << lay.warning << "\n";
  return lay;
}

weft::p2p_options weft::cli::p2p_of(const request& q) {
  return {.megatron = q.p2p == "megatron",
          .blocking = q.p2p == "blocking",
          .overlap_p2p = q.overlap_p2p,
          .multi_stream = q.p2p_multi_stream,
          .log_allreduce = q.log_allreduce,
          .async_log_allreduce = q.async_log_allreduce};
}

weft::schedule weft::cli::schedule_of(const request& q, const std::string& name,
                                      std::ostream* warnings) {
  // PyTorch's CSV is the pipeline-level view: there fb-overlap shows as OVERLAP_F_B cells, each
  // expanded per layer when the schedule runs with MoE sub-stages.
  const bool sub_stages = q.moe || q.shared_expert || (q.fb_overlap && q.format != "csv");
  const weft::stage_set stages = !sub_stages       ? weft::stage_set::whole_block()
                                 : q.shared_expert ? weft::stage_set::moe_with_shared()
                                                   : weft::stage_set::moe();
  const weft::ampipe_layout lay = ampipe_of(q, warnings);
  weft::overlap_options overlap =
      q.fb_overlap ? weft::overlap_options::all() : weft::overlap_options::none();
  overlap.pipeline_splits = lay.overlap.pipeline_splits;
  overlap.multi_stream_all_to_all = lay.overlap.multi_stream_all_to_all;
  weft::generator_args a;
  a.ranks = q.pp;
  a.micro = q.micro;
  a.layers = q.layers;
  a.stages = stages;
  a.transfers = q.transfers;
  a.overlap = overlap;
  a.splits = lay.splits;
  a.pieces = lay.pieces;
  a.p2p = p2p_of(q);
  a.chunks = q.chunks;
  a.extra_warmup = q.fb_overlap;  // fb-overlap on VPP: the seed's extra warm-up micro-batch
  a.nanopipe = q.nanopipe;
  return weft::generate(name, a);
}
