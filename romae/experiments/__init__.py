"""One module per paper experiment: build data and model, train, evaluate, record results."""
