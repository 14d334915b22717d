# Solutions to the exercises of 04_layer_removal.ipynb, one section per exercise.

# %% exercise: 04.block_evaluations
def count_block_evaluations(L):
    spans = L * (L + 1) // 2
    naive = L * (spans + 1)  # a full pass of L blocks per span, plus the model with nothing removed
    # cached: the L states entering each block once; then for start i and end j, block j (disabled) and the
    # L - 1 - j enabled blocks above it: sum over j >= i of (L - j) = (L - i)(L - i + 1) / 2
    cached = L + sum((L - i) * (L - i + 1) // 2 for i in range(L))
    return naive, cached

# %% exercise: 04.naive_spans
def removal_logits(model, inputs):
    L = len(inject.blocks(model)["encoder"])
    model.eval()  # no dropout: every span sees the same function
    logits = {}
    with torch.no_grad():
        for i in range(L):
            for j in range(i, L):
                with inject.adapters_disabled(model, layers=range(i, j + 1)):
                    logits[(i, j)] = model(**inputs).logits
    return logits
