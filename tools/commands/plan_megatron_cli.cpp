// `weft plan`'s other half of Megatron-LM's launch flags (commands/plan_cli.cpp has the job's):
// the model's architecture when a launch script states it instead of a config.json, and the
// flags that change nothing of a step's time or memory (plan/megatron_flags.hpp), taken as a
// launch script has them so that its arguments paste as they are.
#include <CLI/CLI.hpp>
#include <string>
#include <string_view>
#include <vector>

#include <weft/core/op.hpp>
#include <weft/plan/megatron_flags.hpp>
#include <weft/plan/megatron_model.hpp>
#include "commands/definitions.hpp"
#include "option_groups.hpp"

namespace weft::cli {

std::vector<CLI::Option*> megatron_model_options(CLI::App& sub, plan_args& o) {
  namespace L = weft::limits;
  weft::plan::megatron_model& a = o.megatron;
  const std::string group = "Megatron's model (instead of --model)";
  std::vector<CLI::Option*> out{
      sub.add_option("--num-layers", a.num_layers, "transformer layers")
          ->check(whole_in(1, L::layers)),
      sub.add_option("--hidden-size", a.hidden_size, "the model's width")
          ->check(whole_in(1, 1 << 24)),
      sub.add_option("--num-attention-heads", a.num_attention_heads, "attention heads")
          ->check(whole_in(1, 1 << 24)),
      sub.add_option("--ffn-hidden-size", a.ffn_hidden_size,
                     "the MLP's inner width (default 4h; with --swiglu int(8h/3/64) x 64)")
          ->check(whole_in(1, 1 << 24)),
      sub.add_option("--kv-channels", a.kv_channels, "a head's width (default h / heads)")
          ->check(whole_in(1, 1 << 24)),
      sub.add_flag("--group-query-attention", a.group_query_attention,
                   "grouped-query attention over --num-query-groups"),
      sub.add_option("--num-query-groups", a.num_query_groups, "key/value heads")
          ->check(whole_in(1, 1 << 24)),
      sub.add_option("--max-position-embeddings", a.max_position_embeddings,
                     "positions (learned absolute ones: a table of this many)")
          ->check(whole_in(1, 1 << 30)),
      sub.add_option("--position-embedding-type", a.position_embedding_type,
                     "learned_absolute (the default), rope, yarn, mrope or none")
          ->check(CLI::IsMember({"learned_absolute", "rope", "yarn", "mrope", "none"})),
      sub.add_flag("--use-rotary-position-embeddings", a.use_rotary_position_embeddings,
                   "rotary positions (--position-embedding-type rope)"),
      sub.add_flag("--no-position-embedding", a.no_position_embedding,
                   "no learned position table (with rotary positions)"),
      sub.add_option("--normalization", a.normalization, "LayerNorm (the default) or RMSNorm")
          ->check(CLI::IsMember({"LayerNorm", "RMSNorm"})),
      sub.add_flag_callback(
          "--swiglu", [&a] { a.activation = "swiglu"; }, "a SwiGLU MLP (three matrices)"),
      sub.add_flag_callback(
          "--quick-geglu", [&a] { a.activation = "quick-geglu"; }, "a gated GeLU MLP"),
      sub.add_flag_callback(
          "--squared-relu", [&a] { a.activation = "squared-relu"; }, "squared ReLU"),
      sub.add_flag_callback(
          "--openai-gelu", [&a] { a.activation = "openai-gelu"; }, "GeLU (tanh form)"),
      sub.add_flag("--disable-bias-linear", a.disable_bias_linear, "no biases on the linears"),
      sub.add_flag("--add-qkv-bias", a.add_qkv_bias, "biases on q, k and v only"),
      sub.add_flag("--qk-layernorm", a.qk_layernorm, "a norm over each head's queries and keys"),
      sub.add_flag("--untie-embeddings-and-output-weights", a.untie_embeddings_and_output_weights,
                   "an LM head of its own"),
      sub.add_option("--attention-dropout", a.attention_dropout, "default 0.1")
          ->check(CLI::Range(0.0, 1.0)),
      sub.add_option("--hidden-dropout", a.hidden_dropout, "default 0.1")
          ->check(CLI::Range(0.0, 1.0)),
      sub.add_option("--vocab-size", a.vocab_size, "the tokenizer's vocabulary")
          ->check(whole_in(1, 1 << 24)),
      sub.add_option("--tokenizer-type", a.tokenizer_type,
                     "GPT2BPETokenizer's vocabulary weft knows; others need --vocab-size"),
      sub.add_option("--make-vocab-size-divisible-by", a.make_vocab_size_divisible_by,
                     "the vocabulary padded to a multiple of this x tp (default 128)")
          ->check(whole_in(1, 1 << 20)),
      sub.add_option("--num-experts", a.num_experts, "routed experts of an MoE layer")
          ->check(whole_in(1, 1 << 20)),
      sub.add_option("--moe-router-topk", a.moe_router_topk, "experts a token (default 2)")
          ->check(whole_in(1, 1 << 20)),
      sub.add_option("--moe-ffn-hidden-size", a.moe_ffn_hidden_size,
                     "an expert's inner width (default --ffn-hidden-size)")
          ->check(whole_in(1, 1 << 24)),
      sub.add_option("--moe-shared-expert-intermediate-size", a.moe_shared_expert_intermediate_size,
                     "the shared experts' inner width")
          ->check(whole_in(1, 1 << 24)),
      sub.add_flag("--moe-shared-expert-gate", a.moe_shared_expert_gate,
                   "a sigmoid gate on the shared expert"),
      sub.add_option("--moe-layer-freq", a.moe_layer_freq,
                     "every N-th layer MoE, or a pattern such as \"([0]*3+[1]*58)\""),
      sub.add_option("--moe-router-num-groups", a.moe_router_num_groups,
                     "group-limited routing's groups")
          ->check(whole_in(1, 1 << 20)),
      sub.add_option("--moe-router-group-topk", a.moe_router_group_topk, "groups a token may reach")
          ->check(whole_in(1, 1 << 20)),
      sub.add_flag("--multi-latent-attention", a.multi_latent_attention,
                   "DeepSeek's latent attention"),
      sub.add_option("--q-lora-rank", a.q_lora_rank, "the queries' latent (default none)")
          ->check(whole_in(1, 1 << 24)),
      sub.add_option("--kv-lora-rank", a.kv_lora_rank, "keys' and values' latent (default 32)")
          ->check(whole_in(1, 1 << 24)),
      sub.add_option("--qk-head-dim", a.qk_head_dim, "default 128")->check(whole_in(1, 1 << 24)),
      sub.add_option("--qk-pos-emb-head-dim", a.qk_pos_emb_head_dim, "default 64")
          ->check(whole_in(0, 1 << 24)),
      sub.add_option("--v-head-dim", a.v_head_dim, "default 128")->check(whole_in(1, 1 << 24)),
      sub.add_option("--mtp-num-layers", a.mtp_num_layers, "multi-token-prediction modules")
          ->check(whole_in(0, 1 << 10))};
  for (CLI::Option* f : out) {
    f->group(group);
    const std::string name = f->get_name(false, true);
    f->each([&o, name](const std::string&) { o.megatron_given.insert(name); });
  }
  return out;
}

void megatron_inert_options(CLI::App& sub, plan_args& o) {
  // Not inert, but not the job's either: --fp16 changes the gradients' bytes as Megatron keeps
  // them (resolved with the job, commands/plan.cpp).
  CLI::Option* preset = sub.get_option("--preset");
  sub.add_option_function<std::string>(
         "--optimizer", [](const std::string&) {},
         "adam (Megatron's default, what weft prices); another optimizer is refused")
      ->check(
          [](const std::string& v) -> std::string {
            return v == "adam" ? "" : "weft prices Adam's states and step, not " + v;
          },
          "adam");
  sub.add_flag("--fp16", o.fp16,
               "16-bit floats with loss scaling: the tensor-core rate and bytes of --bf16, the "
               "gradients kept and reduced in fp16, and the scaler's unscale and check of them "
               "before the optimizer's step")
      ->excludes(preset);
  sub.add_flag("--accumulate-allreduce-grads-in-fp32", o.accumulate_fp32,
               "with --fp16: the gradients kept and reduced in fp32")
      ->excludes(preset);
  // Hidden from --help: they are accepted so a launch script pastes as it is, and change nothing.
  for (const std::string_view name : weft::plan::megatron_inert_with_value) {
    CLI::Option* f =
        sub.add_option_function<std::string>(std::string(name), [](const std::string&) {});
    f->group("");
    // GPT-2's byte-pair files: the vocabulary Megatron's GPT examples name by its files.
    if (name == "--vocab-file") f->each([&o](const std::string&) { o.vocab_file = true; });
    if (name == "--merge-file") f->each([&o](const std::string&) { o.merge_file = true; });
  }
  for (const std::string_view name : weft::plan::megatron_inert_with_values)
    sub.add_option_function<std::vector<std::string>>(std::string(name),
                                                      [](const std::vector<std::string>&) {})
        ->expected(1, CLI::detail::expected_max_vector_size)
        ->group("");
  for (const std::string_view name : weft::plan::megatron_inert_switches)
    sub.add_flag_callback(std::string(name), [] {})->group("");
}

}  // namespace weft::cli
