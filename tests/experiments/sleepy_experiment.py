"""A slow, deterministic experiment for the runner's resume tests (registered via DPFAIR_EXPERIMENT_MODULES)."""

import time

from dpfair.experiments import ExperimentSpec, register, task_rng


def sleepy_task(cell, seed):
    time.sleep(cell["sleep"])
    rng = task_rng("sleepy", cell, seed)
    return {"value": float(rng.uniform()), "square": float(cell["x"] ** 2 + seed)}


SPEC = register(
    ExperimentSpec(
        id="sleepy",
        title="test fixture",
        reproduces="nothing",
        dataset="synthetic",
        algorithms=("none",),
        grid={"x": tuple(range(6)), "sleep": (0.15,)},
        seeds=(0, 1, 2, 3),
        quick_grid={"x": (0, 1), "sleep": (0.0,)},
        quick_seeds=(0,),
        metrics=("value", "square"),
        task=sleepy_task,
    )
)
