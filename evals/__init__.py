"""evals: the evaluation harness (golden corpus, qrels, runner, metrics, statistics, reports)."""
