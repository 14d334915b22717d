# Solutions to the exercises of 05_init_scale.ipynb, one section per exercise.

# %% exercise: 05.relative_change
def relative_change(adapter, h):
    with torch.no_grad():
        return ((adapter(h) - h).norm() / h.norm()).item()

# %% exercise: 05.deviation_exponent
# the added term is up(gelu(down(h))); for small weights gelu(x) ~ x / 2, so it is ~ W_up W_down h / 2: a product
# of two matrices that each scale with the std, hence std squared
exponent = 2

# %% exercise: 05.collapsed
def count_collapsed(df):
    # collapsed: ended less than 3 points above always answering the majority class (below it counts too)
    return int((df["value"] - df["baseline"] < 0.03).sum())
