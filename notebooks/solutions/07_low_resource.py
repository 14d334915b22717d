# Solutions to the exercises of 07_low_resource.ipynb, one section per exercise.

# %% exercise: 07.nested_subsets
def nested_subsets(n, sizes, seed):
    order = np.random.default_rng(seed).permutation(n)  # one permutation; every size takes a prefix of it
    return {size: order[:size] for size in sizes}

# %% exercise: 07.better_beyond_noise
def sizes_better(df, method):
    better = []
    for size, g in df.groupby("train_size"):
        a, b = g[g["method"] == method]["value"], g[g["method"] == "full"]["value"]
        se = np.sqrt(a.var(ddof=1) / len(a) + b.var(ddof=1) / len(b))
        if a.mean() - b.mean() > 2 * se:
            better.append(int(size))
    return better
