// A pipeline's options as a schedule (pipeline_request.hpp).
#include "pipeline_request.hpp"

#include <algorithm>

#include <weft/exec/moe_model.hpp>
#include <weft/generators/registry.hpp>

weft::ampipe_layout weft::cli::ampipe_of(const pipeline_args& p, pipeline_use use,
                                         std::ostream* warnings) {
  const weft::exec::moe_config demo = weft::exec::demo_config();
  const int ep = use.ep == 0 ? 2 : use.ep;
  weft::ampipe_layout lay = weft::resolve({.seq = use.demo_model ? demo.tokens : 0,
                                           .local_experts = std::max(1, demo.experts / ep),
                                           .degree = p.ampipe_degree,
                                           .tp_sp_overlap = p.tp_sp_overlap,
                                           .pipe_experts = p.pipe_experts(),
                                           .multi_data = p.multi_data,
                                           .multi_stream = p.multi_stream});
  if (warnings && !lay.warning.empty()) *warnings << lay.warning << "\n";
  return lay;
}

weft::p2p_options weft::cli::p2p_of(const pipeline_args& p) {
  return {.megatron = p.p2p == p2p_mode::megatron,
          .blocking = p.p2p == p2p_mode::blocking,
          .overlap_p2p = p.overlap_p2p,
          .multi_stream = p.p2p_multi_stream,
          .log_allreduce = p.log_allreduce,
          .async_log_allreduce = p.async_log_allreduce};
}

weft::schedule weft::cli::schedule_of(const pipeline_args& p, const std::string& name,
                                      pipeline_use use, std::ostream* warnings) {
  // PyTorch's CSV is the pipeline-level view: there fb-overlap shows as OVERLAP_F_B cells, each
  // expanded per layer when the schedule runs with MoE sub-stages.
  const bool sub_stages = p.moe || p.shared_expert || (p.fb_overlap && !use.csv);
  const weft::stage_set stages = !sub_stages       ? weft::stage_set::whole_block()
                                 : p.shared_expert ? weft::stage_set::moe_with_shared()
                                                   : weft::stage_set::moe();
  const weft::ampipe_layout lay = ampipe_of(p, use, warnings);
  weft::overlap_options overlap =
      p.fb_overlap ? weft::overlap_options::all() : weft::overlap_options::none();
  overlap.pipeline_splits = lay.overlap.pipeline_splits;
  overlap.multi_stream_all_to_all = lay.overlap.multi_stream_all_to_all;
  weft::generator_args a;
  a.ranks = p.pp;
  a.micro = p.micro;
  a.layers = p.layers;
  a.stages = stages;
  a.transfers = p.transfers;
  a.overlap = overlap;
  a.splits = lay.splits;
  a.pieces = lay.pieces;
  a.p2p = p2p_of(p);
  a.chunks = p.chunks;
  a.extra_warmup = p.fb_overlap;  // fb-overlap on VPP: MindSpeed's extra warm-up micro-batch
  a.nanopipe = p.nanopipe;
  return weft::generate(name, a);
}
