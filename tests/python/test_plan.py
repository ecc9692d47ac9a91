"""weft.plan: the dict `weft plan --json` prints, for the same job."""
import json

import pytest
import weft

from conftest import DATA, PRESETS

GPT2 = DATA / "hf" / "gpt2.json"


def test_plan_is_the_tools(cli_json):
    mine = weft.plan(model=str(GPT2), cluster="a100-80g", pp=2, global_batch_size=8,
                     seq_length=1024, recompute="selective", pipeline_runtime="megatron")
    tool = cli_json("plan", "--model", GPT2, "--cluster", "a100-80g", "--pp", 2,
                    "--global-batch-size", 8, "--seq-length", 1024, "--recompute", "selective",
                    "--pipeline-runtime", "megatron")
    assert mine == tool
    assert isinstance(mine["step_s"], float)
    assert all(isinstance(b, int) for b in mine["memory_per_stage_bytes"])
    # An A100 80GB gives CUDA 79.35 GiB (PyTorch's out-of-memory message states it); a job may
    # allocate that less the CUDA context's 1573 MiB, over the allocator's reserve (40 GB
    # reserved for 36.618 GB allocated).
    assert isinstance(mine["hbm_bytes"], int) and mine["hbm_bytes"] == round(79.35 * 2**30)
    allocatable = (79.35 * 2**30 - 1573 * 2**20) / (40 / 36.618)
    assert mine["allocatable_bytes"] == pytest.approx(allocatable, abs=1)
    assert mine["fits"] == (max(mine["memory_per_stage_bytes"]) <= allocatable)
    assert len(mine["breakdown_per_rank"]) == 2
    assert mine["best"]["flags"].startswith("--schedule ")
    # Per device as published tables give it, beside the cluster's figure.
    assert mine["tokens_per_s_per_device"] == pytest.approx(mine["tokens_per_s"] / 2)
    assert mine["best"]["weft_flags"].startswith("--tp 1 --pp 2 ")


def test_deepseek_v3_from_its_config_and_the_jobs_flags(cli_json):
    job = json.loads((PRESETS / "deepseek-v3" / "job.json").read_text())
    mine = weft.plan(model=str(PRESETS / "deepseek-v3" / "config.json"),
                     cluster=str(PRESETS / "deepseek-v3" / "cluster.json"), pp=16, dp=128, ep=64,
                     schedule="dualpipe", pipeline_layout=job["pipeline-layout"],
                     global_batch_size=15360, seq_length=4096, fp8="blockwise",
                     moe_token_dispatcher_type="flex", recompute="selective",
                     recompute_modules=["layernorm", "mla_up_proj", "moe_act"])
    assert mine["step_s"] > 0 and mine["devices"] == 2048
    preset = weft.plan(preset="deepseek-v3")
    assert preset["cluster"] == "deepseek-v3"
    mine["cluster"] = preset["cluster"]  # named as given: the file's path, the preset's name
    assert mine == preset
    assert preset == cli_json("plan", "--preset", "deepseek-v3")


def test_model_and_cluster_as_dicts_and_folders(tmp_path):
    model = json.loads(GPT2.read_text())
    cluster = {"peak_flops": 989e12, "matmul_efficiency": 0.8, "hbm_bytes": 80e9,
               "hbm_bytes_per_s": 3.35e12, "devices_per_node": 8,
               "intra_node": {"latency_us": 2, "bytes_per_s": 450e9},
               "inter_node": {"latency_us": 10, "bytes_per_s": 50e9}}
    a = weft.plan(model=model, cluster=cluster, pp=2, global_batch_size=8, seq_length=1024)
    (tmp_path / "config.json").write_text(json.dumps(model))
    b = weft.plan(model=str(tmp_path), cluster=cluster, job={"pp": 2, "global-batch-size": 8},
                  seq_length=1024)
    c = weft.plan(model=tmp_path, cluster=cluster, pp=2, global_batch_size=8, seq_length=1024)
    assert a == b == c and a["cluster"] == "cluster"


def test_a_refusal_is_the_tools_line(cli):
    code, _, err = cli("plan", "--model", GPT2, "--cluster", "a100-80g", "--tp", 5)
    with pytest.raises(weft.ConfigError) as caught:
        weft.plan(model=str(GPT2), cluster="a100-80g", tp=5)
    assert code == 2 and str(caught.value) == err.splitlines()[0]


def test_a_keyword_replaces_a_base_key_spelt_as_megatron_does():
    # A base keyed with Megatron's argument names (underscores): the keyword replaces it.
    mine = weft.plan(model=str(GPT2), cluster="a100-80g",
                     job={"tensor_model_parallel_size": 2, "micro_batch_size": 1}, tp=1,
                     micro_batch_size=2)
    tool = weft.plan(model=str(GPT2), cluster="a100-80g", tp=1, micro_batch_size=2)
    assert mine == tool


def test_bad_input_is_a_config_error():
    with pytest.raises(weft.ConfigError,
                       match=r"plan: tpp is not a job setting weft reads \(did you mean tp\?\)"):
        weft.plan(model=str(GPT2), cluster="a100-80g", tpp=2)
    long_name = "a_setting_whose_name_runs_on_" + "and_on_" * 12
    with pytest.raises(weft.ConfigError, match="plan: " + long_name[:20].replace("_", "-")):
        weft.plan(model=str(GPT2), cluster="a100-80g", **{long_name: 1})
    with pytest.raises(weft.ConfigError, match="plan: tp must be a whole number in"):
        weft.plan(model=str(GPT2), cluster="a100-80g", tp=2.5)
    with pytest.raises(weft.ConfigError, match="tp must be a whole number"):
        weft.plan(model=str(GPT2), cluster="a100-80g", tp=["2"])
    with pytest.raises(weft.ConfigError, match="tp takes a number, a string, True/False or a list"):
        weft.plan(model=str(GPT2), cluster="a100-80g", tp={"2": 2})


def test_a_keyword_replaces_the_presets_setting_under_either_name():
    preset = weft.plan(preset="deepseek-v3")
    eight = weft.plan(preset="deepseek-v3", pipeline_model_parallel_size=8,
                      pipeline_layout="Et*7|(t*8|)*6,t*6mL")
    assert eight["devices"] == preset["devices"] // 2
    # Another recomputation policy drops the preset's modules, which only selective takes.
    full = weft.plan(preset="deepseek-v3", recompute="full")
    assert full["memory_per_stage_bytes"][1] < preset["memory_per_stage_bytes"][1]


def test_a_preset_of_another_command_is_named_so():
    """llama3-405b is tp2d's scenario (tp 16 as 8 x 2): no 1D plan splits its 8 key/value heads."""
    with pytest.raises(weft.ConfigError, match="run it with weft tp2d --preset llama3-405b"):
        weft.plan(preset="llama3-405b")


def test_megatron_modules_recomputed(cli_json):
    mine = weft.plan(model=str(GPT2), cluster="a100-80g", recompute="selective",
                     recompute_modules=["core_attn", "layernorm"])
    tool = cli_json("plan", "--model", GPT2, "--cluster", "a100-80g", "--recompute", "selective",
                    "--recompute-modules", "core_attn", "layernorm")
    assert mine == tool
    core = weft.plan(model=str(GPT2), cluster="a100-80g", recompute="selective")
    assert mine["memory_per_stage_bytes"][0] < core["memory_per_stage_bytes"][0]
    with pytest.raises(weft.ConfigError, match="weft does not price recomputing 'moe'"):
        weft.plan(model=str(GPT2), cluster="a100-80g", recompute="selective",
                  recompute_modules=["moe"])
    with pytest.raises(weft.ConfigError, match="give cluster="):
        weft.plan(model=str(GPT2))
    with pytest.raises(weft.ConfigError, match="no preset 'gpt-7'"):
        weft.plan(preset="gpt-7")
    with pytest.raises(weft.ConfigError, match="a preset is its model, job and cluster"):
        weft.plan(preset="deepseek-v3", model=str(GPT2))
    with pytest.raises(weft.ConfigError, match="cannot read"):
        weft.plan(model="/no/such/config.json", cluster="a100-80g")
    with pytest.raises(weft.ConfigError, match="model is a path or a dict"):
        weft.plan(model=3, cluster="a100-80g")
    with pytest.raises(weft.ConfigError, match="search_budget_s must be in"):
        weft.plan(model=str(GPT2), cluster="a100-80g", search_budget_s=-1)


def test_an_unused_config_key_is_a_warning():
    model = json.loads(GPT2.read_text())
    model["colour"] = "blue"
    with pytest.warns(UserWarning, match="key 'colour' is not used"):
        weft.plan(model=model, cluster="a100-80g")


def test_a_plan_leaves_the_interpreter_to_other_threads():
    from test_simulate_search import ticks_while

    result = {}

    def plan():  # with the schedule search for a second on the best plan
        result["plan"] = weft.plan(model=str(GPT2), cluster="a100-80g", pp=4,
                                   global_batch_size=64, seq_length=1024, search_budget_s=1.0)

    elapsed, rate, alone = ticks_while(plan)
    assert elapsed >= 0.2 and rate > 0.1 * alone
    assert result["plan"]["search"]["plans_judged"] > 0


def test_the_search_is_pytorchs():
    r = weft.plan(model=str(GPT2), cluster="a100-80g", pp=2, global_batch_size=8,
                  seq_length=1024, pipeline_runtime="megatron", search_budget_s=0.1)
    assert "runs only its own 1F1B and interleaved" in r["search"]["refused"]


def test_torchtitans_toml_job_and_the_world_size(cli_json, cli):
    """job= torchtitan's TOML file, devices= its -1 shard degree's devices: the tool's plan."""
    toml = DATA / "torchtitan" / "pipelined.toml"
    model = DATA / "hf" / "llama-3.1-405b.json"
    mine = weft.plan(model=str(model), cluster="h100-sxm", job=str(toml), devices=512)
    assert mine == cli_json("plan", "--model", model, "--cluster", "h100-sxm", "--job", toml,
                            "--devices", 512)
    with pytest.raises(weft.ConfigError, match="read whole"):
        weft.plan(model=str(model), cluster="h100-sxm", job=str(toml), devices=512, tp=4)
    code, _, err = cli("plan", "--model", model, "--cluster", "h100-sxm", "--job", toml)
    with pytest.raises(weft.ConfigError) as caught:
        weft.plan(model=str(model), cluster="h100-sxm", job=str(toml))
    assert code == 2 and str(caught.value) == err.splitlines()[0]
    # devices= beside a job's sizes: Megatron's world size, dp what tp x pp x cp leave.
    mine = weft.plan(model=str(GPT2), cluster="a100-80g", pp=2, devices=8, global_batch_size=16,
                     seq_length=1024)
    assert mine["devices"] == 8
    assert mine == cli_json("plan", "--model", GPT2, "--cluster", "a100-80g", "--pp", 2,
                            "--devices", 8, "--global-batch-size", 16, "--seq-length", 1024)
    with pytest.raises(weft.ConfigError, match="does not split into tp 1 x pp 2"):
        weft.plan(model=str(GPT2), cluster="a100-80g", pp=2, devices=7)


def test_megatrons_spellings_price_as_weft_s(cli_json):
    """Megatron's --attention-backend unfused is --no-flash-attention; its --fp16 keeps the
    gradients in 16 bits (--grad-reduce-in-bf16) unless told to accumulate them in fp32, and
    its loss scaler unscales them before the optimizer's step: 8 bytes a parameter more."""
    base = ("plan", "--model", GPT2, "--cluster", "a100-80g", "--dp", 2, "--seq-length", 1024)
    plain = cli_json(*base)
    unfused = cli_json(*base, "--attention-backend", "unfused")
    assert unfused == cli_json(*base, "--no-flash-attention") and unfused != plain
    # On an A100 every library runs FlashAttention-2: the same prices, its name in the flags.
    flash = cli_json(*base, "--attention-backend", "flash")
    assert flash["step_s"] == plain["step_s"] and flash["breakdown_per_rank"] == plain[
        "breakdown_per_rank"]
    assert "--attention-backend flash" in flash["best"]["megatron_arguments"]
    whole = (*base, "--no-distributed-optimizer")  # every parameter's step on each device
    fp16 = cli_json(*whole, "--fp16")
    half = cli_json(*whole, "--grad-reduce-in-bf16")
    wide = cli_json(*whole, "--fp16", "--accumulate-allreduce-grads-in-fp32")
    fp32 = cli_json(*whole)
    # The same work and collectives as bf16 with gradients of the same width ...
    for k in ("pipeline_s", "grad_sync_s", "memory_per_stage_bytes"):
        assert fp16[k] == half[k] and wide[k] == fp32[k]
    # ... and an optimizer step longer by the scaler's 8 bytes: 54 against 46, 50 against 42.
    assert fp16["optimizer_s"] == pytest.approx(half["optimizer_s"] * 54 / 46)
    assert wide["optimizer_s"] == pytest.approx(fp32["optimizer_s"] * 50 / 42)
    # Megatron reads --grad-reduce-in-bf16 under bf16 only: fp16 keeps its own rule.
    assert cli_json(*whole, "--fp16", "--accumulate-allreduce-grads-in-fp32",
                    "--grad-reduce-in-bf16") == wide
    assert "--fp16" in fp16["best"]["megatron_arguments"]
    assert "--bf16" not in fp16["best"]["megatron_arguments"]


def test_tp_comm_overlap_is_the_tools(cli_json):
    """Megatron's --tp-comm-overlap as a keyword, priced as the tool prices it: the tensor-parallel
    collectives beside the GEMMs leave less of the step to them; without sequence parallelism it
    is Megatron's refusal."""
    base = ("plan", "--model", GPT2, "--cluster", "a100-80g", "--tp", 2, "--sequence-parallel")
    overlapped = weft.plan(model=GPT2, cluster="a100-80g", tp=2, sequence_parallel=True,
                           tp_comm_overlap=True)
    assert overlapped == cli_json(*base, "--tp-comm-overlap")
    assert overlapped["step_s"] < cli_json(*base)["step_s"]
    with pytest.raises(weft.ConfigError, match="needs --tp above 1 and --sequence-parallel"):
        weft.plan(model=GPT2, cluster="a100-80g", tp=2, tp_comm_overlap=True)


def test_eager_and_unfused_accumulation_are_the_tools(cli_json):
    """--eager, --eager-loss and --no-gradient-accumulation-fusion as keywords, priced as the
    tool prices them: PyTorch's eager norms, its loss over whole fp32 logits and a separate pass
    adding each micro-batch's gradients make the step longer; the eager job is not Megatron's
    to run."""
    llama = PRESETS / "models" / "llama-3-8b.json"
    base = ("plan", "--model", llama, "--cluster", "h100-sxm", "--pp", 2, "--seq-length", 4096,
            "--global-batch-size", 16)
    plain = cli_json(*base)
    eager = weft.plan(model=llama, cluster="h100-sxm", pp=2, seq_length=4096,
                      global_batch_size=16, eager=True)
    assert eager == cli_json(*base, "--eager")
    assert eager["step_s"] > plain["step_s"]
    apart = weft.plan(model=llama, cluster="h100-sxm", pp=2, seq_length=4096,
                      global_batch_size=16, no_gradient_accumulation_fusion=True)
    assert apart == cli_json(*base, "--no-gradient-accumulation-fusion")
    assert apart["step_s"] > plain["step_s"]
    loss = weft.plan(model=llama, cluster="h100-sxm", pp=2, seq_length=4096,
                     global_batch_size=16, eager_loss=True)
    assert loss == cli_json(*base, "--eager-loss")
    assert loss["step_s"] > plain["step_s"]
    norm_fused = weft.plan(model=llama, cluster="h100-sxm", pp=2, seq_length=4096,
                           global_batch_size=16, eager=True, fused_rms_norm=True)
    assert norm_fused == cli_json(*base, "--eager", "--fused-rms-norm")
    assert plain["step_s"] < norm_fused["step_s"] < eager["step_s"]


LLAMA_8B = PRESETS / "models" / "llama-3-8b.json"
# Llama 3 8B on 8 data-parallel H100s, 16 sequences of 4096: as the tool's flags, and the same
# as keywords.
DP8 = ("plan", "--model", LLAMA_8B, "--cluster", "h100-sxm", "--dp", 8, "--seq-length", 4096,
       "--global-batch-size", 16)
DP8_KEYWORDS = dict(model=LLAMA_8B, cluster="h100-sxm", dp=8, seq_length=4096,
                    global_batch_size=16)


def test_scaling_zero1_all_reduce(cli_json):
    """--grad-all-reduce-fp32 as a keyword: Scaling's ZeRO-1 all-reduces whole fp32 gradients
    where Megatron's distributed optimizer reduce-scatters, a longer gradient sync; it needs the
    optimizer's sharding."""
    llama, base = LLAMA_8B, DP8
    plain = cli_json(*base)
    scaling = weft.plan(**DP8_KEYWORDS, grad_all_reduce_fp32=True)
    assert scaling == cli_json(*base, "--grad-all-reduce-fp32")
    assert scaling["step_s"] > plain["step_s"]
    with pytest.raises(weft.ConfigError, match="needs the distributed optimizer's sharding"):
        weft.plan(model=llama, cluster="h100-sxm", dp=8, grad_all_reduce_fp32=True,
                  no_distributed_optimizer=True)
    with pytest.raises(weft.ConfigError, match="whose pipeline engine runs 1F1B"):
        weft.plan(model=llama, cluster="h100-sxm", pp=2, dp=4, global_batch_size=16,
                  grad_all_reduce_fp32=True, schedule="zb-h1")


def test_deepspeed_bf16_optimizer(cli_json):
    """--deepspeed-bf16-optimizer as a keyword: DeepSpeed's BF16_Optimizer keeps each
    parameter's 16-bit gradient beside its fp32 one, 2 bytes a parameter more than Megatron's
    distributed optimizer holds; it trains in bf16."""
    plain = cli_json(*DP8)
    deepspeed = weft.plan(**DP8_KEYWORDS, deepspeed_bf16_optimizer=True)
    assert deepspeed == cli_json(*DP8, "--deepspeed-bf16-optimizer")
    params = deepspeed["parameters"]
    grew = deepspeed["memory_per_stage_bytes"][0] - plain["memory_per_stage_bytes"][0]
    assert grew == pytest.approx(2 * params, rel=1e-6)
    with pytest.raises(weft.ConfigError, match="it trains in bf16: drop --fp16"):
        weft.plan(model=LLAMA_8B, cluster="h100-sxm", dp=8, deepspeed_bf16_optimizer=True,
                  fp16=True)


def _without_time(found):
    """A search's dict less the seconds it took, which no two runs share."""
    return {k: v for k, v in found.items() if k != "seconds"}


def test_choose_is_the_tools_search(cli_json):
    """weft.choose: the dict `weft plan --search --json` prints, for the same job and devices;
    a size given as a keyword, under weft's name or Megatron's, is kept."""
    mine = weft.choose(model=GPT2, cluster="a100-80g", devices=8, budget_s=600, tp=2,
                       global_batch_size=64, seq_length=1024)
    tool = cli_json("plan", "--model", GPT2, "--cluster", "a100-80g", "--devices", 8, "--tp", 2,
                    "--global-batch-size", 64, "--seq-length", 1024, "--search", 600)
    assert _without_time(mine) == _without_time(tool)
    assert mine["complete"] and len(mine["top"]) == 5
    assert all(x["tp"] == 2 for x in mine["top"])
    megatron = weft.choose(model=GPT2, cluster="a100-80g", devices=8, budget_s=600,
                           tensor_model_parallel_size=2, global_batch_size=64, seq_length=1024)
    assert _without_time(megatron) == _without_time(mine)
    # A job file's sizes only count the devices: tp 2 there is the search's to change.
    free = weft.choose(model=GPT2, cluster="a100-80g", budget_s=600,
                       job={"tp": 2, "dp": 4, "global-batch-size": 64, "seq-length": 1024})
    assert free["devices"] == 8
    assert any(x["tp"] != 2 for x in free["top"])
    assert free["top"][0]["step_s"] <= mine["top"][0]["step_s"]


def test_choose_keeps_to_a_runtime_and_a_recompute_method():
    only = weft.choose(model=GPT2, cluster="a100-80g", devices=8, budget_s=600, pp=2,
                       global_batch_size=64, seq_length=1024, runtime="megatron", top=3)
    assert only["top"] and all(x["runtime"].startswith("Megatron-LM") for x in only["top"])
    uniform = weft.choose(model=GPT2, cluster="a100-80g", devices=8, budget_s=600,
                          global_batch_size=64, seq_length=1024, recompute="full",
                          recompute_method="uniform", recompute_num_layers=1, top=3)
    assert uniform["top"] and all(x["recompute"] == "full" and x["recompute_num_layers"] is None
                                  for x in uniform["top"])


def test_choose_refuses_what_it_cannot_search():
    with pytest.raises(weft.ConfigError, match="runtime must be any, megatron or torchtitan"):
        weft.choose(model=GPT2, cluster="a100-80g", runtime="deepspeed")
    with pytest.raises(weft.ConfigError, match="budget must be more than 0 s"):
        weft.choose(model=GPT2, cluster="a100-80g", budget_s=0)
    with pytest.raises(weft.ConfigError, match="over --devices needs the job's --global-batch"):
        weft.choose(model=GPT2, cluster="a100-80g", devices=8)
    with pytest.raises(weft.ConfigError, match="no configuration of 8 devices splits the model"):
        weft.choose(model=GPT2, cluster="a100-80g", devices=8, global_batch_size=8, tp=5)
    with pytest.raises(weft.ConfigError, match="devices must be a whole number"):
        weft.choose(model=GPT2, cluster="a100-80g", devices=-1)


def test_attention_library_and_per_op_checkpointing_as_keywords(cli_json):
    """attention_backend= names the library whose rates price attention (PyTorch's
    FlashAttention-2 is slower than Transformer Engine's cuDNN kernel on an H100);
    recompute_ops= is torchtitan's per-op checkpointing, as the flags say."""
    llama = GPT2.parent / "llama-3.1-8b.json"
    base = ("plan", "--model", GPT2, "--cluster", "h100-sxm", "--seq-length", 4096)
    sdpa = weft.plan(model=str(GPT2), cluster="h100-sxm", seq_length=4096,
                     attention_backend="sdpa")
    assert sdpa == cli_json(*base, "--attention-backend", "sdpa")
    assert sdpa["step_s"] > cli_json(*base)["step_s"]
    ops = weft.plan(model=str(llama), cluster="h100-sxm", devices=8, seq_length=8192,
                    recompute="selective", recompute_ops=True)
    assert ops == cli_json("plan", "--model", llama, "--cluster", "h100-sxm", "--devices", 8,
                           "--seq-length", 8192, "--recompute", "selective", "--recompute-ops")
    # A new policy over a job that checkpoints per op replaces its per-op form.
    over = weft.plan(model=str(llama), cluster="h100-sxm", devices=8, seq_length=8192,
                     job={"recompute": "selective", "recompute-ops": True}, recompute="full")
    assert over == cli_json("plan", "--model", llama, "--cluster", "h100-sxm", "--devices", 8,
                            "--seq-length", 8192, "--recompute", "full")
    with pytest.raises(weft.ConfigError, match="not this model's MLP"):
        weft.plan(model=str(GPT2), cluster="h100-sxm", recompute="selective", recompute_ops=True)
