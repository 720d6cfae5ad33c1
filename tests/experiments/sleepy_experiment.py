"""A slow, deterministic experiment for the runner's resume tests (registered via DPFAIR_EXPERIMENT_MODULES)."""

import os
import time

from dpfair.experiments import ExperimentSpec, register, task_rng


def sleepy_task(cell, seed):
    # DPFAIR_TEST_SLEEPY_SLEEP stretches the tasks of a run a test kills, so the kill lands mid-run on a busy machine
    time.sleep(float(os.environ.get("DPFAIR_TEST_SLEEPY_SLEEP", cell["sleep"])))
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

def long_task(cell, seed):
    # DPFAIR_TEST_SLEEP overrides the cell's sleep: long tasks while a test interrupts, short ones to finish
    time.sleep(float(os.environ.get("DPFAIR_TEST_SLEEP", cell["sleep"])))
    return sleepy_task({**cell, "sleep": 0.0}, seed)


LONG = register(
    ExperimentSpec(
        id="sleepy-long",
        title="test fixture: tasks long enough to be in progress when Ctrl-C arrives",
        reproduces="nothing",
        dataset="synthetic",
        algorithms=("none",),
        grid={"x": tuple(range(14)), "sleep": (1.2,)},
        seeds=(0,),
        metrics=("value", "square"),
        task=long_task,
    )
)
