# Solutions to the exercises of 07_low_resource.ipynb, one section per exercise.

# %% exercise: 07.nested_subsets
def nested_subsets(n, sizes, seed):
    order = np.random.default_rng(seed).permutation(n)  # one permutation; every size takes a prefix of it
    return {size: order[:size] for size in sizes}

# %% exercise: 07.better_beyond_noise
def sizes_better(df, method):
    # runs of the same seed train on the same subset in the same order, so pair them: the noise they share
    # cancels in each seed's difference. Beyond the noise: the 95% t interval of those differences
    # (n - 1 degrees of freedom) lies above zero.
    from scipy import stats

    better = []
    for size, g in df.groupby("train_size"):
        by_seed = g.pivot_table(index="seed", columns="method", values="value")
        d = (by_seed[method] - by_seed["full"]).dropna()
        half_width = stats.t.ppf(0.975, len(d) - 1) * d.std(ddof=1) / np.sqrt(len(d))
        if d.mean() - half_width > 0:
            better.append(int(size))
    return better
