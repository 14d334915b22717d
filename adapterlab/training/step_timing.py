"""Timing runs: a method's seconds per training step and its peak training memory, measured on a short run made
for that purpose alone (no evaluation, no test, nothing saved).

    record = step_timing.time_steps(config, steps=30, warmup=5)              # here, in this process
    record = step_timing.in_fresh_process(config, steps=30, warmup=5, threads=2)   # what a timing unit runs

A training run's own seconds and memory are by-products of a long run: its seconds include whatever else the
machine did over minutes, and on a CPU its peak memory is the resident memory (RSS) of a worker process that may
have trained other runs before (the allocator keeps what it once took). A timing run steps exactly as a training
run does (train.train_step, on the batches a run of its seed starts with) for a few steps, and

  - leaves out the first `warmup` steps from its time per step: they pay for allocating the optimiser's state,
    growing the allocator's pools and picking kernels, which an epoch pays once, not per step;
  - measures its peak memory the way train.PeakMemory does (CUDA's peak allocated, reset at the start, on a GPU;
    the process RSS, sampled every 20 ms, on a CPU), in a process started for it (in_fresh_process), so every
    run's RSS starts from the same imported libraries and nothing else;
  - gives seconds per epoch as its mean seconds per step after warm-up times the steps of one epoch of the
    task's training set. The mean, not the median: an epoch's time is the sum of its steps, and steps differ
    with the padded length of their length-bucketed batches; the timed batches are a random sample of them.
"""
import math
import os
import statistics
import time
from concurrent.futures import ProcessPoolExecutor
from multiprocessing import get_context

import torch

from . import tasks as task_registry
from ..methods.params import count_parameters
from .train import PeakMemory, RunConfig, build, optimizer_for, pick_device, train_step


def memory_kind(device):
    """What peak_memory_mb measures on `device`: the words a reading names it by."""
    return "CUDA peak allocated" if torch.device(device).type == "cuda" else "process RSS"


def time_steps(config: RunConfig, steps, warmup, device="auto", glue_dir=None):
    """`steps` training steps of `config` (its method, task, batch size and seed; its schedule's length is these
    steps), timed one by one. The record: step_seconds (every step), warmup_steps, seconds_per_step (mean after
    warm-up), steps_per_epoch (of the task's training set at the config's train_size), seconds_per_epoch
    (seconds_per_step x steps_per_epoch), peak_memory_mb and memory (memory_kind), device, trainable, config."""
    if not 0 <= warmup < steps:
        raise ValueError(f"a timing run needs more steps ({steps}) than warm-up steps ({warmup}); "
                         "raise timing_steps or lower the warm-up")
    device = pick_device(device)
    model, tokenizer, task = build(config, glue_dir=glue_dir)
    model.to(device)
    text_to_text = bool(getattr(model.config, "is_encoder_decoder", False))
    encoded = task_registry.encode(task, tokenizer, max_length=config.max_length, text_to_text=text_to_text)
    cfg = config.train
    trainable, optimizer, schedule, scaler = optimizer_for(model, cfg, steps, device)
    seconds, epoch = [], 0
    with PeakMemory(device) as memory:
        while len(seconds) < steps:
            for batch in task_registry.batches(encoded["train"], tokenizer, cfg.batch_size, shuffle=True,
                                               seed=cfg.seed * 100_003 + epoch):  # the batches train.train takes
                start = time.perf_counter()
                train_step(model, batch, trainable, optimizer, schedule, scaler, cfg, device)
                seconds.append(time.perf_counter() - start)
                if len(seconds) == steps:
                    break
            epoch += 1
    per_epoch = math.ceil(len(encoded["train"]) / cfg.batch_size)
    per_step = statistics.fmean(seconds[warmup:])
    return {"method": config.method, "task": config.task, "backbone": config.backbone,
            "trainable": count_parameters(model).trainable, "step_seconds": seconds, "warmup_steps": warmup,
            "seconds_per_step": per_step, "steps_per_epoch": per_epoch, "seconds_per_epoch": per_step * per_epoch,
            "train_examples": len(encoded["train"]), "peak_memory_mb": memory.peak_mb,
            "memory": memory_kind(device), "device": str(device), "config": config.to_dict()}


def _in_child(config, steps, warmup, threads, device, glue_dir):
    """The fresh process's work: the caller's threads, then time_steps of the config (RunConfig.to_spec's
    form: a study's task and model with where they lie)."""
    torch.set_num_threads(threads)
    return {**time_steps(RunConfig.from_dict(config), steps, warmup, device, glue_dir), "pid": os.getpid()}


def in_fresh_process(config: RunConfig, steps, warmup, threads=None, device="auto", glue_dir=None):
    """time_steps in a process started for this one run (spawned, so it inherits no memory of its caller's),
    with the caller's CPU threads (`threads`, None: torch's count here). The config goes with where a study's
    task and model lie (RunConfig.to_spec), all the process needs. Its record adds the process's id (pid)."""
    threads = threads or torch.get_num_threads()
    with ProcessPoolExecutor(1, mp_context=get_context("spawn")) as pool:
        return pool.submit(_in_child, config.to_spec(), steps, warmup, threads, device, glue_dir).result()
