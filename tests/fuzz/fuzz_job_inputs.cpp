// libFuzzer harness: what a user brings to plan a job — a Hugging Face config.json, a Megatron
// pipeline layout, a cluster file, a job file, torchtitan's TOML job. The first byte picks the
// reader (modulo 5: config.json, layout — whose next two bytes are the pipeline ranks and the
// decoder layers —, cluster, job or torchtitan's job on 64 devices of a 32-layer model).
// Each must return something that holds together, or refuse with a config_error; any other
// exception, a crash or a hang is a finding.
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <string_view>

#include <weft/core/error.hpp>
#include <weft/plan/cluster_file.hpp>
#include <weft/plan/hf_config.hpp>
#include <weft/plan/job_file.hpp>
#include <weft/plan/layout.hpp>
#include <weft/plan/torchtitan_file.hpp>

namespace {
void check_config(std::string_view text) {
  weft::plan::hf_model m;
  try {
    m = weft::plan::read_hf_config(text);
  } catch (const weft::config_error&) {
    return;
  }
  const weft::plan::transformer& t = m.model;
  if (t.layers < 1 || t.hidden < 1 || t.heads < 1 || t.kv_heads < 1 || t.heads % t.kv_heads != 0)
    __builtin_trap();
  const double p = weft::plan::total_parameters(t);
  if (!std::isfinite(p) || p <= 0 || weft::plan::activated_parameters(t) > p) __builtin_trap();
}

void check_layout(std::string_view text, int pp, int layers) {
  weft::plan::pipeline_layout l;
  try {
    l = weft::plan::parse_pipeline_layout(text, pp, layers, 0);
  } catch (const weft::config_error&) {
    return;
  }
  if (static_cast<int>(l.stages.size()) != pp * l.chunks) __builtin_trap();
  int sum = 0;
  for (const weft::plan::layout_stage& s : l.stages) sum += s.layers;
  if (sum != layers || !l.stages.front().embedding || !l.stages.back().loss) __builtin_trap();
}
void check_cluster(std::string_view text) {
  weft::plan::cluster_file f;
  try {
    f = weft::plan::read_cluster(text, "cluster.json");
  } catch (const weft::config_error&) {
    return;
  }
  const weft::plan::cluster& c = f.spec;
  if (!(c.device.sustained_flops() > 0) || !(c.hbm_bytes > 0) || c.per_node < 1 ||
      !(c.intra.beta.count() > 0) || !(c.inter.beta.count() > 0))
    __builtin_trap();
}
void check_job(std::string_view text) {
  weft::plan::job_file f;
  try {
    f = weft::plan::read_job(text, "job.json");
  } catch (const weft::config_error&) {
    return;
  }
  const weft::plan::job& j = f.spec;
  if (j.tp < 1 || j.pp < 1 || j.dp < 1 || j.cp < 1 || j.ep < 1 || j.micro_batch_size < 1 ||
      j.chunks < 1 || j.global_batch_size < 0 || !(j.seq >= 1) || j.devices() < 1)
    __builtin_trap();
}
void check_torchtitan(std::string_view text) {
  weft::plan::transformer m;
  m.layers = 32;
  m.hidden = 1024;
  m.heads = m.kv_heads = 8;
  m.head_dim = 128;
  m.ffn = 4096;
  m.vocab = 1000;
  weft::plan::job j;
  try {
    j = weft::plan::torchtitan_as_job(weft::plan::read_torchtitan(text, "job.toml"), m, 64);
  } catch (const weft::config_error&) {
    return;
  }
  if (j.devices() != 64 || j.micro_batch_size < 1 || j.global_batch_size < 1 || j.chunks < 1 ||
      !(j.seq >= 1))
    __builtin_trap();
  if (j.pp > 1 && weft::plan::parse_pipeline_layout(j.layout, j.pp, m.layers, 0).stages.empty())
    __builtin_trap();
}
}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  if (size < 3) return 0;
  const std::string_view rest(reinterpret_cast<const char*>(data) + 1, size - 1);
  if (data[0] % 5 == 0)
    check_config(rest);
  else if (data[0] % 5 == 1)
    check_layout(rest.substr(2), 1 + data[1] % 32, data[2]);
  else if (data[0] % 5 == 2)
    check_cluster(rest);
  else if (data[0] % 5 == 3)
    check_job(rest);
  else
    check_torchtitan(rest);
  return 0;
}
