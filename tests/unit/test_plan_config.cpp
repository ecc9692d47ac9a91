// Hugging Face config.json files read as published, and the parameters that follow from them,
// against the counts the model cards and papers publish.
#include <doctest/doctest.h>

#include <fstream>
#include <sstream>
#include <string>

#include <weft/plan/cluster_file.hpp>
#include <weft/plan/hf_config.hpp>
#include <weft/plan/job_file.hpp>
#include <weft/plan/layout.hpp>
#include <weft/plan/megatron_model.hpp>

using namespace weft::plan;
using weft::config_error;

namespace {
std::string fixture(const std::string& name) {
  std::ifstream in(std::string(WEFT_TEST_DATA) + "/hf/" + name + ".json");
  REQUIRE(in);
  std::ostringstream text;
  text << in.rdbuf();
  return text.str();
}

// The error `text` gives, or "" when it reads.
std::string refusal(const std::string& text) {
  try {
    (void)read_hf_config(text);
  } catch (const config_error& e) {
    return e.what();
  }
  return "";
}
}  // namespace

TEST_CASE("config.json: what weft needs is named when missing, and bad values are refused") {
  CHECK(refusal("[1, 2]") == "config.json: not a JSON object");
  CHECK(refusal("{\"n_layer\": 2,").find("config.json: not JSON: ") == 0);
  // A number too large for a double is the JSON reader's range error: refused the same way.
  CHECK(refusal("{\"n_layer\": 9e953248}").find("config.json: not JSON: ") == 0);
  CHECK(refusal(R"({"hidden_size": 64, "num_attention_heads": 4, "vocab_size": 10})") ==
        "config.json: missing num_hidden_layers or n_layer or num_layers");
  CHECK(refusal(R"({"num_hidden_layers": 2, "num_attention_heads": 4, "vocab_size": 10})") ==
        "config.json: missing hidden_size or n_embd or n_embed or d_model");
  CHECK(refusal(R"({"num_hidden_layers": 2.5, "hidden_size": 64, "num_attention_heads": 4,
                    "vocab_size": 10})") ==
        "config.json: num_hidden_layers must be a whole number in [1, 1048576], got 2.5");
  CHECK(refusal(R"({"num_hidden_layers": 2, "hidden_size": -64, "num_attention_heads": 4,
                    "vocab_size": 10})") ==
        "config.json: hidden_size must be a whole number in [1, 16777216], got -64");
  CHECK(refusal(R"({"num_hidden_layers": "2", "hidden_size": 64, "num_attention_heads": 4,
                    "vocab_size": 10})") ==
        "config.json: num_hidden_layers must be a whole number in [1, 1048576], got \"2\"");
  CHECK(refusal(R"({"num_hidden_layers": 2, "hidden_size": 64, "num_attention_heads": 6,
                    "num_key_value_heads": 4, "vocab_size": 10})") ==
        "config.json: num_attention_heads (6) must be a multiple of num_key_value_heads (4)");
  CHECK(refusal(R"({"num_hidden_layers": 2, "hidden_size": 64, "num_attention_heads": 6,
                    "vocab_size": 10})") ==
        "config.json: hidden size 64 is not a multiple of the 6 heads");
  CHECK(refusal(R"({"num_hidden_layers": 2, "hidden_size": 64, "num_attention_heads": 4,
                    "vocab_size": 10, "num_local_experts": 8})") ==
        "config.json: missing num_experts_per_tok");
  CHECK(refusal(R"({"num_hidden_layers": 2, "hidden_size": 64, "num_attention_heads": 4,
                    "vocab_size": 10, "tie_word_embeddings": 1})") ==
        "config.json: tie_word_embeddings must be true or false, got 1");
  // 1e300 layers: refused by name, not wrapped into an int.
  CHECK(refusal(R"({"num_hidden_layers": 1e300, "hidden_size": 64, "num_attention_heads": 4,
                    "vocab_size": 10})")
            .find("config.json: num_hidden_layers must be a whole number") == 0);
}

TEST_CASE("config.json: a key weft does not use is named in a warning, known ones are not") {
  const hf_model m = read_hf_config(R"({"model_type": "llama", "num_hidden_layers": 2,
      "hidden_size": 64, "num_attention_heads": 4, "vocab_size": 10, "intermediate_size": 128,
      "hidden_act": "silu", "rope_theta": 10000, "torch_dtype": "bfloat16",
      "my_new_feature": 3, "attention_dropout": 0.0})");
  REQUIRE(m.warnings.size() == 1);
  CHECK(m.warnings[0] == "config.json: key 'my_new_feature' is not used");
  CHECK(m.model.layers == 2);
  CHECK(m.model.mlp == mlp_kind::gated);
  CHECK(!m.model.dropout);
}

// Expected counts: the model cards' and papers' published figures, and the exact totals a
// separate derivation from the Hugging Face modeling code's tensors gives (trainable
// parameters; tied weights once; buffers such as DeepSeek-V3's balancing bias left out).
TEST_CASE("published configs: their key sets read without a warning") {
  for (const char* name : {"gpt2", "bloom-560m", "llama-3.1-405b", "mixtral-8x7b",
                           "qwen1.5-moe-a2.7b", "deepseek-v3"}) {
    CAPTURE(name);
    const hf_model m = read_hf_config(fixture(name));
    CHECK(m.warnings.empty());
    for (const std::string& w : m.warnings) MESSAGE(w);
  }
}

TEST_CASE("GPT-2 small and BLOOM-560m: exactly their published parameter counts") {
  const transformer gpt2 = read_hf_config(fixture("gpt2")).model;
  CHECK(gpt2.layers == 12);
  CHECK(gpt2.hidden == 768);
  CHECK(gpt2.ffn == 4 * 768);  // no n_inner: 4h
  CHECK(gpt2.mlp == mlp_kind::plain);
  CHECK(gpt2.tied_embeddings);
  CHECK(gpt2.dropout);
  CHECK(gpt2.positions == 1024);
  CHECK(layer_parameters(gpt2, 0).attention == 2'362'368);
  CHECK(layer_parameters(gpt2, 0).mlp == 4'722'432);
  CHECK(total_parameters(gpt2) == 124'439'808);
  const transformer bloom = read_hf_config(fixture("bloom-560m")).model;
  CHECK(bloom.ffn == 4 * 1024);  // n_inner: null
  CHECK(bloom.embedding_norm);
  CHECK(layer_parameters(bloom, 0).total() == 12'596'224);
  CHECK(total_parameters(bloom) == 559'214'592);  // the model card's count
  // BLOOM's other spelling of the width reads the same.
  std::string other = fixture("bloom-560m");
  other.replace(other.find("\"hidden_size\""), 13, "\"n_embed\"");
  CHECK(total_parameters(read_hf_config(other).model) == 559'214'592);
}

TEST_CASE("Llama 3.1 405B: grouped-query attention and SwiGLU, 405B") {
  const transformer m = read_hf_config(fixture("llama-3.1-405b")).model;
  CHECK(m.kv_heads == 8);
  CHECK(m.head_dim == 128);
  CHECK(m.mlp == mlp_kind::gated);
  CHECK(!m.tied_embeddings);
  CHECK(layer_parameters(m, 0).total() == 3'187'703'808);
  CHECK(total_parameters(m) == 405'853'388'800);
  CHECK(total_parameters(m) == doctest::Approx(405e9).epsilon(0.005));
}

TEST_CASE("Mixtral 8x7B and Qwen1.5-MoE-A2.7B: experts, shared experts, activated parameters") {
  const transformer mixtral = read_hf_config(fixture("mixtral-8x7b")).model;
  CHECK(mixtral.moe.routed == 8);
  CHECK(mixtral.moe.top_k == 2);
  CHECK(mixtral.moe_layers() == 32);
  CHECK(total_parameters(mixtral) == 46'702'792'704);
  CHECK(activated_parameters(mixtral) == 12'879'925'248);
  CHECK(total_parameters(mixtral) == doctest::Approx(46.7e9).epsilon(0.005));
  CHECK(activated_parameters(mixtral) == doctest::Approx(12.9e9).epsilon(0.005));
  const transformer qwen = read_hf_config(fixture("qwen1.5-moe-a2.7b")).model;
  CHECK(qwen.qkv_bias);
  CHECK(qwen.moe.shared_gate);
  CHECK(qwen.moe_layers() == 24);
  CHECK(layer_parameters(qwen, 0).total() == 570'560'512);
  CHECK(total_parameters(qwen) == 14'315'784'192);
  CHECK(activated_parameters(qwen) == 2'689'173'504);
  CHECK(total_parameters(qwen) == doctest::Approx(14.3e9).epsilon(0.005));
  CHECK(activated_parameters(qwen) == doctest::Approx(2.7e9).epsilon(0.01));
}

TEST_CASE("DeepSeek-V3: latent attention, 3 dense layers then 58 MoE ones, MTP, 671B") {
  const transformer m = read_hf_config(fixture("deepseek-v3")).model;
  CHECK(m.mla.active());
  CHECK(m.moe_layers() == 58);
  CHECK(!m.is_moe_layer(2));
  CHECK(m.is_moe_layer(3));
  CHECK(m.mtp_layers == 1);
  CHECK(attention_parameters(m) == 187'107'328);
  CHECK(layer_parameters(m, 0).total() == 583'483'392);
  CHECK(layer_parameters(m, 3).total() == 11'507'286'016);
  // The main model: 671B; one token activates 37B of it (36.6B without the input embedding,
  // as DeepSeek's weights document counts).
  const edge_parameters e = edges(m);
  CHECK(total_parameters(m) - e.mtp == 671'026'404'352);
  CHECK(total_parameters(m) - e.mtp == doctest::Approx(671e9).epsilon(0.001));
  CHECK(activated_parameters(m) == 37'552'282'624);
  CHECK(activated_parameters(m) - e.embedding == doctest::Approx(36.6e9).epsilon(0.002));
  // The MTP module: its projection, three norms and one MoE block (DeepSeek: 11.5B unique).
  CHECK(e.mtp == 11'610'067'968);
  CHECK(e.mtp == doctest::Approx(11.5e9).epsilon(0.01));
}

TEST_CASE("sparse-step MoE: Qwen counts its layers from 1, DeepSeek from 0") {
  std::string every_second = fixture("qwen1.5-moe-a2.7b");
  every_second.replace(every_second.find("\"decoder_sparse_step\": 1"), 24,
                       "\"decoder_sparse_step\": 2");
  const transformer q = read_hf_config(every_second).model;
  CHECK(!q.is_moe_layer(0));
  CHECK(q.is_moe_layer(1));
  CHECK(q.moe_layers() == 12);
  std::string freq = fixture("deepseek-v3");
  freq.replace(freq.find("\"moe_layer_freq\": 1"), 19, "\"moe_layer_freq\": 2");
  const transformer d = read_hf_config(freq).model;
  CHECK(d.is_moe_layer(4));
  CHECK(!d.is_moe_layer(5));
}

namespace {
std::string layout_refusal(std::string_view text, int pp, int layers, int mtp) {
  try {
    (void)parse_pipeline_layout(text, pp, layers, mtp);
  } catch (const config_error& e) {
    return e.what();
  }
  return "";
}
}  // namespace

TEST_CASE("--pipeline-layout: Megatron's DeepSeek-V3 example, PP 16 x VPP 2") {
  // Megatron's docs: rank 0 holds the embedding and 3 decoder layers, then 2; ranks 1-13 two and
  // two; rank 14 two, then the MTP layer; rank 15 two, then the loss.
  const pipeline_layout l = parse_pipeline_layout("Et*3|(tt|)*29,m|L", 16, 61, 1);
  CHECK(l.chunks == 2);
  REQUIRE(l.stages.size() == 32);
  CHECK(l.at(0, 0).embedding);
  CHECK(l.at(0, 0).layers == 3);
  CHECK(l.at(0, 0).first_layer == 0);
  CHECK(l.at(0, 1).layers == 2);
  for (int r = 1; r <= 13; ++r) {
    CHECK(l.at(r, 0).layers == 2);
    CHECK(l.at(r, 1).layers == 2);
  }
  CHECK(l.at(1, 0).first_layer == 3);
  CHECK(l.at(14, 1).mtp == 1);
  CHECK(l.at(14, 1).layers == 0);
  CHECK(l.at(15, 1).loss);
  CHECK(l.at(15, 1).layers == 0);
  CHECK(l.at(15, 0).first_layer == 3 + 2 * 15 - 2);
  // Empty stages are legal; commas and spaces are cosmetic.
  const pipeline_layout e = parse_pipeline_layout("E||t, t|L", 2, 2, 0);
  CHECK(e.chunks == 2);
  CHECK(e.at(1, 0).layers == 0);
  CHECK(e.at(0, 1).layers == 2);
}

TEST_CASE("--pipeline-layout: what does not parse or does not cover the model is named") {
  CHECK(layout_refusal("Et*3|(tt|*29,m|L", 16, 61, 1) ==
        "--pipeline-layout: '(' is never closed at position 17 of \"Et*3|(tt|*29,m|L\"");
  CHECK(layout_refusal("Et*3|x|L", 3, 3, 0) ==
        "--pipeline-layout: 'x' is not one of E t m L | ( ) * , at position 6 of \"Et*3|x|L\"");
  CHECK(layout_refusal("Et*|L", 2, 1, 0) ==
        "--pipeline-layout: '*' needs a count at position 4 of \"Et*|L\"");
  CHECK(layout_refusal("Et*0|L", 2, 0, 0) ==
        "--pipeline-layout: a count of 0 at position 5 of \"Et*0|L\"");
  CHECK(layout_refusal("E(t*99999999)*99999999|L", 2, 1, 0)
            .find("--pipeline-layout: the layout expands to more than 1048576 symbols") == 0);
  CHECK(layout_refusal("Et|tt|L", 3, 4, 0) ==
        "--pipeline-layout: 3 decoder layers (t), the model has 4 (\"Et|tt|L\")");
  CHECK(layout_refusal("Et|tt|L", 2, 3, 0) ==
        "--pipeline-layout: 3 stages are not a multiple of the 2 pipeline ranks (\"Et|tt|L\")");
  CHECK(layout_refusal("tE|t|L", 3, 2, 0) ==
        "--pipeline-layout: the embedding (E) must open the first stage");
  CHECK(layout_refusal("Et|L|t", 3, 2, 0) ==
        "--pipeline-layout: the loss (L) must appear once, in the last stage (\"Et|L|t\")");
  CHECK(layout_refusal("Et|tm|L", 3, 2, 0) ==
        "--pipeline-layout: 1 MTP layers (m), the model has 0 (\"Et|tm|L\")");
  // Nesting is bounded; an empty part repeated any number of times is nothing, at once.
  const std::string deep = std::string(65, '(') + "t" + std::string(65, ')');
  // The text is quoted by the 60 characters around the fault: 31 '(' before it, 28 ')' after.
  CHECK(layout_refusal("E" + deep + "|L", 2, 1, 0) ==
        "--pipeline-layout: parentheses nested more than 64 deep at position 66 of \"..." +
            std::string(31, '(') + "t" + std::string(28, ')') + "...\"");
  CHECK(parse_pipeline_layout("E((()*99999999)*99999999)*99999999t|L", 2, 1, 0).chunks == 1);
  CHECK(layout_refusal("Et|t)|L", 3, 2, 0) ==
        "--pipeline-layout: unexpected ')' at position 5 of \"Et|t)|L\"");
}

TEST_CASE("a cluster file names its device: the per-kernel prices take its SMs and tiles") {
  const std::string facts = R"("peak_flops": 989e12, "matmul_efficiency": 0.7,
      "hbm_bytes": 80e9, "hbm_bytes_per_s": 3e12, "devices_per_node": 8,
      "intra_node": {"latency_us": 2, "bytes_per_s": 450e9},
      "inter_node": {"latency_us": 10, "bytes_per_s": 50e9})";
  const cluster_file named = read_cluster("{\"device\": \"h100-sxm\", " + facts + "}", "c.json");
  CHECK(named.warnings.empty());
  CHECK(named.spec.chip.sms == 132);
  CHECK(named.spec.chip.tile.m == 256);
  CHECK(named.spec.chip.peak_fp8 == 1979e12);
  CHECK(named.spec.chip.hbm_share == weft::perf::h100_sxm.hbm_share);
  // The file's own facts override the device's.
  CHECK(named.spec.chip.matmul_share == 0.7);
  CHECK(named.spec.chip.hbm_bytes_per_s == 3e12);
  // Without it, no device: the estimate makes one of the facts (no tiles).
  CHECK(read_cluster("{" + facts + "}", "c.json").spec.chip.peak_bf16 == 0);
  CHECK_THROWS_WITH_AS(read_cluster("{\"device\": \"tpu-v5\", " + facts + "}", "c.json"),
                       "c.json: device 'tpu-v5' is not a built-in one (a100-80g, h100-sxm, h800, "
                       "ascend-910b)",
                       config_error);
  CHECK_THROWS_WITH_AS(read_cluster("{\"device\": 3, " + facts + "}", "c.json"),
                       "c.json: device must be a string, got 3", config_error);
  // The collectives' bus bandwidths: read, range-checked, their unknown keys warned of.
  const cluster_file bus = read_cluster(
      "{" + facts +
          R"(, "collectives": {"nvlink_busbw": 370e9, "nic_busbw": 47e9, "nics_per_node": 8,
                                "sharp": true}})",
      "c.json");
  CHECK(bus.spec.fabric.nvlink_busbw == 370e9);
  CHECK(bus.spec.fabric.nic_busbw == 47e9);
  CHECK(bus.spec.fabric.nics_per_node == 8);
  REQUIRE(bus.warnings.size() == 1);
  CHECK(bus.warnings[0] == "c.json: collectives: key 'sharp' is not used");
  CHECK_THROWS_WITH_AS(
      read_cluster("{" + facts + R"(, "collectives": {"nic_busbw": 1}})", "c.json"),
      "c.json: collectives: nic_busbw must be in [1000000, 1000000000000000], got 1", config_error);
  CHECK_THROWS_WITH_AS(
      read_cluster("{" + facts + R"(, "collectives": {"nics_per_node": 2.5}})", "c.json"),
      "c.json: collectives: nics_per_node must be a whole number in [1, 65536], got 2.5",
      config_error);
}

TEST_CASE("one's own cluster from JSON: the built-in H100's figures read back, errors named") {
  const cluster_file f = read_cluster(R"({"peak_flops": 989e12, "matmul_efficiency": 0.8,
      "attention_efficiency": 0.6, "hbm_bytes": 84943715696.64, "hbm_bytes_per_s": 3.35e12,
      "devices_per_node": 8, "intra_node": {"latency_us": 2, "bytes_per_s": 450e9},
      "inter_node": {"latency_us": 10, "bytes_per_s": 50e9, "switch": "ndr"}})",
                                      "mine.json");
  const cluster& h = *find_cluster("h100-sxm");
  CHECK(f.spec.device.peak_flops == h.device.peak_flops);
  CHECK(f.spec.hbm_bytes == h.hbm_bytes);
  CHECK(f.spec.per_node == h.per_node);
  CHECK(f.spec.intra.beta.count() == doctest::Approx(h.intra.beta.count()));
  CHECK(f.spec.inter.alpha.count() == doctest::Approx(h.inter.alpha.count()));
  CHECK(f.spec.overlap.compute_slowdown == weft::contention_facts::published().compute_slowdown);
  REQUIRE(f.warnings.size() == 1);
  CHECK(f.warnings[0] == "mine.json: inter_node: key 'switch' is not used");
  const auto refusal = [](const std::string& text) -> std::string {
    try {
      (void)read_cluster(text, "mine.json");
    } catch (const config_error& e) {
      return e.what();
    }
    return "";
  };
  CHECK(refusal(R"({"matmul_efficiency": 0.8})") == "mine.json: missing peak_flops");
  CHECK(refusal(R"({"peak_flops": 1e15, "matmul_efficiency": 1.5})") ==
        "mine.json: matmul_efficiency must be in [0.01, 1], got 1.5");
  // Values inside (0, 1] once planned to "step inf s" or "bubble -nan%": every fact has a range
  // wide enough for any device and network, narrow enough to keep an estimate finite.
  CHECK(refusal(R"({"peak_flops": 1e15, "matmul_efficiency": 1e-300})") ==
        "mine.json: matmul_efficiency must be in [0.01, 1], got 1e-300");
  CHECK(refusal(R"({"peak_flops": 1e-300})") ==
        "mine.json: peak_flops must be in [1000000000, 1e+18], got 1e-300");
  for (const cluster& c : clusters) CHECK_NOTHROW(check_cluster(c));
  cluster built = clusters[1];
  built.inter = weft::link_model::with_bandwidth(weft::seconds(1e-5), 1e-300);
  CHECK_THROWS_WITH_AS(check_cluster(built),
                       "cluster 'h100-sxm': inter_node: bytes_per_s must be in [1000000, "
                       "1000000000000000], got 1e-300",
                       config_error);
  CHECK(refusal(R"({"peak_flops": 1e15, "matmul_efficiency": 0.5, "hbm_bytes": 1e9,
                    "hbm_bytes_per_s": 1e12, "devices_per_node": 8, "intra_node": 3})") ==
        "mine.json: intra_node must be an object");
  CHECK(refusal("{").find("mine.json: not JSON: ") == 0);
}

TEST_CASE("a user's JSON: nesting bounded, values quoted briefly in errors") {
  // 100,000 levels under a key the reader checks overflowed the stack when the error printed
  // the value; JSON is refused past 64 levels, while parsing, for every reader.
  const std::string deep = std::string(100000, '[') + std::string(100000, ']');
  const auto refusal = [](auto&& read) -> std::string {
    try {
      read();
    } catch (const config_error& e) {
      return e.what();
    }
    return "";
  };
  CHECK(refusal([&] { (void)read_hf_config("{\"num_hidden_layers\": " + deep + "}"); }) ==
        "config.json: nested more than 64 levels deep");
  CHECK(refusal([&] { (void)read_cluster("{\"peak_flops\": " + deep + "}", "c.json"); }) ==
        "c.json: nested more than 64 levels deep");
  CHECK(refusal([&] { (void)read_job("{\"tp\": " + deep + "}", "j.json"); }) ==
        "j.json: nested more than 64 levels deep");
  // 64 levels parse; the error names the value by its size, not its text.
  const std::string ok = std::string(63, '[') + std::string(63, ']');
  CHECK(refusal([&] { (void)read_job("{\"tp\": " + ok + "}", "j.json"); }) ==
        "j.json: tp must be a whole number in [1, 65536], got an array of 1");
  const std::string long_text(1 << 20, 'x');
  const std::string said = refusal(
      [&] { (void)read_job("{\"schedule\": 1, \"tp\": \"" + long_text + "\"}", "j.json"); });
  CHECK(said.size() < 200);
  CHECK(said.find("j.json: tp must be a whole number in [1, 65536], got \"xxx") == 0);
  CHECK(said.ends_with("...\""));
}

TEST_CASE("a multimodal config's text_config is its language model, the file named throughout") {
  const hf_model llava = read_hf_config(fixture("llava-1.5-7b"), "llava.json");
  CHECK(llava.model.model_type == "llama");
  CHECK(llava.model.layers == 32);
  // Vicuna-7B (Llama 2 7B) with LLaVA's 64 more tokens: untied 32064 x 4096 embeddings twice,
  // 32 layers of 4 x 4096^2 attention, a 3 x 4096 x 11008 SwiGLU and two norms, a final norm.
  CHECK(total_parameters(llava.model) ==
        2.0 * 32064 * 4096 + 32 * (4.0 * 4096 * 4096 + 3.0 * 4096 * 11008 + 2 * 4096) + 4096);
  REQUIRE(!llava.warnings.empty());
  CHECK(llava.warnings.front() ==
        "llava.json: the language model of text_config is planned; the rest of the model "
        "(vision, audio) is not");
  CHECK(llava.max_positions == 4096);
  CHECK(!sequence_warning(llava, 4096));
  CHECK(*sequence_warning(llava, 8192) ==
        "llava.json: --seq-length 8192 is more than max_position_embeddings 4096, the longest "
        "sequence the model was trained for");
  CHECK_THROWS_WITH_AS(read_hf_config(R"({"model_type": "llama"})", "mine.json"),
                       doctest::Contains("mine.json: missing num_hidden_layers"), config_error);
  CHECK_THROWS_WITH_AS(read_hf_config(R"({"text_config": {"hidden_size": 64}})", "vlm.json"),
                       doctest::Contains("vlm.json: text_config: missing num_hidden_layers"),
                       config_error);
}

TEST_CASE("a model_type weft does not read: planned from its keys only when it knows them all") {
  // MPT's keys (attn_config, expansion_ratio) shape its layers; weft does not read them and
  // says which, rather than planning a Llama of the same width.
  const std::string mpt = R"({"model_type": "mpt", "n_layers": 32, "d_model": 4096,
      "n_heads": 32, "vocab_size": 50432, "expansion_ratio": 4, "attn_config": {},
      "num_hidden_layers": 32, "num_attention_heads": 32})";
  CHECK_THROWS_WITH_AS(
      read_hf_config(mpt, "mpt.json"),
      "mpt.json: model_type 'mpt' is not one weft reads, and its keys 'attn_config', "
      "'expansion_ratio', 'n_heads' and 'n_layers' may change the model's shape; weft reads "
      "gpt2, bloom, gpt_neox, falcon, llama, mistral, mixtral, qwen2(_moe), qwen3(_moe), "
      "gemma(2), phi3 and deepseek_v2/v3",
      config_error);
  // One unknown key is named alone; many are cut after eight.
  std::string many = R"({"model_type": "x", "num_hidden_layers": 2, "hidden_size": 64,
      "num_attention_heads": 4, "vocab_size": 10)";
  for (int i = 0; i < 10; ++i) many += ", \"k" + std::to_string(i) + "\": 1";
  CHECK_THROWS_WITH_AS(read_hf_config(many + "}"),
                       doctest::Contains("'k6', 'k7' and 2 more may change"), config_error);
  // Every key known: planned as the keys say, with a warning naming the type.
  const hf_model known = read_hf_config(R"({"model_type": "olmo", "num_hidden_layers": 2,
      "hidden_size": 64, "num_attention_heads": 4, "vocab_size": 10, "intermediate_size": 128,
      "hidden_act": "silu"})");
  REQUIRE(known.warnings.size() == 1);
  CHECK(known.warnings[0] ==
        "config.json: model_type 'olmo' is not one weft reads; planned from its keys, every "
        "one of which weft knows");
  CHECK(total_parameters(known.model) == 2 * (4 * 64 * 64 + 3 * 64 * 128 + 2 * 64) + 64 + 2 * 640);
}

TEST_CASE("sliding-window attention: a warning where the window is shorter than the sequence") {
  const std::string base = R"({"num_hidden_layers": 2, "hidden_size": 64,
      "num_attention_heads": 4, "vocab_size": 10, "intermediate_size": 128, "hidden_act": "silu",
      )";
  const hf_model mistral =
      read_hf_config(base + R"("model_type": "mistral", "sliding_window": 4096})", "m.json");
  CHECK(mistral.warnings.empty());
  CHECK(mistral.sliding_window == 4096);
  CHECK(!window_warning(mistral, 4096));
  CHECK(*window_warning(mistral, 8192) ==
        "m.json: sliding_window 4096 is less than --seq-length 8192; attention is priced over "
        "the whole causal sequence (the window's saving is not modelled)");
  // Qwen's window is off unless use_sliding_window says; null is no window; layer_types says
  // which layers slide.
  CHECK(read_hf_config(base + R"("model_type": "qwen2", "sliding_window": 4096,
      "max_window_layers": 28})")
            .sliding_window == 0);
  CHECK(read_hf_config(base + R"("model_type": "qwen2", "sliding_window": 4096,
      "use_sliding_window": true})")
            .sliding_window == 4096);
  CHECK(
      read_hf_config(base + R"("model_type": "mistral", "sliding_window": null})").sliding_window ==
      0);
  CHECK(read_hf_config(base + R"("model_type": "qwen3", "sliding_window": 4096,
      "use_sliding_window": true, "layer_types": ["full_attention", "full_attention"]})")
            .sliding_window == 0);
  CHECK_THROWS_WITH_AS(
      read_hf_config(base + R"("sliding_window": 0.5})"),
      "config.json: sliding_window must be a whole number in [1, 1000000000000], got 0.5",
      config_error);
}

// Each model type's layer as its Hugging Face class builds it. Expected totals: a separate
// derivation from the transformers modeling code of each type (every nn.Parameter, tied weights
// once), which agrees with each checkpoint's published tensor size (its index's total_size in
// bf16 over 2, or the model card): Falcon's checkpoints store the tied head a second time.
// Llama-3.1-8B, Qwen2-57B-A14B and DeepSeek-V2-Lite likewise (their activated counts: the top-k
// routed experts, the shared ones and everything else, the embedding included), checked against
// the index's total_size (Llama), the leaderboard's 57.409B (Qwen2) and a 31,412,968,448-byte
// total_size (DeepSeek).
TEST_CASE("published configs of more families: exactly their parameter counts, no warning") {
  const struct {
    const char* name;
    double total, activated = 0;
  } published[] = {{"falcon-7b", 6'921'720'704},
                   {"falcon-40b", 41'303'293'952},
                   {"pythia-6.9b", 6'857'302'016},
                   {"gemma-7b", 8'537'680'896},
                   {"gemma-2-9b", 9'241'705'984},
                   {"phi-3-mini-4k-instruct", 3'821'079'552},
                   {"qwen3-8b", 8'190'735'360},
                   {"qwen3-30b-a3b", 30'532'122'624, 3'353'032'704},
                   {"mistral-7b-v0.1", 7'241'732'096},
                   {"qwen2.5-7b", 7'615'616'512},
                   {"llama-3.1-8b", 8'030'261'248},
                   {"qwen2-57b-a14b", 57'408'658'944, 14'249'270'784},
                   {"deepseek-v2-lite", 15'706'484'224, 2'661'150'208}};
  for (const auto& p : published) {
    const std::string name = p.name;
    CAPTURE(name);
    const hf_model m = read_hf_config(fixture(name));
    CHECK(total_parameters(m.model) == p.total);
    CHECK(activated_parameters(m.model) == (p.activated > 0 ? p.activated : p.total));
    for (const std::string& w : m.warnings) MESSAGE(w);
    CHECK(m.warnings.empty());
  }
}

TEST_CASE("a config without model_type: its keys must be ones weft knows") {
  // Falcon-7B without its model_type: read as the documented key styles, multi_query and
  // parallel_attn would be left out and 8.52B planned for 6.92B; they are named instead.
  nlohmann::json f = nlohmann::json::parse(fixture("falcon-7b"));
  f.erase("model_type");
  try {
    (void)read_hf_config(f.dump(), "falcon.json");
    FAIL("a Falcon config without model_type was planned");
  } catch (const config_error& e) {
    const std::string why = e.what();
    CHECK(why.starts_with("falcon.json: no model_type, and its keys "));
    CHECK(why.find("'multi_query'") != std::string::npos);
    CHECK(why.find("'parallel_attn'") != std::string::npos);
  }
  // Keys weft knows (the documented styles): planned, without a warning, as Llama's are.
  const std::string shape =
      R"("hidden_size": 1024, "num_hidden_layers": 2, "num_attention_heads": 8,
         "intermediate_size": 4096, "vocab_size": 1000)";
  const hf_model bare = read_hf_config("{" + shape + "}", "bare.json");
  CHECK(bare.warnings.empty());
  CHECK(total_parameters(bare.model) ==
        total_parameters(read_hf_config(R"({"model_type": "llama", )" + shape + "}").model));
}

TEST_CASE("Falcon: one key and value head, attention beside the MLP, one norm or two") {
  const transformer f7 = read_hf_config(fixture("falcon-7b")).model;
  CHECK(f7.kv_heads == 1);  // multi_query: the fused projection is 4544 + 2 x 64 wide
  CHECK(f7.parallel_attention);
  CHECK(f7.norms_per_layer == 1);
  CHECK(f7.layer_norm);
  CHECK(f7.tied_embeddings);  // the config omits it: PretrainedConfig's default
  CHECK(f7.mlp == mlp_kind::plain);
  CHECK(f7.ffn == 4 * 4544);
  CHECK(layer_parameters(f7, 0).attention == 4544.0 * (4544 + 2 * 64) + 4544.0 * 4544);
  CHECK(layer_parameters(f7, 0).norms == 2 * 4544);
  const transformer f40 = read_hf_config(fixture("falcon-40b")).model;
  CHECK(f40.kv_heads == 8);  // the new decoder reads num_kv_heads
  CHECK(f40.norms_per_layer == 2);
  CHECK(f40.parallel_attention);
  // multi_query off: every head its own keys and values; alibi: no rotary embeddings.
  std::string mha = fixture("falcon-7b");
  mha.replace(mha.find("\"multi_query\": true"), 19, "\"multi_query\": false");
  mha.replace(mha.find("\"alibi\": false"), 14, "\"alibi\": true");
  const transformer f = read_hf_config(mha).model;
  CHECK(f.kv_heads == 71);
  CHECK(!f.rotary);
  // parallel_attn off: a norm before each block, as GPT-2's.
  std::string serial = fixture("falcon-7b");
  serial.replace(serial.find("\"parallel_attn\": true"), 21, "\"parallel_attn\": false");
  CHECK(read_hf_config(serial).model.norms_per_layer == 2);
  CHECK(!read_hf_config(serial).model.parallel_attention);
}

TEST_CASE("Gemma's GeGLU and wide heads, Gemma 2's four norms, Qwen3's query and key norms") {
  const transformer g = read_hf_config(fixture("gemma-7b")).model;
  CHECK(g.mlp == mlp_kind::gated);  // gelu, yet three matrices
  CHECK(g.head_dim == 256);         // not 3072 / 16
  CHECK(g.tied_embeddings);
  CHECK(layer_parameters(g, 0).attention == 4.0 * 3072 * 16 * 256);
  const hf_model g2 = read_hf_config(fixture("gemma-2-9b"), "gemma-2-9b.json");
  CHECK(g2.model.norms_per_layer == 4);
  CHECK(layer_parameters(g2.model, 0).norms == 4 * 3584);
  CHECK(g2.sliding_window == 4096);  // every other layer
  CHECK(*window_warning(g2, 8192) ==
        "gemma-2-9b.json: sliding_window 4096 is less than --seq-length 8192; attention is "
        "priced over the whole causal sequence (the window's saving is not modelled)");
  const transformer q3 = read_hf_config(fixture("qwen3-8b")).model;
  CHECK(q3.qk_norm);
  CHECK(!q3.qkv_bias);
  CHECK(layer_parameters(q3, 0).attention ==
        4096.0 * 128 * (32 + 2 * 8) + 32.0 * 128 * 4096 + 2 * 128);
  const transformer moe = read_hf_config(fixture("qwen3-30b-a3b")).model;
  CHECK(moe.moe_layers() == 48);
  CHECK(moe.moe.shared_ffn == 0);
  CHECK(activated_parameters(moe) == 3'353'032'704);  // eight of 128 experts a token
  const transformer neox = read_hf_config(fixture("pythia-6.9b")).model;
  CHECK(neox.parallel_attention);
  CHECK(neox.norms_per_layer == 2);  // both norms, beside each other
  CHECK(neox.mlp == mlp_kind::plain);
  CHECK(!neox.tied_embeddings);
  // Phi-3 has no biases whatever attention_bias says.
  std::string phi = fixture("phi-3-mini-4k-instruct");
  phi.replace(phi.find("\"attention_bias\": false"), 23, "\"attention_bias\": true");
  CHECK(total_parameters(read_hf_config(phi).model) == 3'821'079'552);
}

// Megatron's own launch scripts state the model in flags. Expected: Megatron's rules
// (transformer_config.py, arguments.py: ffn 4h or int(8h/3/64)*64 with SwiGLU, head width h /
// heads, the vocabulary padded to a multiple of 128 x tp, biases, LayerNorm, learned positions
// and tied embeddings unless said) and the published models' counts.
TEST_CASE("Megatron's model flags: GPT-3 175B and Llama 3 8B as their example scripts state them") {
  megatron_model gpt3;  // examples/gpt3/train_gpt3_175b_distributed.sh
  gpt3.num_layers = 96;
  gpt3.hidden_size = 12288;
  gpt3.num_attention_heads = 96;
  gpt3.max_position_embeddings = 2048;
  gpt3.gpt2_vocab_files = true;  // --vocab-file, --merge-file: GPT-2's 50257
  const transformer g = megatron_transformer(gpt3, 8).model;
  CHECK(g.vocab == 51200);  // 50257 padded to a multiple of 1024
  CHECK(g.ffn == 4 * 12288);
  CHECK(g.linear_bias);
  CHECK(g.layer_norm);
  CHECK(g.tied_embeddings);
  CHECK(g.dropout);
  CHECK(g.positions == 2048);
  CHECK(!g.rotary);
  // The same model as the config.json written from the paper (presets/models/gpt3-175b.json).
  const transformer preset = read_hf_config(R"({"model_type": "gpt2", "n_layer": 96,
      "n_embd": 12288, "n_head": 96, "n_positions": 2048, "vocab_size": 51200})")
                                 .model;
  CHECK(total_parameters(g) == total_parameters(preset));
  CHECK(megatron_transformer(gpt3, 1).model.vocab == 50304);  // a multiple of 128

  megatron_model llama;  // examples/llama/train_llama3_8b_h100_fp8.sh
  llama.num_layers = 32;
  llama.hidden_size = 4096;
  llama.ffn_hidden_size = 14336;
  llama.num_attention_heads = 32;
  llama.group_query_attention = true;
  llama.num_query_groups = 8;
  llama.kv_channels = 128;
  llama.max_position_embeddings = 8192;
  llama.position_embedding_type = "rope";
  llama.attention_dropout = llama.hidden_dropout = 0;
  llama.activation = "swiglu";
  llama.normalization = "RMSNorm";
  llama.untie_embeddings_and_output_weights = true;
  llama.disable_bias_linear = true;
  llama.tokenizer_type = "NullTokenizer";
  llama.vocab_size = 128256;
  const hf_model l = megatron_transformer(llama, 1);
  CHECK(total_parameters(l.model) == 8'030'261'248);  // Meta-Llama-3-8B's
  CHECK(l.max_positions == 8192);
  CHECK(!l.model.dropout);
  // --swiglu without --ffn-hidden-size: Megatron's int(8h / 3 / 64) x 64.
  llama.ffn_hidden_size = 0;
  CHECK(megatron_transformer(llama, 1).model.ffn == 10880);  // 4096 x 8 / 3 = 10922.7
}

TEST_CASE("Megatron's model flags: DeepSeek-V3 as Megatron-FSDP's script states it") {
  megatron_model d;  // examples/megatron_fsdp/sbatch_mfsdp_deepseek_v3.sh (with --vocab-size)
  d.num_layers = 61;
  d.hidden_size = 7168;
  d.ffn_hidden_size = 18432;
  d.num_attention_heads = 128;
  d.kv_channels = 128;
  d.max_position_embeddings = 4096;
  d.position_embedding_type = "rope";
  d.make_vocab_size_divisible_by = 3232;
  d.vocab_size = 129280;
  d.normalization = "RMSNorm";
  d.activation = "swiglu";
  d.untie_embeddings_and_output_weights = d.disable_bias_linear = true;
  d.multi_latent_attention = d.qk_layernorm = true;
  d.attention_dropout = d.hidden_dropout = 0;
  d.num_experts = 256;
  d.moe_layer_freq = "[0]*3+[1]*58";
  d.moe_ffn_hidden_size = 2048;
  d.moe_shared_expert_intermediate_size = 2048;
  d.moe_router_topk = 8;
  d.moe_router_group_topk = 4;
  d.moe_router_num_groups = 8;
  d.q_lora_rank = 1536;
  d.kv_lora_rank = 512;
  d.mtp_num_layers = 1;
  const transformer m = megatron_transformer(d, 1).model;
  CHECK(m.moe.first_dense == 3);
  CHECK(m.moe_layers() == 58);
  CHECK(m.vocab == 129280);
  // The same model as DeepSeek's config.json.
  const transformer hf = read_hf_config(fixture("deepseek-v3")).model;
  CHECK(total_parameters(m) == total_parameters(hf));
  CHECK(activated_parameters(m) == activated_parameters(hf));
}

TEST_CASE("Megatron's model flags: what is missing or impossible is named") {
  const auto refusal = [](const megatron_model& a, int tp = 1) -> std::string {
    try {
      (void)megatron_transformer(a, tp);
    } catch (const config_error& e) {
      return e.what();
    }
    return "";
  };
  megatron_model a;
  CHECK(refusal(a) == "Megatron's model needs --num-layers");
  a.num_layers = 4;
  a.hidden_size = 64;
  a.num_attention_heads = 4;
  CHECK(refusal(a) == "Megatron's model needs --max-position-embeddings");
  a.max_position_embeddings = 128;
  a.tokenizer_type = "HuggingFaceTokenizer";
  CHECK(refusal(a) ==
        "Megatron's model needs --vocab-size: weft does not read the tokenizer "
        "HuggingFaceTokenizer (GPT2BPETokenizer's 50257 it knows)");
  a.vocab_size = 1000;
  CHECK(refusal(a).empty());
  a.group_query_attention = true;
  a.num_query_groups = 3;
  CHECK(refusal(a) == "--num-query-groups 3 does not divide --num-attention-heads 4");
  a.num_query_groups = 2;
  a.num_experts = 8;
  a.moe_router_topk = 9;
  CHECK(refusal(a) == "--moe-router-topk 9 must be in [1, 8] (--num-experts)");
  a.moe_router_topk = 2;
  // Patterns: evaluated, then placed as weft places MoE layers (some dense, then a stride).
  a.moe_layer_freq = "([0]+[1]*3)";
  CHECK(refusal(a).empty());
  a.moe_layer_freq = "[0,1,0,1]";
  CHECK(refusal(a).empty());
  CHECK(megatron_transformer(a, 1).model.moe_layers() == 2);
  a.moe_layer_freq = "([1]*1+[0]*1)*2";
  CHECK(megatron_transformer(a, 1).model.is_moe_layer(2));
  a.moe_layer_freq = "[1,1,0,1]";
  CHECK(refusal(a) ==
        "--moe-layer-freq: weft places expert layers after some dense ones at a fixed stride; "
        "layer 2 breaks the pattern's stride");
  a.moe_layer_freq = "[1]*5";
  CHECK(refusal(a) ==
        "--moe-layer-freq [1]*5: a pattern longer than the model at character 6 (a whole "
        "number, or a list of 0s and 1s such as \"([0]*3+[1]*58)\")");
  a.moe_layer_freq = "[1]*3";
  CHECK(refusal(a) == "--moe-layer-freq: the pattern has 3 layers, the model 4 (--num-layers)");
  a.moe_layer_freq = "[0]*4";
  CHECK(refusal(a) == "--moe-layer-freq: the pattern has no expert layer (1)");
  a.moe_layer_freq = "[2]*4";
  CHECK(refusal(a).find("only 0 (dense) and 1 (experts) can be listed at character 3") !=
        std::string::npos);
  a.moe_layer_freq = "([1]*4";
  CHECK(refusal(a).find("')' expected at character 7") != std::string::npos);
  a.moe_layer_freq = "[1]*99999999";
  CHECK(refusal(a).find("a number too large") != std::string::npos);
  a.moe_layer_freq = "[1]*9999999*9999999";
  CHECK(refusal(a).find("a pattern longer than the model") != std::string::npos);
  // Nothing repeated stays nothing, at once; nesting is bounded.
  a.moe_layer_freq = "[]*9999999*9999999*9999999+[0,1,0,1]";
  CHECK(refusal(a).empty());
  a.moe_layer_freq = std::string(100'000, '(') + "[1]";
  CHECK(refusal(a).find("parentheses nested too deep") != std::string::npos);
  a.moe_layer_freq = "0";
  CHECK(refusal(a) ==
        "--moe-layer-freq 0: a whole number of 1 or more, or a pattern such as "
        "\"([0]*3+[1]*58)\"");
  a.moe_layer_freq = "2";
  CHECK(megatron_transformer(a, 1).model.moe_layers() == 2);
  a.moe_layer_freq = "9";  // more than the layers: only layer 0, as Megatron's i % 9 == 0
  CHECK(megatron_transformer(a, 1).model.moe_layers() == 1);
  a.moe_router_group_topk = 2;
  CHECK(refusal(a) ==
        "--moe-router-group-topk 2 needs --moe-router-num-groups of at least that many");
}

TEST_CASE("Megatron's model flags: its rules for heads, biases and positions") {
  megatron_model a;
  a.num_layers = 2;
  a.hidden_size = 64;
  a.num_attention_heads = 4;
  a.max_position_embeddings = 128;
  a.vocab_size = 128;
  a.group_query_attention = true;  // without --num-query-groups: one group
  CHECK(megatron_transformer(a, 1).model.kv_heads == 1);
  // --add-qkv-bias beside the linears' own biases: one bias, not two.
  const transformer biased = megatron_transformer(a, 1).model;
  a.add_qkv_bias = true;
  CHECK(total_parameters(megatron_transformer(a, 1).model) == total_parameters(biased));
  a.disable_bias_linear = true;
  CHECK(megatron_transformer(a, 1).model.qkv_bias);
  // --no-position-embedding beside rotary positions (Megatron's Mixtral example): rotary.
  a.position_embedding_type = "rope";
  a.no_position_embedding = true;
  CHECK(megatron_transformer(a, 1).model.rotary);
  a.position_embedding_type = "learned_absolute";
  CHECK_THROWS_WITH_AS(megatron_transformer(a, 1),
                       "--no-position-embedding goes with rotary positions "
                       "(--position-embedding-type rope)",
                       config_error);
  a.use_rotary_position_embeddings = true;  // the older spelling of rope
  CHECK(megatron_transformer(a, 1).model.rotary);
  CHECK(megatron_transformer(a, 1).model.positions == 0);
}
