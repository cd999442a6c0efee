"""The runner: what no notebook imports. `make reproduce` (papermill, publishing, pages, the summary and front page),
the plan's tables, the promise, the benchmarks and the GPU check. Editing it never stales a result."""
