"""weft: pipeline schedules for distributed training proven legal, simulated and planned."""

import os
from typing import Any, Optional, Union

__version__: str

PathLike = Union[str, "os.PathLike[str]"]
JSON = dict[str, Any]
Costs = dict[str, float]  # F, B, W, FB, P2P, A2A: a rank's share of the model, schedule units

class ConfigError(ValueError):
    """Bad input: the message says what is wrong and what to change (as the weft tool)."""

class IllegalScheduleError(ConfigError):
    """A schedule breaks a rule of the checker (lowering, or a simulation that deadlocks)."""

class RunError(RuntimeError): ...
class InternalError(RuntimeError): ...

class Schedule:
    """A pipeline schedule: per rank, its steps in order."""

    @property
    def name(self) -> str: ...
    @property
    def ranks(self) -> int: ...
    @property
    def micro(self) -> int: ...
    @property
    def chunks_per_rank(self) -> int: ...
    @property
    def placement(self) -> str:
        """'loop' (stage s on rank s % ranks) or 'vee' (rank r holds r and 2 ranks - 1 - r)."""
    @property
    def has_comms(self) -> bool: ...
    @property
    def actions(self) -> list[list[str]]:
        """Per rank, its actions in PyTorch's notation: '0F3', '1B2', '0SEND_F3',
        '(0F7;7B3)OVERLAP_F_B'; '' an idle step."""
    def to_csv(self, comms: Optional[bool] = None) -> str:
        """PyTorch's schedule CSV: None as the schedule is, True with SEND/RECV actions,
        False compute only."""
    def save(self, path: PathLike, comms: Optional[bool] = None) -> None: ...
    def verify(self, max_live: Optional[int] = None, memory: Optional[JSON] = None) -> JSON: ...
    def simulate(self, *, costs: Optional[Costs] = None, contention: bool = False) -> JSON: ...
    def svg(
        self, path: PathLike, *, costs: Optional[Costs] = None, contention: bool = False
    ) -> None: ...
    def trace(
        self, path: PathLike, *, costs: Optional[Costs] = None, contention: bool = False
    ) -> None: ...
    def __eq__(self, other: object) -> bool: ...

def generators() -> list[tuple[str, str]]:
    """Every generator's name and one line on it."""

def generate(
    name: str,
    *,
    pp: int,
    micro: int,
    chunks: Optional[int] = None,
    layers: int = 1,
    fb_overlap: bool = False,
    moe: bool = False,
    comms: bool = False,
    p2p: Optional[str] = None,
    nanopipe: bool = False,
) -> Schedule: ...
def load_csv(source: PathLike) -> Schedule:
    """A PyTorch schedule CSV: a path, or the CSV's text."""

def from_actions(rows: list[list[str]]) -> Schedule: ...
def verify(
    schedule: Schedule, *, max_live: Optional[int] = None, memory: Optional[JSON] = None
) -> JSON:
    """{'legal', 'violations': [{'rule', 'rule_name', 'fault', 'rank', 'slot', 'op', 'other',
    'other_rank', 'other_slot', 'message'}], 'more_violations', 'blocked',
    'pytorch_simulator_stalls', 'note', 'peak_live_per_rank', 'bytes_per_rank'}"""

def simulate(
    schedule: Schedule, *, costs: Optional[Costs] = None, contention: bool = False
) -> JSON:
    """The step in schedule units, as `weft simulate --json`; costs a rank's share of the
    model: {'F': 1, 'B': 2, 'W': 1, 'FB': ..., 'P2P': 0, 'A2A': 0}."""
def search(
    *,
    pp: int,
    micro: int,
    chunks: int = 1,
    placement: str = "loop",
    layers: int = 1,
    moe: bool = False,
    fb_overlap: bool = False,
    max_live: int = 0,
    budget_s: float = 1.0,
    evaluations: int = 0,
    seed: int = 1,
    costs: Optional[Costs] = None,
    contention: bool = False,
) -> JSON:
    """{'schedule': Schedule or None, 'makespan': float or None (None when nothing legal fits
    max_live), 'bound': {...}, 'optimal', 'generators', 'evaluations' (judged in full),
    'estimated' (estimated step by step first), 'seconds', 'rate' (judged a second),
    'found_by', 'best_generator_makespan'}"""

def plan(
    *,
    model: Union[PathLike, JSON, None] = None,
    cluster: Union[PathLike, JSON, None] = None,
    job: Union[PathLike, JSON, None] = None,
    preset: Optional[str] = None,
    search_budget_s: float = 0.0,
    evaluations: int = 0,
    seed: int = 1,
    devices: int = 0,
    **settings: Any,
) -> JSON:
    """The dict `weft plan --json` prints: step_s, tokens_per_s (and per device), mfu,
    memory_per_stage_bytes, breakdown_per_rank, schedules, best, ... job: a job file, its dict, or torchtitan's
    FILE.toml; devices: Megatron's world size (dp what tp x pp x cp leave)."""

def choose(
    *,
    model: Union[PathLike, JSON, None] = None,
    cluster: Union[PathLike, JSON, None] = None,
    job: Union[PathLike, JSON, None] = None,
    preset: Optional[str] = None,
    devices: int = 0,
    budget_s: float = 8.0,
    top: int = 5,
    runtime: str = "any",
    **settings: Any,
) -> JSON:
    """The dict `weft plan --search --json` prints: the `top` fastest configurations that fit
    (sizes, step_s, mfu, peak_memory_bytes, runtime, weft_flags, megatron_arguments), the
    counts, complete. Sizes given as keywords are kept; devices: the devices to split."""
