# Solutions to the exercises of 01_bottleneck_adapter.ipynb, one section per exercise.
# `python -m adapterlab.course.exercises --out build/course` puts them into the solution notebooks.

# %% exercise: 01.adapter_forward
def adapter_forward(h, W_down, b_down, W_up, b_up):
    # down-project, nonlinearity, up-project, and add the input back (the skip connection)
    return h + F.gelu(h @ W_down + b_down) @ W_up + b_up

# %% exercise: 01.identity_init
def init_adapter(d, m):
    # the added term vanishes when the up-projection is zero; the down-projection stays random so
    # that the up-projection's gradient (which is the down-projected activation) is not zero
    return torch.randn(d, m) * 1e-2, torch.zeros(m), torch.zeros(m, d), torch.zeros(d)

# %% exercise: 01.houlsby_count
def count_houlsby(d, L, m):
    # two adapters per layer, each 2md weights + m + d biases
    return 2 * L * (2 * m * d + d + m)
