"""weft: pipeline schedules for distributed training proven legal, simulated and planned."""

import os
from typing import Any, Optional, Union

__version__: str

PathLike = Union[str, "os.PathLike[str]"]
JSON = dict[str, Any]

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
    def simulate(
        self,
        *,
        F: float = 1.0,
        B: float = 2.0,
        W: float = 1.0,
        FB: Optional[float] = None,
        P2P: float = 0.0,
        A2A: float = 0.0,
        contention: bool = False,
    ) -> JSON: ...
    def svg(
        self,
        path: PathLike,
        *,
        F: float = 1.0,
        B: float = 2.0,
        W: float = 1.0,
        FB: Optional[float] = None,
        P2P: float = 0.0,
        A2A: float = 0.0,
        contention: bool = False,
    ) -> None: ...
    def trace(
        self,
        path: PathLike,
        *,
        F: float = 1.0,
        B: float = 2.0,
        W: float = 1.0,
        FB: Optional[float] = None,
        P2P: float = 0.0,
        A2A: float = 0.0,
        contention: bool = False,
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
    schedule: Schedule,
    *,
    F: float = 1.0,
    B: float = 2.0,
    W: float = 1.0,
    FB: Optional[float] = None,
    P2P: float = 0.0,
    A2A: float = 0.0,
    contention: bool = False,
) -> JSON: ...
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
    F: float = 1.0,
    B: float = 2.0,
    W: float = 1.0,
    FB: Optional[float] = None,
    P2P: float = 0.0,
    A2A: float = 0.0,
    contention: bool = False,
) -> JSON:
    """{'schedule': Schedule, 'makespan', 'bound': {...}, 'optimal', 'generators',
    'evaluations', 'seconds', 'rate', 'found_by', 'best_generator_makespan'}"""

def plan(
    *,
    model: Union[PathLike, JSON, None] = None,
    cluster: Union[PathLike, JSON, None] = None,
    job: Union[PathLike, JSON, None] = None,
    preset: Optional[str] = None,
    search_budget_s: float = 0.0,
    evaluations: int = 0,
    seed: int = 1,
    **settings: Any,
) -> JSON:
    """The dict `weft plan --json` prints: step_s, tokens_per_s, mfu, memory_per_stage_bytes,
    breakdown_per_rank, schedules, best, ..."""
