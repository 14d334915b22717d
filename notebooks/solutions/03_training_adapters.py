# Solutions to the exercises of 03_training_adapters.ipynb, one section per exercise.

# %% exercise: 03.choose_trainable
def choose_trainable(model):
    # Houlsby: the adapters, every LayerNorm and the new classification head train; the rest is frozen
    for name, p in model.named_parameters():
        p.requires_grad_(".adapter." in name or "LayerNorm" in name or name.startswith("classifier"))

# %% exercise: 03.train_step
def train_step(model, batch, optimizer):
    # the optimizer only holds the trainable parameters, and frozen ones get no gradient
    loss = model(**batch).loss
    loss.backward()
    optimizer.step()
    optimizer.zero_grad()
    return loss
