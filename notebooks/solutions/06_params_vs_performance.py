# Solutions to the exercises of 06_params_vs_performance.ipynb, one section per exercise.

# %% exercise: 06.percent_trained
def percent_trained(model):
    # the base model: every parameter except the adapters' and the new head's (what al.count_parameters counts)
    groups = params.parameter_groups(model)
    base = sum(p.numel() for name, p in model.named_parameters() if groups[name] in ("backbone", "layernorm"))
    trainable = sum(p.numel() for p in model.parameters() if p.requires_grad)
    return 100 * trainable / base

# %% exercise: 06.smallest_within
def smallest_within(df, points):
    full = df[df["method"] == "full"]["value"].mean()
    by_label = df[df["method"] != "full"].groupby("label")
    means, trainable = by_label["value"].mean(), by_label["trainable"].first()
    close = trainable[means >= full - points / 100]
    return close.idxmin() if len(close) else None  # the fewest parameters among those close enough
