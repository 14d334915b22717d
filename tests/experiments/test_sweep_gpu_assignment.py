"""`sweep --workers-per-gpu K`: which GPU each local worker gets (sweep.gpu_workers), with no GPU needed."""
import pytest

from adapterlab.__main__ import main
from adapterlab.experiments.sweep import gpu_workers


def test_one_worker_per_gpu_by_default():
    assert gpu_workers(1) == ["0"]
    assert gpu_workers(4) == ["0", "1", "2", "3"]


def test_k_workers_on_each_gpu_round_robin():
    assert gpu_workers(2, workers_per_gpu=3) == ["0", "1", "0", "1", "0", "1"]
    assert gpu_workers(1, workers_per_gpu=4) == ["0"] * 4
    for gpus, k in [(3, 2), (8, 4)]:
        devices = gpu_workers(gpus, k)
        assert len(devices) == gpus * k and all(devices.count(str(g)) == k for g in range(gpus))


def test_max_parallel_caps_the_workers_and_spreads_them_over_every_gpu_first():
    assert gpu_workers(2, workers_per_gpu=3, max_parallel=3) == ["0", "1", "0"]
    assert gpu_workers(4, workers_per_gpu=2, max_parallel=2) == ["0", "1"]
    assert gpu_workers(2, workers_per_gpu=2, max_parallel=99) == ["0", "1", "0", "1"]  # the cap is not a floor
    assert gpu_workers(2, max_parallel=1) == ["0"]  # as before K existed


def test_fewer_than_one_worker_per_gpu_is_refused(capsys):
    with pytest.raises(ValueError, match="--workers-per-gpu must be at least 1"):
        gpu_workers(2, workers_per_gpu=0)
    assert main(["sweep", "--workers-per-gpu", "0"]) == 2
    assert "--workers-per-gpu must be at least 1" in capsys.readouterr().err
    assert main(["sweep", "--workers-per-gpu", "2", "--executor", "ray"]) == 2
    assert "--workers-per-gpu is for --executor local" in capsys.readouterr().err
